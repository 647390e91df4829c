/* tests/test_lora_group.c: sn_lora_group_forward (lora/lora.h), the fused q|k|v and gate|up
** projections of the decoder, against one sn_lora_linear_forward per projection, in f64:
**  - outputs side by side equal the separate outputs, and the gradients of x, of every A and
**    B and (full fine-tuning) of every W and bias equal theirs: adapters on some members only,
**    a member with a different scale, a merged member, no adapters at all;
**  - dropout in training draws the same masks in the same order as the separate calls;
**  - a bias on some members but not others is refused. */
#include "lora/lora.h"
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

enum { IN = 5, NP = 3, MAXN = 64 };
static const int64_t OUTS[NP] = {6, 2, 3};
static struct sn_err E;

static struct sn_tensor *rnd(const int64_t *shape, int nd, struct sn_aten_gen *g, bool grad)
{
    struct sn_tensor *t = NULL;
    CHECK(sn_aten_randn(shape, nd, SN_DTYPE_F64, SN_CPU, g, &t, &E) == SN_OK);
    if (t && grad)
        CHECK(sn_aten_set_requires_grad(t, true, &E) == SN_OK);
    return t;
}

struct group {
    struct sn_lora_linear  l[NP];
    bool                   has_l[NP];
    struct sn_tensor      *W[NP], *b[NP], *x, *R; /* R: weights of the scalar loss */
};

static void group_init(struct group *G, unsigned lora_mask, bool full, struct sn_aten_gen *g)
{
    memset(G, 0, sizeof *G);
    struct sn_lora_config c = sn_lora_default_config();
    c.r = 2;
    c.alpha = 3.0;
    int64_t sx[3] = {2, 3, IN}, sR[3] = {2, 3, 11};
    G->x = rnd(sx, 3, g, true);
    G->R = rnd(sR, 3, g, false);
    for (int i = 0; i < NP; i++) {
        int64_t sw[2] = {OUTS[i], IN}, sb[1] = {OUTS[i]};
        G->W[i] = rnd(sw, 2, g, full);
        G->b[i] = rnd(sb, 1, g, full);
        if (!(lora_mask & (1u << i)))
            continue;
        CHECK(sn_lora_linear_init(&G->l[i], IN, OUTS[i], &c, SN_DTYPE_F64, SN_CPU, g, &E) == 0);
        /* B starts at zero: give it values so the adapter term counts */
        struct sn_tensor *nb = NULL;
        int64_t sB[2] = {OUTS[i], 2};
        nb = rnd(sB, 2, g, false);
        bool gm = sn_aten_no_grad_enter();
        CHECK(sn_aten_copy_(G->l[i].B, nb, &E) == SN_OK);
        sn_aten_no_grad_exit(gm);
        sn_tensor_free(nb);
        G->has_l[i] = true;
    }
}

static void group_free(struct group *G)
{
    for (int i = 0; i < NP; i++) {
        if (G->has_l[i])
            sn_lora_linear_free(&G->l[i]);
        sn_tensor_free(G->W[i]);
        sn_tensor_free(G->b[i]);
    }
    sn_tensor_free(G->x);
    sn_tensor_free(G->R);
}

/* Every tensor that may receive a gradient, in a fixed order (NULL entries skipped). */
static int grad_slots(struct group *G, struct sn_tensor **out)
{
    int n = 0;
    out[n++] = G->x;
    for (int i = 0; i < NP; i++) {
        out[n++] = G->W[i];
        out[n++] = G->b[i];
        out[n++] = G->has_l[i] ? G->l[i].A : NULL;
        out[n++] = G->has_l[i] ? G->l[i].B : NULL;
    }
    return n;
}

