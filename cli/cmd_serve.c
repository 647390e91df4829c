/* cli/cmd_serve.c: `sentinel serve --detector D.gguf` (docs/agents.md "The server"): the
** runtime detector and Algorithm 1 over HTTP (serve/serve.h) until SIGTERM or SIGINT, which
** stop it gracefully: requests already taken are answered first. */
#include "cli/cli.h"
#include "serve/serve.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sentinel serve --detector D.gguf [--host ADDR] [--port N] [--workers N]\n"
        "                      [--threads N] [--api-key KEY] [limits...]\n"
        "\n"
        "Serves the runtime detector (a GGUF written by `sentinel export`) over HTTP until\n"
        "SIGTERM or SIGINT (a graceful stop: requests already taken are answered first):\n"
        "  GET  /health                 200 once the model is loaded (503 while loading)\n"
        "  GET  /v1/models              the model\n"
        "  POST /v1/score               {\"context\", \"responses\": [...]} -> {\"scores\"}\n"
        "  POST /v1/rerank              {\"query\", \"documents\", \"top_n\"} -> {\"results\":\n"
        "                               [{\"index\", \"relevance_score\"}]} (the raw reward)\n"
        "  POST /v1/debates             a debate session running Algorithm 1 -> {\"id\"}\n"
        "  POST /v1/debates/ID/rounds   one round's messages -> scores, exclusions, blacklists\n"
        "  GET|DELETE /v1/debates/ID    a session's state; its removal\n"
        "Bodies, replies, statuses and limits: docs/agents.md.\n"
        "\n"
        "options:\n"
        "  --detector FILE        the detector GGUF (required)\n"
        "  --host ADDR            IPv4 address to listen on (default 127.0.0.1: this machine\n"
        "                         only; 0.0.0.0 for every interface)\n"
        "  --port N               port (default 8090; 0 = any free one, printed at start)\n"
        "  --workers N            scoring threads, one detector each (default 1)\n"
        "  --threads N            OpenBLAS threads per worker (default 1)\n"
        "  --api-key KEY          require \"Authorization: Bearer KEY\" (or \"X-API-Key\")\n"
        "                         except on /health; default: $SENTINEL_API_KEY if set.\n"
        "                         Never logged\n"
        "  --queue N              requests waiting for a worker before 503 (default 4 x workers)\n"
        "  --queue-wait S         a request waiting longer gets 503 (default 30)\n"
        "  --max-body BYTES       request body limit, 413 beyond (default 1048576)\n"
        "  --max-request-tokens N tokens of all texts of one request, 413 beyond (default 65536)\n"
        "  --max-items N          responses/documents/pairs/messages per request (default 64)\n"
        "  --max-connections N    open connections (default 64)\n"
        "  --timeout S            an idle or stalled connection is closed after S (default 30)\n"
        "  --max-sessions N       live debate sessions, 429 beyond (default 256)\n"
        "  --session-ttl S        a session unused this long is removed (default 3600)\n"
        "  --model-name NAME      the id /v1/models reports (default the GGUF's file name)\n"
        "  -h, --help             this help\n"
        "Exit status: 0 stopped by a signal, 1 failure (e.g. the model did not load), 2 usage.\n");
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi))
        return sn_cli_usage_error("serve", "--%s must be a number in [%g, %g]", opt, lo, hi);
    *out = v;
    return SN_EXIT_OK;
}

