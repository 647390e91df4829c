/* cli/cmd_inspect_model.h: `sentinel inspect` of safetensors files and of the directories
** training writes: checkpoints, training runs, Hugging Face models, PEFT adapters
** (cli/cmd_inspect.c dispatches here; docs/train.md, docs/formats.md). Private to cli/.
** Both print to stdout (text, or JSON with json) and return an exit status (SN_EXIT_*). */
#ifndef SN_CLI_CMD_INSPECT_MODEL_H
#define SN_CLI_CMD_INSPECT_MODEL_H
#include <stdbool.h>

int sn_inspect_safetensors(const char *path, bool json);
/* verify: check every file of a checkpoint (a run's latest one) against the SHA-256 recorded
** in its trainer_state.json; a mismatch is named on stderr and the status is 1. */
int sn_inspect_model_dir(const char *dir, bool json, bool verify);

#endif