/* The output (2, 3, Σ out) either fused or as the separate projections side by side; then
** backward of Σ out·R and the gradients, flattened into grads (NAN where none). */
static void run(struct group *G, bool fused, bool bias, bool training, uint64_t drop_seed,
                double *y, double *grads, size_t *n_grads)
{
    struct sn_aten_gen *dg = NULL;
    CHECK(sn_aten_gen_create(drop_seed, SN_CPU, &dg, &E) == SN_OK);
    struct sn_tensor *slots[1 + 4 * NP];
    int ns = grad_slots(G, slots);
    for (int i = 0; i < ns; i++)
        if (slots[i])
            sn_aten_zero_grad(slots[i]);
    const struct sn_lora_linear *lp[NP];
    for (int i = 0; i < NP; i++)
        lp[i] = G->has_l[i] ? &G->l[i] : NULL;
    struct sn_tensor *out = NULL;
    if (fused) {
        CHECK(sn_lora_group_forward(lp, (const struct sn_tensor *const *)G->W,
                                    bias ? (const struct sn_tensor *const *)G->b : NULL, NP,
                                    G->x, training, dg, &out, &E) == SN_OK);
    } else {
        struct sn_tensor *parts[NP] = {0};
        for (int i = 0; i < NP; i++)
            CHECK(sn_lora_linear_forward(lp[i], G->x, G->W[i], bias ? G->b[i] : NULL,
                                         training, dg, &parts[i], &E) == SN_OK);
        CHECK(sn_aten_cat(parts, NP, -1, &out, &E) == SN_OK);
        for (int i = 0; i < NP; i++)
            sn_tensor_free(parts[i]);
    }
    sn_aten_gen_free(dg);
    CHECK_MSG(out != NULL, "%s", E.msg);
    if (!out)
        return;
    CHECK(sn_tensor_size(out, -1) == OUTS[0] + OUTS[1] + OUTS[2]);
    CHECK(sn_aten_to_host(out, y, SN_DTYPE_F64, 2 * 3 * 11, &E) == SN_OK);
    struct sn_tensor *p = NULL, *loss = NULL;
    CHECK(sn_aten_mul(out, G->R, &p, &E) == SN_OK);
    CHECK(sn_aten_sum_all(p, &loss, &E) == SN_OK);
    CHECK(sn_aten_backward(loss, NULL, false, &E) == SN_OK);
    size_t k = 0;
    for (int i = 0; i < ns; i++) {
        if (!slots[i] || !sn_aten_requires_grad(slots[i]))
            continue;
        struct sn_tensor *gt = NULL;
        CHECK(sn_aten_grad(slots[i], &gt, &E) == SN_OK);
        int64_t n = sn_tensor_numel(slots[i]);
        if (gt && sn_tensor_defined(gt))
            CHECK(sn_aten_to_host(gt, grads + k, SN_DTYPE_F64, (size_t)n, &E) == SN_OK);
        else
            for (int64_t j = 0; j < n; j++)
                grads[k + (size_t)j] = NAN;
        k += (size_t)n;
        sn_tensor_free(gt);
    }
    *n_grads = k;
    sn_tensor_free(p);
    sn_tensor_free(loss);
    sn_tensor_free(out);
}

static void compare(const char *what, struct group *G, bool bias, bool training)
{
    static double y0[66], y1[66], g0[1024], g1[1024];
    size_t n0 = 0, n1 = 0;
    run(G, false, bias, training, 7, y0, g0, &n0);
    run(G, true, bias, training, 7, y1, g1, &n1);
    double worst = 0;
    for (int i = 0; i < 66; i++)
        worst = fmax(worst, fabs(y0[i] - y1[i]));
    CHECK_MSG(worst <= 1e-13, "%s: outputs differ by %.3g", what, worst);
    CHECK_MSG(n0 == n1 && n0 > 0, "%s: %zu vs %zu gradient values", what, n0, n1);
    worst = 0;
    int missing = 0;
    for (size_t i = 0; i < n0 && i < n1; i++) {
        if (isnan(g0[i]) != isnan(g1[i]))
            missing++;
        else if (!isnan(g0[i]))
            worst = fmax(worst, fabs(g0[i] - g1[i]));
    }
    CHECK_MSG(missing == 0, "%s: %d gradients present on one side only", what, missing);
    CHECK_MSG(worst <= 1e-13, "%s: gradients differ by %.3g", what, worst);
}

int main(void)
{
    struct sn_aten_gen *g = NULL;
    CHECK(sn_aten_gen_create(20261127, SN_CPU, &g, &E) == SN_OK);
    struct group G;

    group_init(&G, 0x5u, false, g); /* adapters on members 0 and 2 (q and v), bias */
    compare("q,v adapters, frozen base", &G, true, false);
    compare("q,v adapters, frozen base, no bias", &G, false, false);
    G.l[2].scale = 0.7; /* a member with its own scale (rsLoRA beside plain) */
    compare("q,v adapters, scales 1.5 and 0.7", &G, true, false);
    CHECK(sn_lora_merge(&G.l[0], G.W[0], &E) == SN_OK); /* a merged member: no adapter term */
    compare("q merged, v live", &G, true, false);
    group_free(&G);

    group_init(&G, 0x7u, true, g); /* every member adapted, W and b trained too */
    compare("all adapters, full", &G, true, false);
    for (int i = 0; i < NP; i++)
        G.l[i].dropout = i == 1 ? 0.0 : 0.5;
    compare("dropout 0.5 on two members, training", &G, true, true);
    group_free(&G);

    group_init(&G, 0x0u, true, g); /* no adapters */
    compare("no adapters, full", &G, true, false);
    /* a bias on some members only */
    struct sn_tensor *bias[NP] = {G.b[0], NULL, G.b[2]}, *out = NULL;
    CHECK(sn_lora_group_forward(NULL, (const struct sn_tensor *const *)G.W,
                                (const struct sn_tensor *const *)bias, NP, G.x, false, NULL,
                                &out, &E) == SN_E_ARG && !out);
    CHECK(strstr(E.msg, "bias") != NULL);
    CHECK(sn_lora_group_forward(NULL, (const struct sn_tensor *const *)G.W, NULL, 0, G.x, false,
                                NULL, &out, &E) == SN_E_ARG && !out);
    group_free(&G);

    sn_aten_gen_free(g);
    return sn_test_done();
}
