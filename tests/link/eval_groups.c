/* tests/link/eval_groups.c: the group metrics (eval/) as a program linked against sn_eval
** alone, so tests/layout.cmake can check what that library really pulls in: trajectories come
** from data/; no libcurl, HDF5 or libtorch may reach the link (docs/design.md §3,
** docs/modules.txt). Usage: eval_groups [trajectory.jsonl[.gz]...]: prints the stats table. */
#include "eval/eval.h"

int main(int argc, char **argv)
{
    struct sn_err err = {0};
    struct sn_stats_params sp = sn_stats_default_params();
    struct sn_stats *s = NULL;
    struct sn_buf out = {0};
    int rc = sn_stats_create(&sp, &s, &err);
    for (int i = 1; !rc && i < argc; i++) {
        struct sn_traj_reader_params rp = sn_traj_reader_default_params();
        struct sn_traj_reader *r = NULL;
        rc = sn_traj_reader_open(argv[i], &rp, &r, &err);
        while (!rc) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, &err);
            if (rc || !t)
                break;
            rc = sn_stats_add(s, t, &err);
            sn_traj_free(t);
        }
        sn_traj_reader_close(r);
    }
    if (!rc)
        rc = sn_stats_format_table(s, false, &out, &err);
    if (!rc)
        fputs(out.data ? out.data : "", stdout);
    else
        fprintf(stderr, "eval_groups: %s\n", err.msg);
    sn_buf_free(&out);
    sn_stats_free(s);
    return rc ? 1 : 0;
}
