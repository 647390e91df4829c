/* tests/test_common_atomic.c: an atomic write killed (SIGKILL) between write and rename
** leaves the old file intact; a completed one replaces it whole; progress lines. */
#include "common/common.h"
#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_kill_before_rename(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/state.json", dir);
    CHECK(sn_atomic_write(path, "{\"old\": true}\n", 14, &err) == SN_OK);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct sn_atomic_file *a;
        struct sn_err e = {0};
        if (sn_atomic_open(path, &a, &e))
            _exit(3);
        FILE *f = sn_atomic_stream(a);
        for (int i = 0; i < 100000; i++)
            fprintf(f, "{\"new\": %d}\n", i);
        fflush(f);
        /* tell the parent the bytes are written, then wait to be killed before commit */
        if (write(pipefd[1], "w", 1) != 1)
            _exit(4);
        pause();
        _exit(5);
    }
    char c;
    CHECK(read(pipefd[0], &c, 1) == 1);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char *text;
    size_t len;
    CHECK(sn_file_read(path, 0, &text, &len, &err) == SN_OK);
    CHECK_STR(text, "{\"old\": true}\n");
    sn_free(text);
    /* the temp file is left behind (the process died); the next writer replaces the target */
    CHECK(sn_atomic_write(path, "{\"new\": 1}\n", 11, &err) == SN_OK);
    CHECK(sn_file_read(path, 0, &text, &len, &err) == SN_OK);
    CHECK_STR(text, "{\"new\": 1}\n");
    sn_free(text);
    close(pipefd[0]);
    close(pipefd[1]);
}

static void test_abort(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/aborted.txt", dir);
    struct sn_atomic_file *a;
    CHECK(sn_atomic_open(path, &a, &err) == SN_OK);
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s", sn_atomic_tmp_path(a));
    fputs("partial", sn_atomic_stream(a));
    sn_atomic_abort(a);
    CHECK(!sn_path_exists(path));
    CHECK(!sn_path_exists(tmp));
    CHECK(sn_atomic_open("/nonexistent-dir/x", &a, &err) == SN_E_IO);
    CHECK(strstr(err.msg, "/nonexistent-dir/x") != NULL);
}

static void test_progress(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/progress.log", dir);
    FILE *f = fopen(path, "w");
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "simulate";
    pp.unit = "debates";
    pp.total = 10;
    pp.stream = f;
    pp.force_mode = 2;
    pp.interval = 1e-9; /* every update prints, so the test sees the plain-line format */
    struct sn_progress *p;
    CHECK(sn_progress_create(&pp, &p, &err) == SN_OK);
    sn_progress_update(p, 5, "errors 0");
    sn_progress_finish(p, "done");
    fclose(f);
    char *text;
    CHECK(sn_file_read(path, 0, &text, NULL, &err) == SN_OK);
    CHECK_MSG(strstr(text, "simulate: 5/10 debates (50.0%)") != NULL, "%s", text);
    CHECK(strstr(text, "errors 0") != NULL);
    CHECK(strstr(text, "simulate: 10/10") == NULL); /* finish reports the count it was given */
    CHECK(strstr(text, "done") != NULL);
    CHECK(strchr(text, '\r') == NULL && strstr(text, "\033[") == NULL); /* plain: no bar codes */
    /* the line of a job stopped at 5 of 10 (an interrupt) keeps an ETA for the 5 left */
    const char *last = strstr(text, "done");
    CHECK_MSG(last && !strstr(text, "eta 0m00s"), "%s", text);
    sn_free(text);

    /* a resumed job (initial 4): nothing done here yet is no rate and an unknown ETA; its end
    ** at 10 of 10 says eta 0m00s */
    f = fopen(path, "w");
    pp.stream = f;
    pp.initial = 4;
    CHECK(sn_progress_create(&pp, &p, &err) == SN_OK);
    sn_progress_update(p, 4, NULL);
    sn_progress_update(p, 10, NULL);
    sn_progress_finish(p, "done");
    fclose(f);
    CHECK(sn_file_read(path, 0, &text, NULL, &err) == SN_OK);
    CHECK_MSG(strstr(text, "simulate: 4/10 debates (40.0%)  0.0/s") && strstr(text, "eta ?"),
              "%s", text);
    CHECK_MSG(strstr(text, "simulate: 10/10 debates (100.0%)") && strstr(text, "eta 0m00s"),
              "%s", text);
    sn_free(text);
}

int main(void)
{
    const char *dir = sn_test_dir("common_atomic");
    test_kill_before_rename(dir);
    test_abort(dir);
    test_progress(dir);
    return sn_test_done();
}
