/* lora/lora_config.c: LoRA settings, their names and checks (lora/lora_config.h). */
#include "lora/lora_config.h"

#include <math.h>
#include <string.h>

static const char *const target_names[] = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
};
_Static_assert(sizeof target_names / sizeof target_names[0] == SN_LORA_TARGET_COUNT,
               "target names out of sync");

const char *sn_lora_target_name(enum sn_lora_target t)
{
    return (unsigned)t < SN_LORA_TARGET_COUNT ? target_names[t] : NULL;
}

bool sn_lora_target_parse(const char *name, enum sn_lora_target *out)
{
    for (int i = 0; i < SN_LORA_TARGET_COUNT; i++) {
        if (!strcmp(name, target_names[i])) {
            *out = (enum sn_lora_target)i;
            return true;
        }
    }
    return false;
}

struct sn_lora_config sn_lora_default_config(void)
{
    struct sn_lora_config c = {
        .r = 8,
        .alpha = 8.0,
        .dropout = 0.0,
        .targets = (1u << SN_LORA_Q_PROJ) | (1u << SN_LORA_V_PROJ),
    };
    return c;
}

double sn_lora_scale(const struct sn_lora_config *c)
{
    return c->use_rslora ? c->alpha / sqrt((double)c->r) : c->alpha / c->r;
}

int sn_lora_config_check(const struct sn_lora_config *c, struct sn_err *err)
{
    if (c->r < 1 || c->r > 65536)
        return sn_err_set(err, SN_E_ARG, "lora: r = %d (expected 1..65536)", c->r);
    if (!(c->alpha > 0.0) || !isfinite(c->alpha))
        return sn_err_set(err, SN_E_ARG, "lora: lora_alpha = %g (expected > 0)", c->alpha);
    if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        return sn_err_set(err, SN_E_ARG, "lora: lora_dropout = %g (expected in [0, 1))",
                          c->dropout);
    if (c->targets == 0 || (c->targets & ~SN_LORA_ALL_TARGETS))
        return sn_err_set(err, SN_E_ARG, "lora: target_modules must name at least one of "
                          "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    return SN_OK;
}
