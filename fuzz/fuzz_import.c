/* fuzz/fuzz_import.c: the importers (import/) on arbitrary bytes. The first byte picks the
** reader and the path the record is taken to come from (collab-attack MMLU / MedMCQA /
** TruthfulQA / ScaLR / legacy file, or a chat log); the rest is one source line. Invariants
** (abort on violation): a refused record gives SN_E_FORMAT (or SN_E_NOMEM) with a message that
** starts with its file:line; an accepted one is exactly one line that the project's trajectory
** reader accepts, with one message per agent per round; the source answer rule never claims a
** letter outside the options. */
#include "import/import.h"
#include "data/data.h"

#include <stdlib.h>
#include <string.h>

static const char *const paths[] = {
    "mmlu/adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo/adv_mmlu_100_3_3_1_0-gpt-3.5-turbo-gpt-3.5-turbo.jsonl",
    "medmcqa/100_3_3_gpt-3.5-turbo/medmcqa_100_3_3_1.jsonl",
    "truthfulqa/100_3_3/truthfulqa_100_3_3_2.jsonl",
    "scalr/100_3_3_Qwen1.5-14B-Chat/scalr_100_3_3_0.jsonl",
    "mmlu/adv_mmlu_100_3_3_2.jsonl",
    "logs/mine.jsonl",
};
#define N_PATHS (sizeof paths / sizeof paths[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 20)
        return 0;
    unsigned sel = data[0] % N_PATHS;
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    struct sn_import_params p = sn_import_default_params();
    p.format = sel == N_PATHS - 1 ? "chatlog" : "collab-attack";
    p.answers = (data[0] / N_PATHS) & 1 ? SN_IMPORT_ANSWERS_SENTINEL : SN_IMPORT_ANSWERS_SOURCE;
    struct sn_buf out = {0};
    struct sn_err err = {0};
    struct sn_import_summary sum = {0};
    int rc = sn_import_record(&p, paths[sel], json, len, 0, &out, &sum, &err);
    if (rc) {
        char where[1200];
        snprintf(where, sizeof where, "%s:1", paths[sel]);
        if ((rc != SN_E_FORMAT && rc != SN_E_NOMEM) ||
            (rc == SN_E_FORMAT && strncmp(err.msg, where, strlen(where)) != 0))
            abort();
    } else {
        if (!out.data || memchr(out.data, '\n', out.len))
            abort();
        struct sn_traj *t = NULL;
        struct sn_err e2 = {0};
        if (sn_traj_parse(out.data, out.len, "out:1", &t, &e2))
            abort();
        for (size_t r = 0; r < t->n_rounds; r++)
            if (t->rounds[r].n_msgs != t->n_agents)
                abort();
        sn_traj_free(t);
    }
    sn_buf_free(&out);
    /* the source rule on the bytes as a reply (NUL-terminated copy) */
    char *text = malloc(len + 1);
    if (!text)
        return 0;
    memcpy(text, json, len);
    text[len] = '\0';
    static const char *const opts[] = {"a", "bb", "", "Paris", "x.", "13"};
    size_t n_opt = 2 + data[0] % 5;
    char raw[64];
    if (sn_import_collab_answer(sel == 0 ? "mmlu" : "truthfulqa", text, opts, n_opt, raw,
                                sizeof raw) &&
        (strlen(raw) != 1 || raw[0] < 'A' || raw[0] >= 'A' + (int)n_opt))
        abort();
    free(text);
    return 0;
}
