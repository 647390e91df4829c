/* train/recipe_internal.h: what the train section's decoder (train/recipe.c) takes from the
** table of Hugging Face names (train/recipe_hf.c; docs/train.md "Hugging Face names"). Not
** for other files. */
#ifndef SN_TRAIN_RECIPE_INTERNAL_H
#define SN_TRAIN_RECIPE_INTERNAL_H
#include "train/recipe.h"

/* The name under which sec holds the setting `key` (a sentinel key of the section): key when
** present, else the Hugging Face name that sets it as is (learning_rate for lr) when that is
** present, else key. Borrowed: static or sec's. */
const char *sn_train_hf_name(const cJSON *sec, const char *key);
/* Every key of sec is a sentinel key of `keys` (NULL-terminated), or a Hugging Face name of
** one whose setting no other key of sec also gives; a name sentinel cannot honour is refused
** with the reason and the sentinel key to use; any other key is unknown, with the nearest
** key or Hugging Face name suggested. SN_E_ARG with "recipe: train.<key> ..." otherwise. */
int sn_train_hf_check(const cJSON *sec, const char *const *keys, struct sn_err *err);
/* The Hugging Face names whose values are translated (num_train_epochs, save_total_limit,
** lr_scheduler_type and its kwargs, bf16, fp16, metric_for_best_model, greater_is_better,
** optim, max_steps = -1), applied to p after the sentinel keys were read. */
int sn_train_hf_apply(const cJSON *sec, struct sn_train_params *p, struct sn_err *err);

/* sn_train_recipe_sets_win (train/recipe.h) with the section's sentinel keys. */
void sn_train_hf_sets_win(cJSON *recipe, const char *const *keys, const char *const *sets,
                          size_t n);

#endif
