/* data/datasets.c: readers for the on-disk forms of the question datasets 
** (docs/simulate.md#datasets). Every error names file:line and what
** was expected. The project ships none of these files; tests write small ones.
**
**   mmlu           header-less CSV rows `question,A,B,C,D,answer` (the hendrycks/test release;
**                  the subject comes from the file name `<subject>_test.csv`), or JSONL with
**                  question + choices[4] + answer (0-3 or a letter) (the HF export), or JSONL
**                  with input/A/B/C/D/target.
**   commonsenseqa  JSONL {"id","question":{"stem","choices":[{"label","text"}]},"answerKey"}
**   gsm8k          JSONL {"question","answer"}: the worked solution, then "#### n"
**   truthfulqa     {"question","mc1_targets":{"choices":[..],"labels":[..]}} (HF) or
**                  {"question","mc1_targets":{"<answer>":1,...}} (original mc_task.json,
**                  a JSON array); options are shuffled per question (the release lists the
**                  correct answer first)
**   medmcqa        JSONL {"id","question","opa".."opd","cop","exp","subject_name"}; cop is
**                  1-4 in the original release, 0-3 in the HF export (spec "cop_base": 0)
**   jsonl          our neutral form {"id","question","options","answer","explanation",
**                  "subject","task"} */
#include "data/data.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static char *trim_dup(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return sn_strndup(s, n);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* "high_school_biology_test.csv" -> "high_school_biology". Returns whether a split suffix
** was found (a JSONL file named "test.jsonl" names no subject). */
static bool mmlu_subject(const char *path, char *out, size_t cap)
{
    const char *b = base_name(path);
    snprintf(out, cap, "%s", b);
    char *dot = strrchr(out, '.');
    if (dot)
        *dot = '\0';
    const char *suf[] = {"_test", "_dev", "_val", "_train", "_validation"};
    size_t L = strlen(out);
    for (size_t i = 0; i < 5; i++) {
        size_t s = strlen(suf[i]);
        if (L > s && strcmp(out + L - s, suf[i]) == 0) {
            out[L - s] = '\0';
            return true;
        }
    }
    return false;
}

struct item_ctx {
    const char *path;
    uint64_t    line;
    const char *name;
    struct sn_qset *qs;
    size_t      index; /* running item number within this file */
};

/* Makes an id "<name>-<subject->-<index>" or "<name>-<own id>". */
static void make_id(char *out, size_t cap, const struct item_ctx *c, const char *subject,
                    const char *own)
{
    if (own && *own)
        snprintf(out, cap, "%s-%s", c->name, own);
    else if (subject)
        snprintf(out, cap, "%s-%s-%05zu", c->name, subject, c->index);
    else
        snprintf(out, cap, "%s-%05zu", c->name, c->index);
}

static int add_item(struct item_ctx *c, const char *own_id, const char *subject,
                    enum sn_task task, const char *question, char **options, size_t n_options,
                    const char *gold, const char *expl, struct sn_err *err)
{
    char id[512];
    make_id(id, sizeof id, c, subject, own_id);
    struct sn_question q = {
        .id = id, .dataset = (char *)c->name, .subject = (char *)subject, .task = task,
        .question = (char *)question, .options = options, .n_options = n_options,
        .gold = (char *)gold, .gold_explanation = (char *)expl,
    };
    if (!question || !*question)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: empty question", c->path,
                          (unsigned long long)c->line);
    for (size_t i = 0; i < n_options; i++)
        if (!options[i])
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: option %zu is missing", c->path,
                              (unsigned long long)c->line, i);
    c->index++;
    return sn_qset_push(c->qs, &q, err);
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Answer index from a letter "B" / "b" / "(B)" or an integer with the given base. -1 if bad. */
static int answer_index(const cJSON *v, int base, size_t n_options)
{
    int k = -1;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(int)d)
            k = (int)d - base;
    } else if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        while (*s == ' ' || *s == '(')
            s++;
        if (isalpha((unsigned char)s[0]) && !isalpha((unsigned char)s[1]))
            k = toupper((unsigned char)s[0]) - 'A';
        else if (isdigit((unsigned char)s[0])) {
            char *e;
            long x = strtol(s, &e, 10);
            if (!*e)
                k = (int)x - base;
        }
    }
    if (k < 0 || (size_t)k >= n_options)
        return -1;
    return k;
}

