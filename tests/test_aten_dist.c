/* tests/test_aten_dist.c: c10d through aten/aten.h. The parent picks a free loopback port and
** starts two copies of this binary as ranks 0 and 1 (torchrun-style environment: RANK,
** WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); each child checks all-reduce (sum,
** average, max, many tensors at once), broadcast and barrier against values it can compute
** itself, and exits 0 only if all hold. The barrier is checked by order, not by clock: files in
** a directory both ranks share say who got where. Limits (c10d's timeout, the parent's watchdog
** that kills both ranks so CI cannot hang) only stop a hang; a loaded machine never meets them.
** Also: a world of one without any environment (collectives are no-ops) and bad environments. */
#include "aten/aten.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static struct sn_err E;

/* c10d's timeout for init and every collective, and the parent's watchdog: both far above what
** two ranks take on a machine whose cores are busy with other work (seconds), so only a hang
** meets them. */
#define DIST_TIMEOUT_S 120
#define WATCHDOG_S 180

static struct sn_tensor *vec(const double *v, int64_t n, enum sn_dtype dt)
{
    struct sn_tensor *t = NULL;
    OK(sn_aten_from_host(v, SN_DTYPE_F64, &n, 1, dt, SN_CPU, &t, &E));
    return t;
}

static void expect(const char *what, const struct sn_tensor *t, const double *want, size_t n)
{
    double got[16] = {0};
    OK(sn_aten_to_host(t, got, SN_DTYPE_F64, n, &E));
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i], "%s[%zu] = %g, want %g", what, i, got[i], want[i]);
}

