/* lora/lora_config.h: the settings of a LoRA adapter (PEFT's LoraConfig: r, lora_alpha,
** lora_dropout, target_modules, use_rslora; docs/formats.md "Adapter checkpoint") and their
** checks, apart from the layers in lora/lora.h so that what reads a recipe or an
** adapter_config.json needs no libtorch (docs/design.md §3, library lora_config). */
#ifndef SN_LORA_CONFIG_H
#define SN_LORA_CONFIG_H
#include "common/common.h"

/* The seven Qwen2 projections LoRA may target (recipe key train.lora.target_modules).
** Append-only. */
enum sn_lora_target {
    SN_LORA_Q_PROJ,
    SN_LORA_K_PROJ,
    SN_LORA_V_PROJ,
    SN_LORA_O_PROJ,
    SN_LORA_GATE_PROJ,
    SN_LORA_UP_PROJ,
    SN_LORA_DOWN_PROJ,
    SN_LORA_TARGET_COUNT
};
#define SN_LORA_ALL_TARGETS ((1u << SN_LORA_TARGET_COUNT) - 1u)

/* "q_proj", ...; NULL when out of range. */
const char *sn_lora_target_name(enum sn_lora_target t);
/* Parses a module name ("q_proj"); false if unknown. */
bool        sn_lora_target_parse(const char *name, enum sn_lora_target *out);

struct sn_lora_config {
    int      r;          /* rank, >= 1 */
    double   alpha;      /* lora_alpha; scale = alpha / r */
    double   dropout;    /* lora_dropout in [0, 1) */
    unsigned targets;    /* bit (1u << enum sn_lora_target) per targeted projection */
    bool     use_rslora; /* scale = alpha / sqrt(r) instead of alpha / r (PEFT use_rslora) */
};
/* alpha / r, or alpha / sqrt(r) with use_rslora. A format that only knows alpha / r (a GGUF
** LoRA's adapter.lora.alpha) stores scale · r as its alpha. */
double sn_lora_scale(const struct sn_lora_config *c);
/* PEFT's defaults except targets: r 8, alpha 8, dropout 0, q_proj + v_proj. */
struct sn_lora_config sn_lora_default_config(void);
/* Checks ranges; a message names the field. */
int sn_lora_config_check(const struct sn_lora_config *c, struct sn_err *err);

#endif /* SN_LORA_CONFIG_H */