/* ---- per-format item parsers (JSON object -> item) ---- */

/* The strings of the array arr (the item's field key; NULL: none) into opts[0..*n), borrowed
** from arr. */
static int option_strings(const struct item_ctx *c, const cJSON *arr, const char *key,
                          char **opts, size_t *n, struct sn_err *err)
{
    const cJSON *ch;
    *n = 0;
    cJSON_ArrayForEach(ch, arr)
    {
        if (*n == SN_OPTIONS_MAX || !cJSON_IsString(ch))
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: '%s' must be a list of at most %d "
                              "strings", c->path, (unsigned long long)c->line, key,
                              SN_OPTIONS_MAX);
        opts[(*n)++] = ch->valuestring;
    }
    return SN_OK;
}

static int mmlu_json(struct item_ctx *c, const cJSON *o, const char *file_subject,
                     struct sn_err *err)
{
    const char *question = jstr(o, "question");
    if (!question)
        question = jstr(o, "input");
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
    char *opts[SN_OPTIONS_MAX];
    size_t n = 0;
    if (cJSON_IsArray(choices)) {
        int rc = option_strings(c, choices, "choices", opts, &n, err);
        if (rc)
            return rc;
    } else {
        const char *L[] = {"A", "B", "C", "D"};
        for (size_t i = 0; i < 4; i++) {
            const char *s = jstr(o, L[i]);
            if (!s)
                break;
            opts[n++] = (char *)s;
        }
    }
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
    if (!ans)
        ans = cJSON_GetObjectItemCaseSensitive(o, "target");
    if (!question || n < 2 || !ans)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected an MMLU object with "
                          "\"question\", \"choices\" (or A-D) and \"answer\" (or \"target\")",
                          c->path, (unsigned long long)c->line);
    int k = answer_index(ans, 0, n);
    if (k < 0)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: 'answer' must be an index 0-%zu or a "
                          "letter A-%c", c->path, (unsigned long long)c->line, n - 1,
                          (char)('A' + n - 1));
    const char *subject = jstr(o, "subject");
    if (!subject || !*subject)
        subject = file_subject;
    char gold[2] = {(char)('A' + k), 0};
    return add_item(c, NULL, subject, SN_TASK_MC, question, opts, n, gold, NULL, err);
}

static int csqa_json(struct item_ctx *c, const cJSON *o, struct sn_err *err)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "question");
    const char *stem = cJSON_IsObject(q) ? jstr(q, "stem") : NULL;
    const cJSON *choices = cJSON_IsObject(q) ? cJSON_GetObjectItemCaseSensitive(q, "choices")
                                             : NULL;
    const char *key = jstr(o, "answerKey");
    if (!stem || !cJSON_IsArray(choices))
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected CommonsenseQA "
                          "{\"question\":{\"stem\",\"choices\":[{\"label\",\"text\"}]},"
                          "\"answerKey\"}", c->path, (unsigned long long)c->line);
    if (!key || !*key)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: no 'answerKey' (the CommonsenseQA test "
                          "split has no answers; use train or dev)", c->path,
                          (unsigned long long)c->line);
    char *opts[SN_OPTIONS_MAX] = {0};
    size_t n = 0;
    const cJSON *ch;
    cJSON_ArrayForEach(ch, choices)
    {
        const char *label = jstr(ch, "label"), *text = jstr(ch, "text");
        if (!label || !text || strlen(label) != 1 || label[0] < 'A' || label[0] > 'Z')
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: choice %zu needs a one-letter "
                              "'label' and a 'text'", c->path, (unsigned long long)c->line, n);
        size_t k = (size_t)(label[0] - 'A');
        if (k != n)
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: choice labels must run A, B, C, ... "
                              "in order (found '%s' at position %zu)", c->path,
                              (unsigned long long)c->line, label, n);
        opts[n++] = (char *)text;
    }
    if (n < 2 || strlen(key) != 1 || (size_t)(key[0] - 'A') >= n)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: answerKey '%s' is not one of the %zu "
                          "labels", c->path, (unsigned long long)c->line, key, n);
    return add_item(c, jstr(o, "id"), NULL, SN_TASK_MC, stem, opts, n, key, NULL, err);
}

