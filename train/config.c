/* train/config.c: the built-in model configurations (train/train.h). config.json itself is
** parsed, checked and written by hf/config.c (hf/hf.h). */
#include "train/train_internal.h"

#include <string.h>

struct sn_model_config sn_model_config_tiny(int64_t vocab_size)
{
    struct sn_model_config c = {
        .hidden_size = 64,
        .intermediate_size = 128,
        .num_hidden_layers = 2,
        .num_attention_heads = 4,
        .num_key_value_heads = 2,
        .vocab_size = vocab_size,
        .max_position_embeddings = 2048,
        .rms_norm_eps = 1e-6,
        .rope_theta = 10000.0,
        .tie_word_embeddings = false,
        .pad_token_id = -1,
        .torch_dtype = "float32",
    };
    return c;
}

struct sn_model_config sn_model_config_small(int64_t vocab_size)
{
    struct sn_model_config c = sn_model_config_tiny(vocab_size);
    c.hidden_size = 256;
    c.intermediate_size = 768;
    c.num_hidden_layers = 4;
    c.num_attention_heads = 8;
    c.num_key_value_heads = 4;
    return c;
}

struct sn_model_config sn_model_config_mini(int64_t vocab_size)
{
    struct sn_model_config c = sn_model_config_tiny(vocab_size);
    c.hidden_size = 128;
    c.intermediate_size = 384;
    c.num_hidden_layers = 4;
    return c;
}

struct sn_model_config sn_model_config_seeded(const char *name, int64_t vocab_size)
{
    if (!strcmp(name, "tiny"))
        return sn_model_config_tiny(vocab_size);
    if (!strcmp(name, "mini"))
        return sn_model_config_mini(vocab_size);
    return sn_model_config_small(vocab_size);
}
