/* cli/torch_shim.c: in the `sentinel` executable (which does not link libtorch), the commands
** that need libtorch hand over to `sentinel-torch`, installed beside it, with the same
** arguments (execv: same pid, stdin/stdout, exit status). Without it (a build with
** -DSENTINEL_WITH_TORCH=OFF) they say so and exit SN_EXIT_UNAVAILABLE. */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int hand_over(const char *cmd, int argc, char **argv)
{
#ifdef SN_CLI_TORCH_HELPER
    char self[PATH_MAX], helper[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        snprintf(helper, sizeof helper, "%s/%s", slash ? self : ".", SN_CLI_TORCH_HELPER);
        char **args = calloc((size_t)argc + 2, sizeof *args);
        if (!args)
            return SN_EXIT_FAIL;
        args[0] = helper;
        for (int i = 0; i < argc; i++)
            args[i + 1] = argv[i];
        /* libgomp reads its wait policy once, when sentinel-torch loads, so it is set here.
        ** ATen's OpenMP pool and OpenBLAS's pthread pool share the cores: OpenMP workers
        ** spinning after a fused kernel slow the GEMM that follows (bench/forward_backward.sh:
        ** +15% training throughput on 2 cores). A user's own setting wins. */
        setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
        /* The other way round: OpenBLAS's pthread workers spin (sched_yield) for 2^28
        ** cycles after each product, taking the cores from the fused kernels and from the
        ** OpenMP workers in between; 2^4 puts them to sleep at once (docs/train.md "Speed":
        ** +8% on the ~100M step, +13-30% on the small configs, on 2 cores). OpenBLAS reads
        ** it when it loads. A user's own setting wins. */
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
        fflush(NULL);
        execv(helper, args);
        int e = errno;
        free(args);
        fprintf(stderr, "sentinel %s: cannot run %s: %s (it is built with libtorch beside "
                        "sentinel)\n", cmd, helper, strerror(e));
        return SN_EXIT_UNAVAILABLE;
    }
#endif
    (void)argc;
    (void)argv;
    return sn_cli_unavailable(cmd, "needs libtorch, and this build has none "
                                   "(configured with -DSENTINEL_WITH_TORCH=OFF)");
}

/* `score --detector` runs here, without libtorch; `score --model` is handed over. */
int sn_cmd_score(int argc, char **argv)
{
    if (sn_cli_has_option(argc, argv, "--detector"))
        return sn_cmd_score_detector(argc, argv);
    return hand_over("score", argc, argv);
}
int sn_cmd_train(int argc, char **argv) { return hand_over("train", argc, argv); }
