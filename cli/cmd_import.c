/* cli/cmd_import.c: `sentinel import FORMAT` (docs/formats.md "Imported trajectories", "Chat
** log"): published debate logs or users' own chat logs -> sentinel.trajectory/1. */
#include "cli/cli.h"
#include "import/import.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel import FORMAT [options] -o OUT.jsonl.gz PATH...\n"
"\n"
"Converts debate logs into trajectories (sentinel.trajectory/1), one per source record, so\n"
"that stats, build, inspect and eval run on debates that real LLMs had.\n"
"FORMAT:\n"
"  collab-attack   the Collaboration-attack logs (Amayuelas et al.): PATH is a results/\n"
"                  directory (searched recursively) or files under <dataset>/[<condition>/]\n"
"  chatlog         sentinel.chatlog/1 JSONL: one debate per line (docs/formats.md)\n"
"PATH: .jsonl or .jsonl.gz files, or directories searched for them (gzip by magic).\n"
"\n"
"options:\n"
"  -o, --output OUT        output file (.jsonl.gz = gzip, otherwise plain), written\n"
"                          atomically; re-running gives byte-identical output\n"
"      --answers RULE      source: the source's own extraction rule (collab-attack default;\n"
"                          chatlog: the given answers), sentinel: sentinel's extractor;\n"
"                          recorded per message as answer_rule\n"
"      --skip-unsupported  skip (and count) files of non-multiple-choice datasets\n"
"      --skip-bad          skip (and count) malformed records instead of failing\n"
"      --group-model M     model of honest slots when the folder name has none\n"
"      --adv-model M       model of adversaries when the folder name has none\n"
"      --repo URL          provenance: source repository (written to import.repo)\n"
"      --commit SHA        provenance: source commit (import.commit, prompt_version)\n"
"      --progress MODE     auto (default), bar, plain or none\n"
"  -h, --help              this help\n"
"\n"
"The summary on stderr counts files, trajectories, empty/unsupported files, skipped\n"
"records, unparsed answers, answers on which the source rule and sentinel's extractor\n"
"differ, and (collab-attack) peer views that do not show the peer's reply.\n"
"Exit status: 0 ok, 1 failure (message names file:line), 2 usage error.\n");
}

int sn_cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},     {"answers", required_argument, 0, 'a'},
        {"skip-unsupported", no_argument, 0, 'U'}, {"skip-bad", no_argument, 0, 'B'},
        {"group-model", required_argument, 0, 'g'}, {"adv-model", required_argument, 0, 'm'},
        {"repo", required_argument, 0, 'r'},       {"commit", required_argument, 0, 'c'},
        {"progress", required_argument, 0, 'P'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    struct sn_import_params p = sn_import_default_params();
    const char *out = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return SN_EXIT_OK;
        }
    if (argc < 2 || argv[1][0] == '-')
        return sn_cli_usage_error("import", "expected a FORMAT (collab-attack or chatlog)");
    p.format = argv[1];
    bool known = false;
    for (const char *const *f = sn_import_formats(); *f; f++)
        known = known || !strcmp(*f, p.format);
    if (!known)
        return sn_cli_usage_error("import", "unknown format '%s' (collab-attack or chatlog)",
                                  p.format);
    optind = 2;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'a':
            if (!strcmp(optarg, "source"))
                p.answers = SN_IMPORT_ANSWERS_SOURCE;
            else if (!strcmp(optarg, "sentinel"))
                p.answers = SN_IMPORT_ANSWERS_SENTINEL;
            else
                return sn_cli_usage_error("import", "--answers: expected source or sentinel, "
                                                    "got '%s'", optarg);
            break;
        case 'U': p.skip_unsupported = true; break;
        case 'B': p.skip_bad = true; break;
        case 'g': p.group_model = optarg; break;
        case 'm': p.adv_model = optarg; break;
        case 'r': p.repo = optarg; break;
        case 'c': p.commit = optarg; break;
        case 'P':
            if (!strcmp(optarg, "auto")) p.progress = 0;
            else if (!strcmp(optarg, "bar")) p.progress = 1;
            else if (!strcmp(optarg, "plain")) p.progress = 2;
            else if (!strcmp(optarg, "none")) p.progress = 3;
            else
                return sn_cli_usage_error("import", "--progress: expected auto, bar, plain or "
                                                    "none, got '%s'", optarg);
            break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_bad_option("import", argv[optind - 1], opts);
        }
    }
    if (!out)
        return sn_cli_usage_error("import", "-o OUT is required");
    if (optind >= argc)
        return sn_cli_usage_error("import", "no input PATH given");
    struct sn_import_summary s;
    struct sn_err err = {0};
    int rc = sn_import_run(&p, (const char *const *)argv + optind, (size_t)(argc - optind), out,
                           &s, &err);
    if (rc)
        return sn_cli_fail("import", &err);
    fprintf(stderr,
            "sentinel import: %llu trajectories from %llu files -> %s\n"
            "  empty files: %llu, unsupported files skipped: %llu, bad records skipped: %llu\n"
            "  messages: %llu, unparsed answers: %llu, answers differing between the source "
            "rule and sentinel's extractor: %llu\n"
            "  visibility anomalies: %llu, warnings: %llu\n",
            (unsigned long long)s.n_trajectories, (unsigned long long)s.n_files, out,
            (unsigned long long)s.n_empty_files, (unsigned long long)s.n_unsupported_files,
            (unsigned long long)s.n_bad, (unsigned long long)s.n_messages,
            (unsigned long long)s.n_unparsed, (unsigned long long)s.n_answers_differ,
            (unsigned long long)s.n_visibility_anomalies, (unsigned long long)s.n_warnings);
    if (s.n_bad)
        fprintf(stderr, "  first skipped record: %s\n", s.first_bad);
    return SN_EXIT_OK;
}
