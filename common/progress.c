/* common/progress.c: progress reporting for long jobs (docs/design.md §1): a live bar on a
** terminal, periodic plain lines otherwise (logs of cluster jobs), with rate and ETA. */
#include "common/common.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

struct sn_progress {
    struct sn_progress_params p;
    char     label[64], unit[32];
    int      mode;        /* 1 bar, 2 plain lines, 3 silent */
    double   t_start, t_last;
    uint64_t done;
    char     extra[256];
};

struct sn_progress_params sn_progress_default_params(void)
{
    struct sn_progress_params p = {.label = "progress", .unit = "items", .interval = 10.0};
    return p;
}

int sn_progress_create(const struct sn_progress_params *params, struct sn_progress **out,
                       struct sn_err *err)
{
    *out = NULL;
    struct sn_progress *p = sn_calloc(1, sizeof *p);
    if (!p)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    p->p = *params;
    if (!p->p.stream)
        p->p.stream = stderr;
    if (p->p.interval <= 0)
        p->p.interval = 10.0;
    snprintf(p->label, sizeof p->label, "%s", params->label ? params->label : "progress");
    snprintf(p->unit, sizeof p->unit, "%s", params->unit ? params->unit : "items");
    p->mode = params->force_mode ? params->force_mode
                                 : (isatty(fileno(p->p.stream)) ? 1 : 2);
    p->done = params->initial;
    p->t_start = p->t_last = sn_now();
    *out = p;
    return SN_OK;
}

/* s in whole seconds, rounded up when `up` (an ETA of work left is never shown as 0m00s) */
static void fmt_duration(double s, bool up, char *buf, size_t n)
{
    if (!(s >= 0) || s > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(up ? ceil(s) : s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* The rate counts only what this process did (done - initial: a resumed job starts at
** `initial`), and the ETA is what is left at that rate, also on the line printed when the job
** stops early (an interrupt), where it tells how long a resume would take; 0m00s only when
** nothing is left. */
static void draw(struct sn_progress *p, bool final)
{
    double now = sn_now(), el = now - p->t_start;
    uint64_t here = p->done > p->p.initial ? p->done - p->p.initial : 0;
    double rate = el > 0 ? (double)here / el : 0.0;
    char eta[32] = "?", elapsed[32];
    fmt_duration(el, false, elapsed, sizeof elapsed);
    if (p->p.total && p->done >= p->p.total)
        snprintf(eta, sizeof eta, "0m00s");
    else if (p->p.total && rate > 0)
        fmt_duration((double)(p->p.total - p->done) / rate, true, eta, sizeof eta);
    FILE *f = p->p.stream;
    if (p->mode == 1) {
        char bar[31];
        int filled = p->p.total ? (int)(30.0 * (double)p->done / (double)p->p.total) : 0;
        if (filled > 30)
            filled = 30;
        memset(bar, '#', (size_t)filled);
        memset(bar + filled, '.', (size_t)(30 - filled));
        bar[30] = '\0';
        if (p->p.total)
            fprintf(f, "\r\033[K%s [%s] %llu/%llu %s  %.1f/s  eta %s  %s", p->label, bar,
                    (unsigned long long)p->done, (unsigned long long)p->p.total, p->unit, rate,
                    eta, p->extra);
        else
            fprintf(f, "\r\033[K%s %llu %s  %.1f/s  %s  %s", p->label,
                    (unsigned long long)p->done, p->unit, rate, elapsed, p->extra);
        if (final)
            fputc('\n', f);
    } else {
        if (p->p.total)
            fprintf(f, "%s: %llu/%llu %s (%.1f%%)  %.1f/s  elapsed %s  eta %s  %s\n", p->label,
                    (unsigned long long)p->done, (unsigned long long)p->p.total, p->unit,
                    100.0 * (double)p->done / (double)p->p.total, rate, elapsed, eta,
                    p->extra);
        else
            fprintf(f, "%s: %llu %s  %.1f/s  elapsed %s  %s\n", p->label,
                    (unsigned long long)p->done, p->unit, rate, elapsed, p->extra);
    }
    fflush(f);
    p->t_last = now;
}

void sn_progress_update(struct sn_progress *p, uint64_t done, const char *extra)
{
    if (!p || p->mode == 3)
        return;
    p->done = done;
    if (extra)
        snprintf(p->extra, sizeof p->extra, "%s", extra);
    double now = sn_now();
    double every = p->mode == 1 ? 0.1 : p->p.interval;
    if (now - p->t_last >= every)
        draw(p, false);
}

void sn_progress_finish(struct sn_progress *p, const char *summary)
{
    if (!p)
        return;
    if (p->mode != 3) {
        if (summary)
            snprintf(p->extra, sizeof p->extra, "%s", summary);
        draw(p, true);
    }
    sn_free(p);
}
