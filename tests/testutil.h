/* tests/testutil.h: tiny assertion helpers shared by the C tests. A failing CHECK prints
** file:line and the expression, counts the failure, and the test goes on; sn_test_done()
** returns the exit status (non-zero if anything failed) and prints "N passed, N failed". */
#ifndef SN_TESTUTIL_H
#define SN_TESTUTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int sn_test_failures, sn_test_checks;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        sn_test_checks++;                                                                    \
        if (!(cond)) {                                                                       \
            sn_test_failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
        }                                                                                    \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                 \
    do {                                                                                     \
        sn_test_checks++;                                                                    \
        if (!(cond)) {                                                                       \
            sn_test_failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

/* |got - want| <= atol + rtol * |want| */
#define CHECK_CLOSE(got, want, atol, rtol)                                                   \
    do {                                                                                     \
        double g_ = (double)(got), w_ = (double)(want);                                      \
        sn_test_checks++;                                                                    \
        if (!(fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_))) {                                \
            sn_test_failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s = %.9g, want %.9g\n", __FILE__, __LINE__, #got,  \
                    g_, w_);                                                                 \
        }                                                                                    \
    } while (0)

#define CHECK_STR(got, want)                                                                 \
    do {                                                                                     \
        const char *g_ = (got), *w_ = (want);                                                \
        sn_test_checks++;                                                                    \
        if (!g_ || !w_ || strcmp(g_, w_) != 0) {                                             \
            sn_test_failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__,    \
                    #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");                           \
        }                                                                                    \
    } while (0)

int sn_test_done(void);
/* A fresh empty directory under $SENTINEL_TMP (or /tmp) named after the test; returns a
** static string. */
const char *sn_test_dir(const char *name);
/* dir + "/" + name in one of 8 static buffers used in turn (so up to 8 results may be live at
** once). */
const char *sn_test_path(const char *dir, const char *name);
/* $SENTINEL_TMP/tiny_detector/d.gguf, the random tiny detector the ctest fixture tiny_detector
** exports once (tests/test_export_fixture.c; the test sets FIXTURES_REQUIRED tiny_detector in
** tests/export_fixture.cmake); exits with status 2, saying so, if it is missing. */
const char *sn_test_tiny_detector(void);
/* Writes text to path (replacing it); exits with status 2 if the file cannot be written. */
void sn_test_write_file(const char *path, const char *text);
/* $SENTINEL_BIN, the sentinel program under test; exits with status 1 if it is not set. */
const char *sn_test_bin(void);
/* Runs a shell command, returns its exit status (or -1). */
int sn_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reads up to max whitespace-separated floats from a text file into out; returns how many,
** or -1 if the file cannot be opened. */
int sn_test_read_floats(const char *path, float *out, int max);
/* Whether the file at path holds needle; prints the file's start to stderr when it does not
** (false too when the file cannot be read). */
int sn_test_file_has(const char *path, const char *needle);
/* A valid sentinel.trajectory/1 debate as one JSON line (static text): AITM-style, 3 agents
** (honest, honest, interceptor), 2 rounds. Tests spoil copies of it one field at a time. */
const char *sn_test_trajectory_text(void);
struct cJSON;
/* Parses tests/ref/<name> under $SENTINEL_SRC (default ".."); NULL, after a failed CHECK, when
** it cannot. Free with cJSON_Delete. */
struct cJSON *sn_test_load_ref(const char *name);
/* Appends one parsed message {agent, text, answer, parsed: true} to a trajectory round array. */
void sn_test_traj_add_message(struct cJSON *round, int agent, const char *text, const char *answer);
/* Adds the "final" (majority, answer, correct), "seed" and "replicate" 0 of a trajectory. */
void sn_test_traj_add_final(struct cJSON *traj, const char *answer, int correct, int seed);
/* Where the Qwen tokenizer.json is looked for: $SENTINEL_QWEN_TOKENIZER if set, else the npm
** package under $SENTINEL_BUILD (default "."); the path is written to path. Returns 1 when the
** file is there with sha256 want_sha (lowercase hex), else 0. */
int sn_test_qwen_tokenizer(const char *want_sha, char *path, size_t cap);
struct sn_st_file;
struct sn_st_writer;
/* Opens the safetensors file src into *f and returns a new writer holding all its tensors but
** `drop` (NULL: none), failing a CHECK (and returning NULL, *f closed) when either cannot be
** made. The writer's tensors point into *f: add more, save the writer, then free it and close
** *f. */
struct sn_st_writer *sn_test_st_copy(const char *src, const char *drop, struct sn_st_file **f);

/* The Python that runs the tests' independent references (PyTorch, h5py, scikit-learn), as a
** shell word for sn_test_sh: $SENTINEL_PYTHON, else Debian's /usr/bin/python3 (scripts/deps.sh
** installs its packages there). `sentinel report` reads the same variable. */
#define SN_TEST_PY "\"${SENTINEL_PYTHON:-/usr/bin/python3}\""

/* A loopback HTTP/1.1 server in the test's own process, for tests of HTTP clients that must not
** depend on timing: it answers when the test says so, never after a delay. Every POST gets the
** same OpenAI-style chat completion (content SN_TEST_GATE_REPLY, usage 1 + 2 tokens) once the
** gate is open. While the gate is closed a POST is held unanswered (SN_TEST_GATE_HOLD: until the
** gate opens, or the client gives up and closes the connection) or answered 503 "Loading model"
** (SN_TEST_GATE_BUSY). Every GET answers 200 with a one-model list. Connections are kept alive;
** one thread serves each. It never ends by itself: sn_test_gate_stop does. */
#define SN_TEST_GATE_REPLY "held reply. The answer is (A)."
enum sn_test_gate_mode { SN_TEST_GATE_HOLD, SN_TEST_GATE_BUSY };
struct sn_test_gate;
struct sn_test_gate_stats {
    int hits;        /* POST requests read */
    int current;     /* POSTs read, neither answered nor given up by their client */
    int max_current; /* the most at once since the start */
    int connections; /* connections that carried a POST */
};
/* Starts it on 127.0.0.1, a free port, with the gate closed; NULL (said on stderr) on failure. */
struct sn_test_gate *sn_test_gate_start(enum sn_test_gate_mode mode);
int  sn_test_gate_port(const struct sn_test_gate *g);
/* Opens the gate for good: held POSTs are answered at once, later ones on arrival. */
void sn_test_gate_open(struct sn_test_gate *g);
struct sn_test_gate_stats sn_test_gate_stats(struct sn_test_gate *g);
/* Waits until `current` is at least n, for at most limit_s seconds (a bound for a broken client,
** never met by a working one); whether it got there. */
int  sn_test_gate_wait_current(struct sn_test_gate *g, int n, double limit_s);
/* Stops it: held requests and open connections are closed, unanswered. NULL is fine. */
void sn_test_gate_stop(struct sn_test_gate *g);
#endif