int sn_cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"detector", required_argument, NULL, 'd'},     {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},         {"workers", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},      {"api-key", required_argument, NULL, 'k'},
        {"queue", required_argument, NULL, 'q'},        {"queue-wait", required_argument, NULL, 'W'},
        {"max-body", required_argument, NULL, 'b'},
        {"max-request-tokens", required_argument, NULL, 'T'},
        {"max-items", required_argument, NULL, 'i'},
        {"max-connections", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 'o'},      {"max-sessions", required_argument, NULL, 's'},
        {"session-ttl", required_argument, NULL, 'l'},  {"model-name", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},               {NULL, 0, NULL, 0},
    };
    struct sn_serve_params p = sn_serve_default_params();
    p.port = 8090;
    const char *det = NULL;
    const char *env_key = getenv("SENTINEL_API_KEY");
    p.api_key = env_key && *env_key ? env_key : NULL;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "h", opts, NULL);
        if (c == -1)
            break;
        double v = 0;
        int st = SN_EXIT_OK;
        const char *name = c == 'h' || c == '?' || c == ':' ? "" : NULL;
        for (size_t i = 0; !name && opts[i].name; i++)
            if (opts[i].val == c)
                name = opts[i].name;
        switch (c) {
        case 'd': det = optarg; break;
        case 'H': p.host = optarg; break;
        case 'k': p.api_key = optarg; break;
        case 'm': p.model_name = optarg; break;
        case 'p': st = parse_num(name, optarg, 0, 65535, &v); p.port = (int)v; break;
        case 'w': st = parse_num(name, optarg, 1, 256, &v); p.n_workers = (int)v; break;
        case 't': st = parse_num(name, optarg, 1, 1024, &v); p.n_threads = (int)v; break;
        case 'q': st = parse_num(name, optarg, 1, 1 << 20, &v); p.queue_max = (int)v; break;
        case 'W': st = parse_num(name, optarg, 0.001, 86400, &v); p.queue_wait_s = v; break;
        case 'b': st = parse_num(name, optarg, 64, 1 << 30, &v); p.max_body = (size_t)v; break;
        case 'T': st = parse_num(name, optarg, 1, 1 << 30, &v); p.max_tokens = (size_t)v; break;
        case 'i': st = parse_num(name, optarg, 1, 4096, &v); p.max_items = (int)v; break;
        case 'c': st = parse_num(name, optarg, 1, 4096, &v); p.max_connections = (int)v; break;
        case 'o': st = parse_num(name, optarg, 1, 86400, &v); p.conn_timeout_s = (int)v; break;
        case 's': st = parse_num(name, optarg, 1, 1 << 20, &v); p.max_sessions = (int)v; break;
        case 'l': st = parse_num(name, optarg, 1, 1e9, &v); p.session_ttl_s = v; break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_usage_error("serve", "unknown or incomplete option '%s'",
                                      argv[optind - 1]);
        }
        if (st)
            return st;
        if ((c == 'p' || c == 'w' || c == 't' || c == 'q' || c == 'b' || c == 'T' ||
             c == 'i' || c == 'c' || c == 'o' || c == 's') && v != (double)(long long)v)
            return sn_cli_usage_error("serve", "--%s must be a whole number", name);
    }
    if (optind < argc)
        return sn_cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    if (!det)
        return sn_cli_usage_error("serve", "--detector D.gguf is required");
    /* SIGTERM and SIGINT are taken by sigwait below, in this thread only: blocked before any
    ** thread starts, so every thread inherits the mask and none dies of them */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is an error on its socket, not death */
    struct sn_err err = {0};
    struct sn_serve *s = NULL;
    if (sn_serve_start(det, &p, &s, &err))
        return sn_cli_fail("serve", &err);
    fprintf(stderr, "sentinel serve: listening on http://%s:%d (loading %s)\n",
            p.host ? p.host : "127.0.0.1", sn_serve_port(s), det);
    if (sn_serve_wait_ready(s, &err)) {
        sn_serve_stop(s);
        return sn_cli_fail("serve", &err);
    }
    fprintf(stderr, "sentinel serve: ready (%d worker%s x %d thread%s)%s\n",
            p.n_workers ? p.n_workers : 1, p.n_workers > 1 ? "s" : "",
            p.n_threads ? p.n_threads : 1, p.n_threads > 1 ? "s" : "",
            p.api_key ? "; API key required" : "");
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "sentinel serve: %s: finishing requests in flight\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    sn_serve_stop(s);
    fprintf(stderr, "sentinel serve: stopped\n");
    return SN_EXIT_OK;
}
