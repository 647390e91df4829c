/* eval/detect_ngram.c: the n-gram baseline of `sentinel eval` (docs/eval.md "Baselines",
** "ngram"): a bag of word and punctuation 1-2-grams, sublinear tf, L2-normalised, and a
** class-balanced logistic regression with L2 regularisation, fitted to convergence by full-batch
** L-BFGS, its strength chosen on a validation split of the training debates. Deterministic:
** no threads, no random draws, sums in a fixed order. tests/ref/ngram_sklearn.py re-derives the
** features and fits scikit-learn's LogisticRegression on the same set (test_eval_ngram).
**
** Terms. A token is a maximal run of ASCII letters and digits and bytes >= 0x80 (so UTF-8 words
** stay whole), ASCII-lower-cased, or one ASCII punctuation character (0x21-0x7e that is not a
** letter or digit: the answer marker "(B)" is the three tokens "(", "b", ")"); every other
** byte (white space, control characters) separates tokens. The terms are every token and every
** pair of neighbouring tokens, written "a b".
** Vector. The training texts' terms are the vocabulary (terms of other texts are ignored);
** x_j = 1 + ln tf_j for each vocabulary term j the text holds tf_j > 0 times, then x / |x|_2.
** Model. p(trusted | x) = σ(w·x + b); the score is the logit w·x + b (higher = more trusted).
** Fit. With y_i ∈ {0, 1} (1 = honest or chosen), class weights s_i = n / (2 n_{y_i}) and
** C > 0, minimise
**     F(w, b) = (1/n) Σ_i s_i ℓ(y_i, w·x_i + b) + |w|² / (2 C n),
**     ℓ(y, z) = log(1 + e^z) − y z,
** which has the minimiser of scikit-learn's LogisticRegression(C, class_weight='balanced')
** (its objective is C Σ s_i ℓ_i + |w|²/2, this one divided by C n: the same argmin; the bias is
** not penalised in either). F is strictly convex in w and convex in b: one minimiser. */
#include "eval/detect_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shard/shard.h"

static const double default_grid[] = {0.01, 0.1, 1.0, 10.0, 100.0};

struct sn_ngram_params sn_ngram_default_params(void)
{
    return (struct sn_ngram_params){.c = 1.0, .validation_fraction = 0.2, .seed = 0,
                                    .max_iter = 1000, .tol = 1e-7};
}

/* ---- terms ------------------------------------------------------------------------------- */

/* the terms of one text, back to back in b (each NUL-terminated), starting at start[i] */
struct terms {
    struct sn_buf b;
    size_t *start;
    size_t  n, cap;
};

static void terms_free(struct terms *t)
{
    sn_buf_free(&t->b);
    sn_free(t->start);
    memset(t, 0, sizeof *t);
}

static int terms_push(struct terms *t, const char *a, size_t na, const char *b, size_t nb,
                      struct sn_err *err)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        size_t *s = sn_realloc(t->start, cap * sizeof *s);
        if (!s)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        t->start = s;
        t->cap = cap;
    }
    t->start[t->n++] = t->b.len;
    int rc = sn_buf_append(&t->b, a, na, err);
    if (!rc && b) {
        rc = sn_buf_append(&t->b, " ", 1, err);
        if (!rc)
            rc = sn_buf_append(&t->b, b, nb, err);
    }
    return rc ? rc : sn_buf_append(&t->b, "", 1, err);
}

static bool word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

/* the terms of text (docs/eval.md "ngram"; the header above) into t, replacing what it held */
static int text_terms(const char *text, struct terms *t, struct sn_err *err)
{
    struct sn_buf tok[2] = {{0}, {0}}; /* the current token and the previous one, lower-cased */
    int cur = 0, rc = SN_OK;
    bool have_prev = false;
    sn_buf_reset(&t->b);
    t->n = 0;
    for (const unsigned char *p = (const unsigned char *)text; !rc && *p;) {
        struct sn_buf *b = &tok[cur];
        sn_buf_reset(b);
        if (word_byte(*p)) {
            while (!rc && *p && word_byte(*p)) {
                char c = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
                rc = sn_buf_append(b, &c, 1, err);
                p++;
            }
        } else if (*p >= 0x21 && *p <= 0x7e) {
            rc = sn_buf_append(b, p, 1, err);
            p++;
        } else {
            p++;
            continue;
        }
        if (!rc)
            rc = terms_push(t, b->data, b->len, NULL, 0, err);
        if (!rc && have_prev)
            rc = terms_push(t, tok[!cur].data, tok[!cur].len, b->data, b->len, err);
        have_prev = true;
        cur = !cur;
    }
    sn_buf_free(&tok[0]);
    sn_buf_free(&tok[1]);
    return rc;
}