/* Removes GSM8K calculator annotations "<<48/2=24>>" and trims. */
static char *gsm8k_explanation(const char *s, size_t n)
{
    char *out = sn_malloc(n + 1);
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<' && i + 1 < n && s[i + 1] == '<') {
            const char *e = strstr(s + i, ">>");
            if (e && (size_t)(e - s) < n) {
                i = (size_t)(e - s) + 1;
                continue;
            }
        }
        out[k++] = s[i];
    }
    out[k] = '\0';
    char *t = trim_dup(out, k);
    sn_free(out);
    return t;
}

static int gsm8k_json(struct item_ctx *c, const cJSON *o, struct sn_err *err)
{
    const char *question = jstr(o, "question"), *answer = jstr(o, "answer");
    if (!question || !answer)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected GSM8K {\"question\","
                          "\"answer\"}", c->path, (unsigned long long)c->line);
    const char *h = NULL, *p = answer, *x;
    while ((x = strstr(p, "####")) != NULL) {
        h = x;
        p = x + 4;
    }
    char gold[SN_ANSWER_MAX];
    if (!h || !sn_normalize_number(h + 4, gold))
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: 'answer' must end with '#### <number>'",
                          c->path, (unsigned long long)c->line);
    char *expl = gsm8k_explanation(answer, (size_t)(h - answer));
    if (!expl)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    int rc = add_item(c, NULL, NULL, SN_TASK_NUMERIC, question, NULL, 0, gold,
                      *expl ? expl : NULL, err);
    sn_free(expl);
    return rc;
}

static int truthfulqa_json(struct item_ctx *c, const cJSON *o, struct sn_err *err)
{
    const char *question = jstr(o, "question");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "mc1_targets");
    if (!question || !cJSON_IsObject(t))
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected TruthfulQA {\"question\","
                          "\"mc1_targets\":{...}}", c->path, (unsigned long long)c->line);
    char *opts[SN_OPTIONS_MAX];
    int labels[SN_OPTIONS_MAX];
    size_t n = 0;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(t, "choices");
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(t, "labels");
    if (cJSON_IsArray(choices) && cJSON_IsArray(lab)) {
        if (cJSON_GetArraySize(choices) != cJSON_GetArraySize(lab))
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: mc1_targets has %d choices but %d "
                              "labels", c->path, (unsigned long long)c->line,
                              cJSON_GetArraySize(choices), cJSON_GetArraySize(lab));
        for (int i = 0; i < cJSON_GetArraySize(choices); i++) {
            const cJSON *ch = cJSON_GetArrayItem(choices, i), *l = cJSON_GetArrayItem(lab, i);
            if (n == SN_OPTIONS_MAX || !cJSON_IsString(ch) || !cJSON_IsNumber(l))
                return sn_err_set(err, SN_E_FORMAT, "%s:%llu: mc1_targets: choice %d must be "
                                  "a string with a 0/1 label (at most %d choices)", c->path,
                                  (unsigned long long)c->line, i, SN_OPTIONS_MAX);
            opts[n] = ch->valuestring;
            labels[n++] = l->valueint;
        }
    } else {
        const cJSON *kv;
        cJSON_ArrayForEach(kv, t)
        {
            if (n == SN_OPTIONS_MAX || !cJSON_IsNumber(kv))
                return sn_err_set(err, SN_E_FORMAT, "%s:%llu: mc1_targets must map answers to "
                                  "0/1 (at most %d)", c->path, (unsigned long long)c->line,
                                  SN_OPTIONS_MAX);
            opts[n] = kv->string;
            labels[n++] = kv->valueint;
        }
    }
    int n_true = 0;
    for (size_t i = 0; i < n; i++)
        n_true += labels[i] == 1;
    if (n < 2 || n_true != 1)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: mc1_targets needs at least 2 choices and "
                          "exactly one labelled 1 (found %d)", c->path,
                          (unsigned long long)c->line, n_true);
    /* The release lists the true answer first; shuffle per question (seeded by the question
    ** text, so every run and every recipe sees the same order). */
    struct sn_rng rng;
    sn_rng_seed(&rng, sn_seed_derive(0x7472757468ULL, question, 0));
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)sn_rng_below(&rng, i + 1);
        char *to = opts[i];
        opts[i] = opts[j];
        opts[j] = to;
        int tl = labels[i];
        labels[i] = labels[j];
        labels[j] = tl;
    }
    char gold[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        if (labels[i] == 1)
            gold[0] = (char)('A' + i);
    return add_item(c, NULL, jstr(o, "category"), SN_TASK_MC, question, opts, n, gold, NULL,
                    err);
}

