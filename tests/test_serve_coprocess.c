/* tests/test_serve_coprocess.c: `sentinel score --detector D --jsonl -` as a coprocess
** (docs/agents.md "Coprocess"): a line written to its stdin pipe is answered while the pipe
** stays open, and the answers equal, bit for bit (--exact), those of the same lines read from
** a file. Also a gzip stream whose magic arrives one byte at a time. The waits are bounded by a
** generous deadline that only guards against a hang; nothing here measures speed. */
#include "testutil.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define HANG_GUARD_MS (300 * 1000)

struct coproc {
    pid_t pid;
    int   in;  /* its stdin */
    int   out; /* its stdout */
};

static int coproc_start(struct coproc *c, const char *bin, const char *det)
{
    int pin[2], pout[2];
    if (pipe(pin) || pipe(pout))
        return -1;
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[0]);
        close(pin[1]);
        close(pout[0]);
        close(pout[1]);
        execl(bin, bin, "score", "--detector", det, "--jsonl", "-", "--exact", "--threads",
              "1", (char *)NULL);
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    c->in = pin[1];
    c->out = pout[0];
    return 0;
}

/* Reads one line from fd (byte by byte: nothing past the newline is consumed) within the hang
** guard; returns its length, or -1 on timeout, end of file or error. */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, HANG_GUARD_MS);
        if (r <= 0)
            return -1;
        char ch;
        ssize_t k = read(fd, &ch, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        if (ch == '\n')
            break;
        buf[n++] = ch;
    }
    buf[n] = '\0';
    return (int)n;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

static int coproc_end(struct coproc *c)
{
    if (c->in >= 0)
        close(c->in);
    c->in = -1;
    close(c->out);
    int st = 0;
    if (waitpid(c->pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *const lines[] = {
    "{\"context\": \"Question: 2+2?\", \"response\": \"It is 4. FINAL ANSWER: 4\"}\n",
    "{\"context\": \"Question: 3*3?\", \"responses\": [\"9, clearly.\", \"It is 6.\"]}\n",
};

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const char *bin = sn_test_bin(), *det = sn_test_tiny_detector();
    const char *dir = sn_test_dir("serve_coprocess");
    char got[3][64], want[3][64], buf[256];

    /* the reference: the same lines from a file */
    FILE *f = fopen(sn_test_path(dir, "in.jsonl"), "w");
    CHECK(f != NULL);
    if (!f)
        return sn_test_done();
    fputs(lines[0], f);
    fputs(lines[1], f);
    fclose(f);
    CHECK(sn_test_sh("'%s' score --detector '%s' --jsonl '%s/in.jsonl' --exact --threads 1 "
                     "> '%s/want.txt'", bin, det, dir, dir) == 0);
    f = fopen(sn_test_path(dir, "want.txt"), "r");
    for (int i = 0; i < 3; i++)
        CHECK(f && fscanf(f, "%63s", want[i]) == 1);
    if (f)
        fclose(f);

    /* line by line through a pipe that stays open until every answer is read */
    struct coproc c = {0, -1, -1};
    CHECK(coproc_start(&c, bin, det) == 0);
    CHECK(write_all(c.in, lines[0], strlen(lines[0])) == 0);
    CHECK_MSG(read_line(c.out, got[0], sizeof got[0]) > 0, "no answer to line 1 while the input "
              "was open");
    CHECK(write_all(c.in, lines[1], strlen(lines[1])) == 0);
    CHECK(read_line(c.out, got[1], sizeof got[1]) > 0);
    CHECK(read_line(c.out, got[2], sizeof got[2]) > 0);
    CHECK(coproc_end(&c) == 0);
    for (int i = 0; i < 3; i++)
        CHECK_STR(got[i], want[i]);

    /* a gzip stream: the magic's first byte alone, then the rest */
    uLongf zcap = 1024;
    unsigned char z[1024];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (Bytef *)lines[0];
    zs.avail_in = (uInt)strlen(lines[0]);
    zs.next_out = z;
    zs.avail_out = (uInt)zcap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t zn = zcap - zs.avail_out;
    deflateEnd(&zs);
    CHECK(z[0] == 0x1f && z[1] == 0x8b);
    c = (struct coproc){0, -1, -1};
    CHECK(coproc_start(&c, bin, det) == 0);
    CHECK(write_all(c.in, z, 1) == 0);
    /* a pause long enough that the reader's first read(2) sees the lone byte (the result is
    ** the same either way: this only gives the split a chance to happen) */
    usleep(200 * 1000);
    CHECK(write_all(c.in, z + 1, zn - 1) == 0);
    CHECK(read_line(c.out, buf, sizeof buf) > 0);
    CHECK_STR(buf, want[0]);
    CHECK(coproc_end(&c) == 0);
    return sn_test_done();
}