int sn_ngram_terms(const char *text, struct sn_buf *out, struct sn_err *err)
{
    struct terms t = {0};
    int rc = text_terms(text, &t, err);
    for (size_t i = 0; !rc && i < t.n; i++)
        rc = sn_buf_printf(out, err, "%s\n", t.b.data + t.start[i]);
    terms_free(&t);
    return rc;
}

/* ---- vectors ----------------------------------------------------------------------------- */

/* sparse rows, CSR: row i is col/val[row[i] .. row[i+1]) */
struct csr {
    size_t   *row;  /* (n + 1) */
    uint32_t *col;  /* (nnz) vocabulary ids, ascending within a row */
    double   *val;  /* (nnz) (1 + ln tf) / L2 norm */
    size_t    n, nnz, cap;
};

static void csr_free(struct csr *m)
{
    sn_free(m->row);
    sn_free(m->col);
    sn_free(m->val);
    memset(m, 0, sizeof *m);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The vocabulary ids of t's terms, sorted into ids[0..*n): the terms of vocab; with grow
** (the vocabulary itself, while it is built) unknown terms are added first (ids in first-seen
** order), else they are left out. */
static int term_ids(struct sn_strmap *grow, const struct sn_strmap *vocab,
                    const struct terms *t, uint32_t **ids, size_t *cap, size_t *n,
                    struct sn_err *err)
{
    *n = 0;
    if (t->n > *cap) {
        uint32_t *v = sn_realloc(*ids, t->n * sizeof *v);
        if (!v)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        *ids = v;
        *cap = t->n;
    }
    for (size_t i = 0; i < t->n; i++) {
        const char *s = t->b.data + t->start[i];
        size_t len = strlen(s);
        if (grow) {
            if (grow->n >= UINT32_MAX)
                return sn_err_set(err, SN_E_ARG, "ngram: more than %" PRIu32 " terms", UINT32_MAX);
            int rc = sn_strmap_put(grow, s, len, grow->n, NULL, err);
            if (rc)
                return rc;
        }
        const size_t *v = sn_strmap_find(vocab, s, len);
        if (v)
            (*ids)[(*n)++] = (uint32_t)*v;
    }
    qsort(*ids, *n, sizeof **ids, cmp_u32);
    return SN_OK;
}

/* one row (sorted ids with repeats) as (id, (1 + ln tf) / norm) pairs into col/val; returns
** the number of pairs */
static size_t row_values(const uint32_t *ids, size_t n, uint32_t *col, double *val)
{
    size_t k = 0;
    double ss = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ids[j] == ids[i])
            j++;
        col[k] = ids[i];
        val[k] = 1.0 + log((double)(j - i));
        ss += val[k] * val[k];
        k++;
        i = j;
    }
    double norm = sqrt(ss);
    for (size_t i = 0; i < k && norm > 0; i++)
        val[i] /= norm;
    return k;
}

/* texts[idx[0..n)] (idx NULL: texts[0..n)) as rows of m over vocab; with grow = vocab, the
** vocabulary is built from these texts on the way */
static int build_rows(const char *const *texts, const size_t *idx, size_t n,
                      struct sn_strmap *grow, const struct sn_strmap *vocab, struct csr *m,
                      struct sn_err *err)
{
    struct terms t = {0};
    uint32_t *ids = NULL;
    size_t cap_ids = 0, n_ids = 0;
    int rc = SN_OK;
    memset(m, 0, sizeof *m);
    m->row = sn_calloc(n + 1, sizeof *m->row);
    if (!m->row)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        rc = text_terms(texts[idx ? idx[i] : i], &t, err);
        if (!rc)
            rc = term_ids(grow, vocab, &t, &ids, &cap_ids, &n_ids, err);
        if (!rc && m->nnz + n_ids > m->cap) {
            size_t cap = m->cap ? m->cap : 4096;
            while (cap < m->nnz + n_ids)
                cap *= 2;
            uint32_t *c = sn_realloc(m->col, cap * sizeof *c);
            if (c)
                m->col = c;
            double *v = c ? sn_realloc(m->val, cap * sizeof *v) : NULL;
            if (!v)
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory (%zu features)", cap);
            else {
                m->val = v;
                m->cap = cap;
            }
        }
        if (!rc) {
            m->nnz += row_values(ids, n_ids, m->col + m->nnz, m->val + m->nnz);
            m->row[i + 1] = m->nnz;
            m->n = i + 1;
        }
    }
    terms_free(&t);
    sn_free(ids);
    if (rc)
        csr_free(m);
    return rc;
}