static int child(void)
{
    struct sn_dist *d = NULL;
    struct sn_dist_params p = sn_dist_default_params();
    p.timeout_s = DIST_TIMEOUT_S;
    OK(sn_aten_dist_init_env(&p, &d, &E));
    if (!d)
        return sn_test_done();
    int r = sn_aten_dist_rank(d), w = sn_aten_dist_world_size(d);
    CHECK(w == 2 && (r == 0 || r == 1));
    CHECK(sn_aten_dist_local_rank(d) == r);
    CHECK_STR(sn_aten_dist_backend(d), "gloo");
    /* rank r holds (r+1) * (1, 10, 100): the sum is 3 * (1, 10, 100) */
    double v[3] = {r + 1.0, 10.0 * (r + 1), 100.0 * (r + 1)};
    struct sn_tensor *a = vec(v, 3, SN_DTYPE_F32), *b = vec(v, 3, SN_DTYPE_F64);
    struct sn_tensor *c = vec(v, 3, SN_DTYPE_I64), *m = vec(v, 3, SN_DTYPE_F32);
    OK(sn_aten_dist_all_reduce(d, a, SN_REDUCE_SUM, &E));
    expect("sum", a, (double[]){3, 30, 300}, 3);
    OK(sn_aten_dist_all_reduce(d, b, SN_REDUCE_AVG, &E));
    expect("avg", b, (double[]){1.5, 15, 150}, 3);
    OK(sn_aten_dist_all_reduce(d, c, SN_REDUCE_SUM, &E));
    expect("sum i64", c, (double[]){3, 30, 300}, 3);
    CHECK(sn_aten_dist_all_reduce(d, c, SN_REDUCE_AVG, &E) == SN_E_ARG); /* integers */
    sn_err_clear(&E);
    OK(sn_aten_dist_all_reduce(d, m, SN_REDUCE_MAX, &E));
    expect("max", m, (double[]){2, 20, 200}, 3);
    /* many: a gradient-like list of different shapes in one collective */
    struct sn_tensor *g1 = vec((double[]){r, 2.0 * r}, 2, SN_DTYPE_F32);
    struct sn_tensor *g2 = vec((double[]){1, 1, 1, r}, 4, SN_DTYPE_F32), *g2v = NULL;
    OK(sn_aten_reshape(g2, (int64_t[]){2, 2}, 2, &g2v, &E));
    struct sn_tensor *gs[2] = {g1, g2v};
    OK(sn_aten_dist_all_reduce_many(d, gs, 2, SN_REDUCE_AVG, &E));
    expect("many[0]", g1, (double[]){0.5, 1}, 2);
    expect("many[1]", g2, (double[]){1, 1, 1, 0.5}, 4);
    /* broadcast from rank 1 */
    struct sn_tensor *bc = vec((double[]){r * 7.0, -r * 1.0}, 2, SN_DTYPE_F32);
    OK(sn_aten_dist_broadcast(d, bc, 1, &E));
    expect("broadcast", bc, (double[]){7, -1}, 2);
    CHECK(sn_aten_dist_broadcast(d, bc, 2, &E) == SN_E_ARG);
    sn_err_clear(&E);
    /* barrier: rank 0 enters first and must not leave before rank 1 has arrived. Rank 0
    ** marks that it is entering; rank 1 waits for the mark, then marks its own arrival just
    ** before entering. Leaving the barrier, rank 0 must see rank 1's mark, however the two
    ** processes are scheduled. */
    const char *dir = getenv("SN_DIST_DIR");
    CHECK(dir != NULL);
    if (dir && r == 0) {
        sn_test_write_file(sn_test_path(dir, "rank0-entering"), "");
        OK(sn_aten_dist_barrier(d, &E));
        CHECK_MSG(access(sn_test_path(dir, "rank1-arrived"), F_OK) == 0,
                  "rank 0 left the barrier before rank 1 reached it");
    } else if (dir) {
        bool seen = false;
        for (int i = 0; i < 100 * DIST_TIMEOUT_S && !seen; i++) { /* 10 ms polls */
            seen = access(sn_test_path(dir, "rank0-entering"), F_OK) == 0;
            if (!seen)
                usleep(10 * 1000);
        }
        CHECK_MSG(seen, "rank 0 never reached the barrier");
        /* Not a synchronisation (the files are): a barrier that does not wait would let rank
        ** 0 out during this pause, so a broken one fails; a correct one passes whatever the
        ** pause or the scheduling. */
        usleep(100 * 1000);
        sn_test_write_file(sn_test_path(dir, "rank1-arrived"), "");
        OK(sn_aten_dist_barrier(d, &E));
    }
    struct sn_tensor *all[] = {a, b, c, m, g1, g2, g2v, bc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
    sn_aten_dist_free(d);
    return sn_test_done();
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int port = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static void test_two_ranks(const char *self)
{
    int port = free_port();
    CHECK(port > 0);
    char pbuf[16];
    snprintf(pbuf, sizeof pbuf, "%d", port);
    setenv("SN_DIST_DIR", sn_test_dir("aten_dist"), 1); /* fresh: no mark from an earlier run */
    pid_t pid[2] = {-1, -1};
    for (int r = 0; r < 2; r++) {
        char rb[8];
        snprintf(rb, sizeof rb, "%d", r);
        setenv("SN_DIST_CHILD", "1", 1);
        setenv("RANK", rb, 1);
        setenv("LOCAL_RANK", rb, 1);
        setenv("WORLD_SIZE", "2", 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", pbuf, 1);
        char *argv[] = {(char *)self, NULL};
        CHECK(posix_spawn(&pid[r], self, NULL, NULL, argv, environ) == 0);
    }
    const char *vars[] = {"SN_DIST_CHILD", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                          "MASTER_PORT", "SN_DIST_DIR"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    int status[2] = {0, 0};
    bool done[2] = {pid[0] <= 0, pid[1] <= 0};
    for (int tick = 0; tick < 10 * WATCHDOG_S && !(done[0] && done[1]); tick++) { /* 0.1 s */
        for (int r = 0; r < 2; r++)
            if (!done[r] && waitpid(pid[r], &status[r], WNOHANG) == pid[r])
                done[r] = true;
        if (!(done[0] && done[1]))
            usleep(100 * 1000);
    }
    for (int r = 0; r < 2; r++) {
        if (pid[r] <= 0)
            continue;
        if (!done[r]) {
            fprintf(stderr, "rank %d timed out: killing it\n", r);
            kill(pid[r], SIGKILL);
            waitpid(pid[r], &status[r], 0);
            CHECK(!"rank timed out");
            continue;
        }
        CHECK_MSG(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0, "rank %d status 0x%x", r,
                  status[r]);
    }
}

/* The backend setting (aten.h sn_dist_params.backend): names parsed, NCCL refused on the CPU
** (or without NCCL in this build) before any socket, and a named backend opened for a world of
** one (open_single), its collectives the identity. */
static void test_backend_choice(void)
{
    enum sn_dist_backend b = SN_DIST_BACKEND_AUTO;
    OK(sn_aten_dist_backend_parse("gloo", &b, &E));
    CHECK(b == SN_DIST_BACKEND_GLOO);
    OK(sn_aten_dist_backend_parse("nccl", &b, &E));
    CHECK(b == SN_DIST_BACKEND_NCCL);
    OK(sn_aten_dist_backend_parse("auto", &b, &E));
    CHECK(b == SN_DIST_BACKEND_AUTO);
    CHECK(sn_aten_dist_backend_parse("mpi", &b, &E) == SN_E_ARG && strstr(E.msg, "'mpi'") &&
          strstr(E.msg, "gloo"));
    sn_err_clear(&E);
    CHECK(!sn_aten_dist_backend_built(SN_DIST_BACKEND_AUTO));
    struct sn_dist *d = NULL;
    struct sn_dist_params p = sn_dist_default_params();
    p.timeout_s = DIST_TIMEOUT_S;
    p.backend = SN_DIST_BACKEND_NCCL;
    p.open_single = true;
    CHECK(sn_aten_dist_init(0, 1, 0, "127.0.0.1", free_port(), &p, &d, &E) == SN_E_ARG && !d);
    CHECK_MSG(strstr(E.msg, "nccl needs a CUDA device") != NULL, "%s", E.msg);
    sn_err_clear(&E);
    p.backend = SN_DIST_BACKEND_GLOO;
    if (!sn_aten_dist_backend_built(SN_DIST_BACKEND_GLOO)) {
        CHECK(sn_aten_dist_init(0, 1, 0, "127.0.0.1", free_port(), &p, &d, &E) ==
              SN_E_UNSUPPORTED && !d);
        sn_err_clear(&E);
        return;
    }
    OK(sn_aten_dist_init(0, 1, 0, "127.0.0.1", free_port(), &p, &d, &E));
    CHECK(d && sn_aten_dist_world_size(d) == 1);
    CHECK_STR(sn_aten_dist_backend(d), "gloo");
    struct sn_tensor *t = vec((double[]){1.5, -2}, 2, SN_DTYPE_F32);
    OK(sn_aten_dist_all_reduce(d, t, SN_REDUCE_SUM, &E));
    OK(sn_aten_dist_all_reduce(d, t, SN_REDUCE_AVG, &E));
    OK(sn_aten_dist_broadcast(d, t, 0, &E));
    OK(sn_aten_dist_barrier(d, &E));
    expect("gloo group of one", t, (double[]){1.5, -2}, 2);
    sn_tensor_free(t);
    sn_aten_dist_free(d);
    d = NULL;
    /* from the environment: a named backend with the launcher's MASTER_PORT opens a group of
    ** one; AUTO with the same environment opens nothing */
    char pbuf[16];
    snprintf(pbuf, sizeof pbuf, "%d", free_port());
    setenv("MASTER_PORT", pbuf, 1);
    p.open_single = false;
    OK(sn_aten_dist_init_env(&p, &d, &E));
    CHECK_STR(d ? sn_aten_dist_backend(d) : "", "gloo");
    sn_aten_dist_free(d);
    d = NULL;
    p.backend = SN_DIST_BACKEND_AUTO;
    OK(sn_aten_dist_init_env(&p, &d, &E));
    CHECK_STR(d ? sn_aten_dist_backend(d) : "", "none");
    sn_aten_dist_free(d);
    unsetenv("MASTER_PORT");
}

static void test_world_of_one_and_bad_env(void)
{
    struct sn_dist *d = NULL;
    OK(sn_aten_dist_init_env(NULL, &d, &E));
    CHECK(d && sn_aten_dist_world_size(d) == 1 && sn_aten_dist_rank(d) == 0);
    CHECK_STR(sn_aten_dist_backend(d), "none");
    struct sn_tensor *t = vec((double[]){1.5, 2}, 2, SN_DTYPE_F32);
    OK(sn_aten_dist_all_reduce(d, t, SN_REDUCE_SUM, &E));
    OK(sn_aten_dist_all_reduce(d, t, SN_REDUCE_AVG, &E));
    OK(sn_aten_dist_all_reduce_many(d, &t, 1, SN_REDUCE_SUM, &E));
    OK(sn_aten_dist_broadcast(d, t, 0, &E));
    OK(sn_aten_dist_barrier(d, &E));
    expect("world of one", t, (double[]){1.5, 2}, 2);
    sn_aten_dist_free(d);
    sn_aten_dist_free(NULL);
    /* malformed or incomplete environments: clean SN_E_ARG naming the variable */
    setenv("WORLD_SIZE", "2", 1);
    setenv("RANK", "1", 1);
    CHECK(sn_aten_dist_init_env(NULL, &d, &E) == SN_E_ARG && d == NULL);
    CHECK_MSG(strstr(E.msg, "MASTER_PORT") != NULL, "%s", E.msg);
    sn_err_clear(&E);
    setenv("RANK", "x1", 1);
    CHECK(sn_aten_dist_init_env(NULL, &d, &E) == SN_E_ARG && strstr(E.msg, "RANK"));
    sn_err_clear(&E);
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    setenv("SLURM_NTASKS", "3", 1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("MASTER_PORT", "1", 1);
    CHECK(sn_aten_dist_init_env(NULL, &d, &E) == SN_E_ARG && strstr(E.msg, "rank 5"));
    sn_err_clear(&E);
    unsetenv("SLURM_NTASKS");
    unsetenv("SLURM_PROCID");
    unsetenv("MASTER_PORT");
    if (!sn_aten_cuda_available()) {
        struct sn_dist_params p = sn_dist_default_params();
        p.device.type = SN_DEVICE_CUDA;
        CHECK(sn_aten_dist_init(0, 2, 0, "127.0.0.1", 1, &p, &d, &E) == SN_E_UNSUPPORTED);
        sn_err_clear(&E);
    }
    sn_tensor_free(t);
}

int main(void)
{
    sn_aten_set_num_threads(1);
    if (getenv("SN_DIST_CHILD"))
        return child();
    test_world_of_one_and_bad_env();
    test_backend_choice();
    test_two_ranks("/proc/self/exe");
    return sn_test_done();
}