static int medmcqa_json(struct item_ctx *c, const cJSON *o, int cop_base, struct sn_err *err)
{
    const char *question = jstr(o, "question");
    char *opts[4];
    const char *keys[] = {"opa", "opb", "opc", "opd"};
    for (size_t i = 0; i < 4; i++)
        opts[i] = (char *)jstr(o, keys[i]);
    const cJSON *cop = cJSON_GetObjectItemCaseSensitive(o, "cop");
    if (!question || !opts[0] || !opts[1] || !opts[2] || !opts[3] || !cop)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected MedMCQA {\"question\",\"opa\","
                          "\"opb\",\"opc\",\"opd\",\"cop\"}", c->path,
                          (unsigned long long)c->line);
    int k = answer_index(cop, cop_base, 4);
    if (k < 0)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: 'cop' must be %d-%d (the original release "
                          "numbers options from 1, the HF export from 0: set the dataset's "
                          "\"cop_base\"; the test split has no answers)", c->path,
                          (unsigned long long)c->line, cop_base, cop_base + 3);
    char gold[2] = {(char)('A' + k), 0};
    const char *exp = jstr(o, "exp");
    return add_item(c, jstr(o, "id"), jstr(o, "subject_name"), SN_TASK_MC, question, opts, 4,
                    gold, exp && *exp ? exp : NULL, err);
}

static int neutral_json(struct item_ctx *c, const cJSON *o, struct sn_err *err)
{
    static const char *const keys[] = {"id", "question", "options", "answer", "explanation",
                                       "subject", "task", NULL};
    for (const cJSON *k = o->child; k; k = k->next) {
        bool ok = false;
        for (const char *const *v = keys; *v; v++)
            ok = ok || strcmp(*v, k->string) == 0;
        if (!ok)
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: unknown key '%s' (expected id, "
                              "question, options, answer, explanation, subject, task)",
                              c->path, (unsigned long long)c->line, k->string);
    }
    const char *question = jstr(o, "question");
    const cJSON *options = cJSON_GetObjectItemCaseSensitive(o, "options");
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
    const char *task_s = jstr(o, "task");
    if (!question || !ans)
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected {\"question\", \"answer\", "
                          "optional \"options\", \"explanation\", \"subject\", \"task\", \"id\"}",
                          c->path, (unsigned long long)c->line);
    char *opts[SN_OPTIONS_MAX];
    size_t n = 0;
    if (options && !cJSON_IsArray(options))
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: 'options' must be a list of strings",
                          c->path, (unsigned long long)c->line);
    int rc = option_strings(c, options, "options", opts, &n, err);
    if (rc)
        return rc;
    enum sn_task task = n ? SN_TASK_MC : SN_TASK_NUMERIC;
    if (task_s) {
        if (strcmp(task_s, "mc") == 0)
            task = SN_TASK_MC;
        else if (strcmp(task_s, "numeric") == 0)
            task = SN_TASK_NUMERIC;
        else
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: 'task' must be \"mc\" or \"numeric\"",
                              c->path, (unsigned long long)c->line);
    }
    char gold[SN_ANSWER_MAX];
    if (task == SN_TASK_MC) {
        int k = n >= 2 && cJSON_IsString(ans) ? answer_index(ans, 0, n) : -1;
        if (k < 0)
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: a multiple-choice item needs >= 2 "
                              "options and 'answer' as a letter A-%c", c->path,
                              (unsigned long long)c->line, n >= 2 ? (char)('A' + n - 1) : 'B');
        gold[0] = (char)('A' + k);
        gold[1] = '\0';
    } else {
        bool ok = false;
        if (cJSON_IsNumber(ans)) {
            sn_format_number(ans->valuedouble, gold);
            ok = true;
        } else if (cJSON_IsString(ans)) {
            ok = sn_normalize_number(ans->valuestring, gold);
        }
        if (!ok || n)
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: a numeric item needs a numeric "
                              "'answer' and no options", c->path, (unsigned long long)c->line);
    }
    const char *id = jstr(o, "id");
    const char *expl = jstr(o, "explanation");
    return add_item(c, id, jstr(o, "subject"), task, question, opts, n, gold,
                    expl && *expl ? expl : NULL, err);
}