/* ---- the fit ----------------------------------------------------------------------------- */

struct sn_ngram {
    struct sn_strmap vocab;   /* term -> weight index */
    double *w;                /* (D) */
    double  b;
    size_t  D;
    struct sn_ngram_info info;
};

/* log(1 + e^z), without overflow for large |z| */
static double softplus(double z)
{
    return fmax(z, 0.0) + log1p(exp(-fabs(z)));
}

static double sigmoid(double z)
{
    return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
}

struct problem {
    const struct csr *X;
    const bool *y;
    const double *s;   /* (n) class weights */
    double inv_cn;     /* 1 / (C n) */
    size_t D;          /* weights; the bias is x[D] */
};

/* F(x) and its gradient g (D + 1) at x = (w, b); the header's F */
static double objective(const struct problem *P, const double *x, double *g)
{
    const struct csr *X = P->X;
    size_t n = X->n, D = P->D;
    double f = 0, inv_n = 1.0 / (double)n;
    memset(g, 0, (D + 1) * sizeof *g);
    for (size_t i = 0; i < n; i++) {
        double z = x[D];
        for (size_t k = X->row[i]; k < X->row[i + 1]; k++)
            z += X->val[k] * x[X->col[k]];
        double yi = P->y[i] ? 1.0 : 0.0;
        f += P->s[i] * (softplus(z) - yi * z);
        double r = P->s[i] * (sigmoid(z) - yi) * inv_n;
        for (size_t k = X->row[i]; k < X->row[i + 1]; k++)
            g[X->col[k]] += r * X->val[k];
        g[D] += r;
    }
    f *= inv_n;
    double ww = 0;
    for (size_t j = 0; j < D; j++) {
        ww += x[j] * x[j];
        g[j] += x[j] * P->inv_cn;
    }
    return f + 0.5 * ww * P->inv_cn;
}

static double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

static double dotv(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

enum { LBFGS_M = 10 }; /* correction pairs kept */

/* Minimises F by L-BFGS (two-loop recursion, LBFGS_M pairs) with a backtracking line search
** (Armijo, c1 = 1e-4, halving from step 1; the first direction is -g / |g|_2). Stops when
** max |∂F| <= tol, after max_iter iterations, or when the line search finds no decrease (then
** x is the last point that decreased F). x (D + 1) holds the start and receives the result. */
static int lbfgs(const struct problem *P, double *x, int max_iter, double tol, int *iters,
                 bool *converged, struct sn_err *err)
{
    size_t N = P->D + 1;
    /* scratch, one block: g, d, x_new, g_new, s[M], y[M] */
    size_t per = 4 + 2 * LBFGS_M;
    if (N > SIZE_MAX / sizeof(double) / per)
        return sn_err_set(err, SN_E_NOMEM, "ngram: %zu weights are too many", N);
    double *blk = sn_calloc(N * per, sizeof *blk);
    if (!blk)
        return sn_err_set(err, SN_E_NOMEM, "out of memory (%zu weights)", N);
    double *g = blk, *d = g + N, *xn = d + N, *gn = xn + N, *S = gn + N, *Y = S + LBFGS_M * N;
    double rho[LBFGS_M], alpha[LBFGS_M];
    size_t m = 0, head = 0; /* pairs stored; next slot */
    double f = objective(P, x, g);
    *converged = false;
    int it = 0;
    for (; it < max_iter; it++) {
        if (max_abs(g, N) <= tol) {
            *converged = true;
            break;
        }
        /* d = -H g (two-loop recursion, newest pair first) */
        for (size_t i = 0; i < N; i++)
            d[i] = -g[i];
        for (size_t k = 0; k < m; k++) {
            size_t j = (head + LBFGS_M - 1 - k) % LBFGS_M;
            alpha[j] = rho[j] * dotv(S + j * N, d, N);
            for (size_t i = 0; i < N; i++)
                d[i] -= alpha[j] * Y[j * N + i];
        }
        double gamma = 1.0;
        if (m) {
            size_t j = (head + LBFGS_M - 1) % LBFGS_M;
            gamma = dotv(S + j * N, Y + j * N, N) / dotv(Y + j * N, Y + j * N, N);
        } else {
            double gn2 = sqrt(dotv(g, g, N));
            gamma = gn2 > 0 ? 1.0 / gn2 : 1.0;
        }
        for (size_t i = 0; i < N; i++)
            d[i] *= gamma;
        for (size_t k = m; k-- > 0;) {
            size_t j = (head + LBFGS_M - 1 - k) % LBFGS_M;
            double beta = rho[j] * dotv(Y + j * N, d, N);
            for (size_t i = 0; i < N; i++)
                d[i] += (alpha[j] - beta) * S[j * N + i];
        }
        double gd = dotv(g, d, N);
        if (!(gd < 0)) { /* not a descent direction (rounding): restart from the gradient */
            m = 0;
            for (size_t i = 0; i < N; i++)
                d[i] = -g[i];
            gd = -dotv(g, g, N);
        }
        double step = 1.0, fn = f;
        bool ok = false;
        for (int ls = 0; ls < 60; ls++) {
            for (size_t i = 0; i < N; i++)
                xn[i] = x[i] + step * d[i];
            fn = objective(P, xn, gn);
            if (fn <= f + 1e-4 * step * gd) {
                ok = true;
                break;
            }
            step *= 0.5;
        }
        if (!ok)
            break; /* no decrease left at double precision: x is as good as it gets */
        /* the new pair s = x_new - x, y = g_new - g, kept when its curvature s·y is positive
        ** (strict convexity gives that up to rounding); a rejected pair leaves the stored
        ** ones, the oldest included, as they were */
        double sy = 0, ss = 0, yy = 0;
        for (size_t i = 0; i < N; i++) {
            double si = xn[i] - x[i], yi = gn[i] - g[i];
            sy += si * yi;
            ss += si * si;
            yy += yi * yi;
        }
        if (sy > 1e-12 * sqrt(ss * yy)) {
            double *sj = S + head * N, *yj = Y + head * N;
            for (size_t i = 0; i < N; i++) {
                sj[i] = xn[i] - x[i];
                yj[i] = gn[i] - g[i];
            }
            rho[head] = 1.0 / sy;
            head = (head + 1) % LBFGS_M;
            if (m < LBFGS_M)
                m++;
        }
        memcpy(x, xn, N * sizeof *x);
        memcpy(g, gn, N * sizeof *g);
        double df = f - fn;
        f = fn;
        if (df <= 1e-16 * fmax(1.0, fabs(f)) && max_abs(g, N) <= 100 * tol) {
            *converged = true; /* flat to rounding, gradient near the tolerance */
            it++;
            break;
        }
    }
    if (!*converged && max_abs(g, N) <= tol)
        *converged = true;
    *iters = it;
    sn_free(blk);
    return SN_OK;
}

/* fits a model on texts[idx[0..n)] (idx NULL: all n) at C */
static int fit(const struct sn_ngram_params *p, double C, const char *const *texts,
               const bool *label, const size_t *idx, size_t n, struct sn_ngram **out,
               struct sn_err *err)
{
    *out = NULL;
    size_t n_pos = 0;
    for (size_t i = 0; i < n; i++)
        n_pos += label[idx ? idx[i] : i];
    if (n_pos == 0 || n_pos == n)
        return sn_err_set(err, SN_E_ARG, "ngram: training needs texts of both classes (got %zu "
                          "trusted of %zu)", n_pos, n);
    struct sn_ngram *m = sn_calloc(1, sizeof *m);
    struct csr X = {0};
    bool *y = sn_malloc(n * sizeof *y);
    double *s = sn_malloc(n * sizeof *s);
    int rc = m && y && s ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (!rc)
        rc = build_rows(texts, idx, n, &m->vocab, &m->vocab, &X, err);
    if (!rc) {
        m->D = m->vocab.n;
        m->w = sn_calloc(m->D + 1, sizeof *m->w); /* (D + 1): the bias rides at the end */
        if (!m->w)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory (%zu features)", m->D);
    }
    if (!rc) {
        /* class-balanced weights n / (2 n_class) */
        double wp = (double)n / (2.0 * (double)n_pos), wn = (double)n / (2.0 * (double)(n - n_pos));
        for (size_t i = 0; i < n; i++) {
            y[i] = label[idx ? idx[i] : i];
            s[i] = y[i] ? wp : wn;
        }
        struct problem P = {&X, y, s, 1.0 / (C * (double)n), m->D};
        int iters = 0;
        bool conv = false;
        rc = lbfgs(&P, m->w, p->max_iter, p->tol, &iters, &conv, err);
        m->b = m->w[m->D];
        m->info.c = C;
        m->info.n_texts = n;
        m->info.n_trusted = n_pos;
        m->info.n_features = m->D;
        m->info.iterations = iters;
        m->info.converged = conv;
    }
    csr_free(&X);
    sn_free(y);
    sn_free(s);
    if (rc) {
        sn_ngram_free(m);
        return rc;
    }
    *out = m;
    return SN_OK;
}

static int check_params(const struct sn_ngram_params *p, struct sn_err *err)
{
    if (!(p->c > 0) || !isfinite(p->c) || p->max_iter < 1 || !(p->tol > 0) ||
        !(p->validation_fraction > 0 && p->validation_fraction < 1) ||
        p->n_c_grid > SN_NGRAM_MAX_GRID || (p->n_c_grid && !p->c_grid))
        return sn_err_set(err, SN_E_ARG, "ngram: c > 0, max_iter >= 1, tol > 0, "
                          "validation_fraction in (0, 1), at most %d grid values",
                          SN_NGRAM_MAX_GRID);
    for (size_t i = 0; i < p->n_c_grid; i++)
        if (!(p->c_grid[i] > 0) || !isfinite(p->c_grid[i]))
            return sn_err_set(err, SN_E_ARG, "ngram: grid value %g is not a positive number",
                              p->c_grid[i]);
    return SN_OK;
}

int sn_ngram_train(const struct sn_ngram_params *p, const char *const *texts, const bool *label,
                   size_t n, struct sn_ngram **out, struct sn_err *err)
{
    *out = NULL;
    int rc = check_params(p, err);
    return rc ? rc : fit(p, p->c, texts, label, NULL, n, out, err);
}

/* u in [0, 1) of a group for the validation split: the top 53 bits of
** SHA-256("sentinel-ngram-validation/1\n<seed>\n<group>") */
static double group_u(uint64_t seed, const char *group)
{
    char salt[64];
    int k = snprintf(salt, sizeof salt, "sentinel-ngram-validation/1\n%" PRIu64 "\n", seed);
    struct sn_sha256 h;
    uint8_t d[32];
    sn_sha256_init(&h);
    sn_sha256_update(&h, salt, (size_t)k);
    sn_sha256_update(&h, group, strlen(group));
    sn_sha256_final(&h, d);
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = x << 8 | d[i];
    return (double)(x >> 11) / 9007199254740992.0;
}

int sn_ngram_select(const struct sn_ngram_params *p, const char *const *texts, const bool *label,
                    const char *const *groups, size_t n, struct sn_ngram **out,
                    struct sn_err *err)
{
    *out = NULL;
    int rc = check_params(p, err);
    if (rc)
        return rc;
    const double *grid = p->n_c_grid ? p->c_grid : default_grid;
    size_t n_grid = p->n_c_grid ? p->n_c_grid : sizeof default_grid / sizeof default_grid[0];
    size_t *fit_i = sn_malloc((n ? n : 1) * sizeof *fit_i);
    size_t *val_i = sn_malloc((n ? n : 1) * sizeof *val_i);
    struct sn_strmap val_groups = {0};
    if (!fit_i || !val_i) {
        sn_free(fit_i);
        sn_free(val_i);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    size_t n_fit = 0, n_val = 0, pos_fit = 0, pos_val = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *g = groups && groups[i] ? groups[i] : "";
        if (group_u(p->seed, g) < p->validation_fraction) {
            val_i[n_val++] = i;
            pos_val += label[i];
            rc = sn_strmap_put(&val_groups, g, strlen(g), 0, NULL, err);
        } else {
            fit_i[n_fit++] = i;
            pos_fit += label[i];
        }
    }
    struct sn_ngram_info sel = {0};
    sel.n_grid = n_grid;
    sel.n_validation = n_val;
    sel.n_validation_groups = val_groups.n;
    double best_c = p->c, best_loss = INFINITY;
    if (!rc && (pos_fit == 0 || pos_fit == n_fit || pos_val == 0 || pos_val == n_val)) {
        snprintf(sel.no_selection, sizeof sel.no_selection, "the validation split (%zu texts "
                 "of %zu groups) or the rest lacks a class: C = %g unselected", n_val,
                 val_groups.n, p->c);
    }
    for (size_t k = 0; !rc && !sel.no_selection[0] && k < n_grid; k++) {
        struct sn_ngram *m = NULL;
        rc = fit(p, grid[k], texts, label, fit_i, n_fit, &m, err);
        /* class-balanced log loss on the validation texts: weights n_val / (2 n_class) */
        double loss = 0, wp = (double)n_val / (2.0 * (double)pos_val),
               wn = (double)n_val / (2.0 * (double)(n_val - pos_val));
        for (size_t i = 0; !rc && i < n_val; i++) {
            double z;
            rc = sn_ngram_score(m, texts[val_i[i]], &z, err);
            bool yi = label[val_i[i]];
            loss += (yi ? wp : wn) * (softplus(z) - (yi ? z : 0.0));
        }
        loss /= (double)n_val;
        sn_ngram_free(m);
        sel.c_grid[k] = grid[k];
        sel.validation_loss[k] = loss;
        if (!rc && loss < best_loss) { /* ties keep the smaller C: the grid ascends */
            best_loss = loss;
            best_c = grid[k];
        }
    }
    sn_free(fit_i);
    sn_free(val_i);
    sn_strmap_free(&val_groups);
    if (!rc) /* the chosen C refitted on every text */
        rc = fit(p, best_c, texts, label, NULL, n, out, err);
    if (!rc) {
        struct sn_ngram_info *in = &(*out)->info;
        sel.c = in->c;
        sel.n_texts = in->n_texts;
        sel.n_trusted = in->n_trusted;
        sel.n_features = in->n_features;
        sel.iterations = in->iterations;
        sel.converged = in->converged;
        sel.selected = !sel.no_selection[0];
        *in = sel;
    }
    return rc;
}

int sn_ngram_score(const struct sn_ngram *m, const char *text, double *logit, struct sn_err *err)
{
    struct csr X;
    const char *t[1] = {text ? text : ""};
    *logit = NAN;
    int rc = build_rows(t, NULL, 1, NULL, &m->vocab, &X, err);
    if (rc)
        return rc;
    double z = m->b;
    for (size_t k = 0; k < X.nnz; k++)
        z += X.val[k] * m->w[X.col[k]];
    csr_free(&X);
    *logit = z;
    return SN_OK;
}

double sn_ngram_logit(const struct sn_ngram *m, const char *text)
{
    double z;
    struct sn_err err = {0};
    return sn_ngram_score(m, text, &z, &err) ? NAN : z;
}

const struct sn_ngram_info *sn_ngram_get_info(const struct sn_ngram *m)
{
    return &m->info;
}

struct sn_ngram_info *sn_ngram_info_mut(struct sn_ngram *m)
{
    return &m->info;
}

void sn_ngram_free(struct sn_ngram *m)
{
    if (!m)
        return;
    sn_strmap_free(&m->vocab);
    sn_free(m->w);
    sn_free(m);
}

static int rank_ngram(void *ctx, const struct sn_detect_view *v, double *scores,
                      struct sn_err *err)
{
    for (size_t i = 0; i < v->n_msgs; i++) {
        int rc = sn_ngram_score(ctx, v->msgs[i].text, &scores[i], err);
        if (rc)
            return rc;
    }
    return SN_OK;
}

struct sn_detect_ranker sn_ngram_ranker(struct sn_ngram *m)
{
    return (struct sn_detect_ranker){"ngram", rank_ngram, m};
}