/* ---- CSV (RFC 4180) ---- */

/* Parses one record starting at text[*pos]; fields point into a scratch buffer. */
struct csv_rec {
    struct sn_buf buf;
    size_t        start[16];
    size_t        n;
};

static int csv_record(const char *text, size_t len, size_t *pos, uint64_t *line,
                      struct csv_rec *r, const char *path, struct sn_err *err)
{
    sn_buf_reset(&r->buf);
    r->n = 0;
    size_t p = *pos;
    uint64_t start_line = *line;
    for (;;) {
        if (r->n == 16)
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: more than 16 fields", path,
                              (unsigned long long)start_line);
        r->start[r->n++] = r->buf.len;
        if (p < len && text[p] == '"') {
            p++;
            for (;;) {
                if (p >= len)
                    return sn_err_set(err, SN_E_FORMAT, "%s:%llu: unterminated quoted field",
                                      path, (unsigned long long)start_line);
                if (text[p] == '"') {
                    if (p + 1 < len && text[p + 1] == '"') {
                        if (sn_buf_append(&r->buf, "\"", 1, err))
                            return err->code;
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                if (text[p] == '\n')
                    (*line)++;
                if (sn_buf_append(&r->buf, text + p, 1, err))
                    return err->code;
                p++;
            }
        } else {
            size_t s = p;
            while (p < len && text[p] != ',' && text[p] != '\n' && text[p] != '\r')
                p++;
            if (sn_buf_append(&r->buf, text + s, p - s, err))
                return err->code;
        }
        if (sn_buf_append(&r->buf, "", 1, err)) /* NUL between fields */
            return err->code;
        if (p < len && text[p] == ',') {
            p++;
            continue;
        }
        if (p < len && text[p] == '\r')
            p++;
        if (p < len && text[p] == '\n') {
            p++;
            (*line)++;
        } else if (p < len) {
            return sn_err_set(err, SN_E_FORMAT, "%s:%llu: unexpected character after a quoted "
                              "field", path, (unsigned long long)start_line);
        }
        break;
    }
    *pos = p;
    return SN_OK;
}

static int read_mmlu_csv(struct item_ctx *c, const char *text, size_t len, struct sn_err *err)
{
    char subject[256];
    mmlu_subject(c->path, subject, sizeof subject);
    struct csv_rec r = {.buf = {.max = 64u << 20}};
    size_t pos = 0;
    uint64_t line = 1;
    int rc = SN_OK;
    bool first = true;
    while (pos < len) {
        uint64_t start = line;
        if (text[pos] == '\n' || (text[pos] == '\r' && pos + 1 < len && text[pos + 1] == '\n')) {
            pos += text[pos] == '\r' ? 2 : 1; /* blank line */
            line++;
            continue;
        }
        rc = csv_record(text, len, &pos, &line, &r, c->path, err);
        if (rc)
            break;
        c->line = start;
        const char *f[16];
        for (size_t i = 0; i < r.n; i++)
            f[i] = r.buf.data + r.start[i];
        if (r.n != 6) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected 6 fields (question, A, B, C, D, "
                            "answer letter), found %zu", c->path, (unsigned long long)start, r.n);
            break;
        }
        char *ans = trim_dup(f[5], strlen(f[5]));
        if (!ans) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            break;
        }
        bool letter = strlen(ans) == 1 && ans[0] >= 'A' && ans[0] <= 'D';
        /* MMLU's CSVs have no header: the first row is a question. A file that does start
        ** with a header row (last field "answer"/"target") has it recognised by name and
        ** skipped; any other non-letter answer is an error. */
        if (!letter && first && (!strcmp(ans, "answer") || !strcmp(ans, "Answer") ||
                                 !strcmp(ans, "target"))) {
            sn_free(ans);
            first = false;
            continue;
        }
        first = false;
        if (!letter) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s:%llu: answer field is '%s', expected one of "
                            "A, B, C, D", c->path, (unsigned long long)start, ans);
            sn_free(ans);
            break;
        }
        char *opts[4] = {(char *)f[1], (char *)f[2], (char *)f[3], (char *)f[4]};
        rc = add_item(c, NULL, subject, SN_TASK_MC, f[0], opts, 4, ans, NULL, err);
        sn_free(ans);
        if (rc)
            break;
    }
    sn_buf_free(&r.buf);
    return rc;
}

/* ---- file dispatch ---- */

static int item_from_json(const char *kind, struct item_ctx *c, const cJSON *o,
                          const char *file_subject, int cop_base, struct sn_err *err)
{
    if (!cJSON_IsObject(o))
        return sn_err_set(err, SN_E_FORMAT, "%s:%llu: expected a JSON object", c->path,
                          (unsigned long long)c->line);
    if (!strcmp(kind, "mmlu"))
        return mmlu_json(c, o, file_subject, err);
    if (!strcmp(kind, "commonsenseqa"))
        return csqa_json(c, o, err);
    if (!strcmp(kind, "gsm8k"))
        return gsm8k_json(c, o, err);
    if (!strcmp(kind, "truthfulqa"))
        return truthfulqa_json(c, o, err);
    if (!strcmp(kind, "medmcqa"))
        return medmcqa_json(c, o, cop_base, err);
    if (!strcmp(kind, "jsonl"))
        return neutral_json(c, o, err);
    return sn_err_set(err, SN_E_ARG, "unknown dataset kind '%s'", kind);
}

int sn_dataset_read_file(const char *kind, const char *path, const char *name,
                         const cJSON *spec, struct sn_qset *qs, struct sn_err *err)
{
    int64_t cop_base = 1;
    int rc = sn_json_get_int(spec, "dataset", "cop_base", 1, &cop_base, err);
    if (rc)
        return rc;
    if (cop_base != 0 && cop_base != 1)
        return sn_err_set(err, SN_E_ARG, "recipe: dataset.cop_base must be 0 or 1");
    char *text;
    size_t len;
    rc = sn_file_read(path, 0, &text, &len, err);
    if (rc)
        return rc;
    struct item_ctx c = {.path = path, .line = 1, .name = name, .qs = qs, .index = 0};
    char subject[256];
    bool file_names_subject = mmlu_subject(path, subject, sizeof subject);
    const char *fsubj = !strcmp(kind, "mmlu") && file_names_subject ? subject : NULL;
    size_t s = 0;
    while (s < len && isspace((unsigned char)text[s]))
        s++;
    size_t plen = strlen(path);
    bool csv = plen > 4 && strcmp(path + plen - 4, ".csv") == 0;
    if (csv) {
        if (strcmp(kind, "mmlu") != 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: CSV is read only for the mmlu kind", path);
        else
            rc = read_mmlu_csv(&c, text, len, err);
    } else if (s < len && text[s] == '[') {
        /* one JSON array (e.g. TruthfulQA's mc_task.json) */
        cJSON *arr = NULL;
        rc = sn_json_parse(text, len, path, &arr, err);
        if (!rc) {
            int i = 0;
            const cJSON *o;
            cJSON_ArrayForEach(o, arr)
            {
                c.line = (uint64_t)i + 1; /* reported as the element number */
                rc = item_from_json(kind, &c, o, fsubj,
                                    (int)cop_base, err);
                if (rc) {
                    sn_err_wrap(err, "element %d", i);
                    break;
                }
                i++;
            }
        }
        cJSON_Delete(arr);
    } else {
        size_t p = 0;
        uint64_t line = 0;
        while (p < len && !rc) {
            const char *nl = memchr(text + p, '\n', len - p);
            size_t e = nl ? (size_t)(nl - text) : len;
            line++;
            size_t a = p;
            while (a < e && isspace((unsigned char)text[a]))
                a++;
            if (a < e) {
                c.line = line;
                cJSON *o = cJSON_ParseWithLength(text + a, e - a);
                if (!o) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s:%llu: invalid JSON (expected one JSON "
                                    "object per line)", path, (unsigned long long)line);
                } else {
                    rc = item_from_json(kind, &c, o, fsubj,
                                        (int)cop_base, err);
                    cJSON_Delete(o);
                }
            }
            p = e + 1;
        }
    }
    sn_free(text);
    return rc;
}
