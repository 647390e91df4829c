/* import/collab_attack.c: the Collaboration-attack log reader (Amayuelas et al.,
** "MultiAgent Collaboration Attack", its published results, JSON Lines; docs/collab-attack.md). One source line ->
** one trajectory; the mapping (locating dataset/experiment/replicate from the path, roles,
** target, models, answers by the source's own rule, the source's vote) is in docs/formats.md
** "Imported trajectories". */
#include "import/import_internal.h"
#include "data/data.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

#define CA_MAX_AGENTS 64
#define CA_MAX_ROUNDS 1000

static const char *const supported[] = {"mmlu", "medmcqa", "truthfulqa", "scalr", NULL};
static const struct {
    const char *name, *why;
} unsupported[] = {
    {"math", "answers are LaTeX, not supported by this importer"},
    {"chess", "answers are board squares, not supported by this importer"},
    {"mquake", "answers are free text, not supported by this importer"},
    {"musique", "answers are free text, not supported by this importer"},
};
static const char *const known_models[] = {
    "gpt-3.5-turbo", "gpt-4-turbo", "gpt-4o", "gpt4o", "Meta-Llama-3-8B-Instruct",
    "meta-llama-3-8B-Instruct", "Qwen1.5-14B-Chat", "Llama-2-13b-chat-hf",
    "llama-2-7b-chat-hf", NULL};

struct ca_file {
    char     dataset[16];
    char    *experiment;
    char    *rel;
    int64_t  replicate;
    int      name_agents, name_rounds; /* from the file name; -1 unknown */
    char    *group_model, *adv_model;
    int      best_of_n;
    char   **seen;                     /* item ids of this file so far */
    size_t   n_seen, cap_seen;
    bool     warned_agents, warned_rounds, warned_late;
};

static bool in_list(const char *s, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(s, *l))
            return true;
    return false;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

static bool is_dataset_dir(const char *s)
{
    if (in_list(s, supported))
        return true;
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (!strcmp(s, unsupported[i].name))
            return true;
    return false;
}

static void ca_free(struct ca_file *c)
{
    if (!c)
        return;
    sn_free(c->experiment);
    sn_free(c->rel);
    sn_free(c->group_model);
    sn_free(c->adv_model);
    for (size_t i = 0; i < c->n_seen; i++)
        sn_free(c->seen[i]);
    sn_free(c->seen);
    sn_free(c);
}

/* Splits "<group>-<adv>" against the known model names. */
static bool split_models(const char *rest, char **g, char **a)
{
    for (const char *const *m = known_models; *m; m++) {
        size_t k = strlen(*m);
        if (!strncmp(rest, *m, k) && rest[k] == '-' && in_list(rest + k + 1, known_models)) {
            *g = sn_strdup(*m);
            *a = sn_strdup(rest + k + 1);
            return true;
        }
    }
    return false;
}

static int ca_open(struct imp_file *f, const char *root, struct sn_err *err)
{
    (void)root;
    struct ca_file *c = sn_calloc(1, sizeof *c);
    char *dup = sn_strdup(f->path);
    const char *comp[256];
    size_t m = 0;
    if (!c || !dup) {
        sn_free(c);
        sn_free(dup);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    c->name_agents = c->name_rounds = -1;
    for (char *s = strtok(dup, "/"); s && m < 256; s = strtok(NULL, "/"))
        comp[m++] = s;
    size_t ds = (size_t)-1;
    if (m >= 2 && is_dataset_dir(comp[m - 2]))
        ds = m - 2;
    else if (m >= 3 && is_dataset_dir(comp[m - 3]))
        ds = m - 3;
    int rc = SN_OK;
    if (ds == (size_t)-1) {
        rc = sn_err_set(err, SN_E_FORMAT,
                        "%s: cannot tell the dataset: expected .../<dataset>/[<condition>/]"
                        "<file>.jsonl[.gz] with <dataset> one of mmlu, medmcqa, truthfulqa, "
                        "scalr (math, chess, mquake, musique are not multiple choice)",
                        f->path);
        goto out;
    }
    snprintf(c->dataset, sizeof c->dataset, "%s", comp[ds]);
    if (!in_list(comp[ds], supported)) {
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
            if (!strcmp(comp[ds], unsupported[i].name))
                rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: %s: %s", f->path, comp[ds],
                                unsupported[i].why);
        goto out;
    }
    bool archive = ds >= 1 && !strcmp(comp[ds - 1], "archive");
    bool direct = ds == m - 2;
    /* stem: the file name without .jsonl[.gz] */
    char stem[256];
    snprintf(stem, sizeof stem, "%s", comp[m - 1]);
    size_t sl = strlen(stem);
    if (sl > 3 && !strcmp(stem + sl - 3, ".gz"))
        stem[sl -= 3] = '\0';
    if (sl > 6 && !strcmp(stem + sl - 6, ".jsonl"))
        stem[sl -= 6] = '\0';
    struct sn_buf b = {0};
    if (archive)
        rc = sn_buf_puts(&b, "archive/", err);
    for (size_t i = ds; !rc && i + 1 < m; i++)
        rc = sn_buf_printf(&b, err, "%s/", comp[i]);
    if (!rc)
        rc = sn_buf_printf(&b, err, "%s.jsonl", stem);
    if (rc) {
        sn_buf_free(&b);
        goto out;
    }
    c->rel = b.data;
    b = (struct sn_buf){0};
    rc = sn_buf_puts(&b, "collab-attack.", err);
    if (!rc && archive)
        rc = sn_buf_puts(&b, "archive.", err);
    for (size_t i = ds; !rc && i + 1 < m; i++)
        rc = sn_buf_printf(&b, err, "%s%s", i > ds ? "." : "", comp[i]);
    if (!rc && direct)
        rc = sn_buf_printf(&b, err, ".%s", stem);
    if (rc) {
        sn_buf_free(&b);
        goto out;
    }
    c->experiment = b.data;
    for (const char *p = c->experiment; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: the experiment name '%s' would hold a "
                            "character outside [A-Za-z0-9._-]", f->path, c->experiment);
            goto out;
        }
    /* replicate (and the cross-check numbers) from the stem before its first '-' */
    {
        char s2[256];
        snprintf(s2, sizeof s2, "%s", stem);
        char *dash = strchr(s2, '-');
        if (dash)
            *dash = '\0';
        const char *tok[64];
        size_t nt = 0;
        for (char *s = strtok(s2, "_"); s && nt < 64; s = strtok(NULL, "_"))
            tok[nt++] = s;
        size_t i = 0;
        bool adv = nt && !strcmp(tok[0], "adv");
        if (adv) {
            i = 1;
            while (i < nt && (!strcmp(tok[i], "optim") || !strcmp(tok[i], "plus") ||
                              !strcmp(tok[i], "context")))
                i++;
        }
        if (i < nt && !all_digits(tok[i]))
            i++; /* the dataset name */
        size_t nnum = 0, first = i;
        while (i < nt && all_digits(tok[i])) {
            i++;
            nnum++;
        }
        size_t need = adv ? 4 : 3;
        if (i == nt && nnum >= 3) {
            c->name_agents = atoi(tok[first + 1]);
            c->name_rounds = atoi(tok[first + 2]);
        }
        if (i == nt && nnum == need + 1)
            c->replicate = atoll(tok[first + need]);
    }
    /* models from the condition folder */
    if (!direct) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s", comp[m - 2]);
        size_t dl = strlen(dir);
        if (dl > 9 && !strcmp(dir + dl - 9, "_original"))
            dir[dl - 9] = '\0';
        if (!strncmp(dir, "adv_optim_", 10))
            c->best_of_n = 10;
        if (!strncmp(dir, "adv", 3)) {
            const char *d = strchr(dir, '-');
            if (d && !split_models(d + 1, &c->group_model, &c->adv_model)) {
                SN_WARN("import: %s: cannot split '%s' into two known model names; models "
                        "unknown", f->path, d + 1);
                f->sum->n_warnings++;
            }
        } else {
            const char *p = dir;
            for (int k = 0; k < 3 && p; k++) {
                p = strchr(p, '_');
                if (p)
                    p++;
            }
            if (p && *p)
                c->group_model = sn_strdup(p);
        }
    }
    if (!c->group_model && f->p->group_model)
        c->group_model = sn_strdup(f->p->group_model);
    if (!c->adv_model && f->p->adv_model)
        c->adv_model = sn_strdup(f->p->adv_model);
    f->rel = c->rel;
out:
    sn_free(dup);
    if (rc) {
        ca_free(c);
        return rc;
    }
    f->state = c;
    return SN_OK;
}

static void ca_close(struct imp_file *f)
{
    ca_free(f->state);
    f->state = NULL;
}

/* ---- the source's answer rule ---- */

static bool word_cp(utf8proc_int32_t cp)
{
    if (cp == '_')
        return true;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        return false;
    }
}

/* Decodes one code point at s[i] (n bytes left); invalid bytes count as one non-word unit. */
static size_t cp_at(const char *s, size_t i, size_t n, utf8proc_int32_t *cp)
{
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                          (utf8proc_ssize_t)(n - i), cp);
    if (k <= 0) {
        *cp = -1;
        return 1;
    }
    return (size_t)k;
}

/* End of the run of word characters starting at i. */
static size_t word_run(const char *s, size_t i, size_t n)
{
    while (i < n) {
        utf8proc_int32_t cp;
        size_t k = cp_at(s, i, n, &cp);
        if (cp < 0 || !word_cp(cp))
            break;
        i += k;
    }
    return i;
}

/* Python's str.upper() of the match, reduced to what the comparison needs: the first
** character of the upper-cased text and whether the upper-cased text is one character. */
static void upper_head(const char *s, size_t n, char *c0, bool *single)
{
    utf8proc_int32_t cp;
    size_t k = cp_at(s, 0, n, &cp);
    *single = k == n;
    if (cp >= 0 && cp < 128) {
        *c0 = (char)toupper(cp);
        return;
    }
    switch (cp) {
    case 0x131: *c0 = 'I'; return;                     /* dotless i */
    case 0x17F: *c0 = 'S'; return;                     /* long s */
    case 0xFB00: case 0xFB01: case 0xFB02: case 0xFB03: case 0xFB04:
        *c0 = 'F'; *single = false; return;            /* ff fi fl ffi ffl ligatures */
    case 0xFB05: case 0xFB06: *c0 = 'S'; *single = false; return; /* st ligatures */
    default: *c0 = 0x7f; return; /* upper-cases to a non-ASCII character: > any letter */
    }
}

/* Lower-cases UTF-8 text code point by code point (ASCII fast path); invalid bytes kept. */
static char *lower_utf8(const char *s, size_t n)
{
    char *o = sn_malloc(n * 2 + 5);
    if (!o)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 128) {
            o[j++] = (char)tolower(ch);
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        size_t k = cp_at(s, i, n, &cp);
        if (cp < 0) {
            o[j++] = s[i++];
            continue;
        }
        utf8proc_int32_t lo = utf8proc_tolower(cp);
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t e = utf8proc_encode_char(lo, enc);
        if (e <= 0 || (size_t)e > k * 2) {
            memcpy(o + j, s + i, k);
            j += k;
        } else {
            memcpy(o + j, enc, (size_t)e);
            j += (size_t)e;
        }
        i += k;
    }
    o[j] = '\0';
    return o;
}

/* Last occurrence of needle in hay (both lower-cased); -1 when absent. Positions are byte
** offsets, monotonic in the source's code point offsets, so the largest is the same option.
** An empty needle is found at the end (Python's rfind("")). */
static long long rfind(const char *hay, size_t hn, const char *needle, size_t nn)
{
    if (nn == 0)
        return (long long)hn;
    if (nn > hn)
        return -1;
    for (size_t i = hn - nn + 1; i-- > 0;)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, nn))
            return (long long)i;
    return -1;
}

bool sn_import_collab_answer(const char *dataset, const char *text, const char *const *options,
                             size_t n_options, char *raw, size_t cap)
{
    raw[0] = '\0';
    if (!n_options || n_options > 26)
        return false;
    bool mmlu = !strcmp(dataset, "mmlu");
    char last = mmlu ? 'D' : (char)('A' + n_options - 1);
    size_t n = strlen(text);
    /* 1. letter candidates: \((\w+)\)|(\w+)\), the last passing the string comparison */
    size_t best_s = 0, best_n = 0;
    bool have_re = false;
    for (size_t i = 0; i < n;) {
        size_t gs = 0, ge = 0, next = i + 1;
        bool match = false;
        if (text[i] == '(') {
            size_t e = word_run(text, i + 1, n);
            if (e > i + 1 && e < n && text[e] == ')') {
                gs = i + 1;
                ge = e;
                match = true;
                next = e + 1;
            }
        }
        if (!match) {
            utf8proc_int32_t cp;
            size_t k = cp_at(text, i, n, &cp);
            next = i + k;
            if (cp >= 0 && word_cp(cp)) {
                size_t e = word_run(text, i, n);
                if (e < n && text[e] == ')') {
                    gs = i;
                    ge = e;
                    match = true;
                    next = e + 1;
                } else {
                    next = e; /* no position inside this run can match either */
                }
            }
        }
        if (match) {
            char c0;
            bool single;
            upper_head(text + gs, ge - gs, &c0, &single);
            if (c0 >= 'A' && (c0 < last || (c0 == last && single))) {
                best_s = gs;
                best_n = ge - gs;
                have_re = true;
            }
        }
        i = next;
    }
    /* 2. option text: the option whose (stripped, lower-cased) text occurs furthest right */
    char *low = lower_utf8(text, n);
    int by_item = -1;
    if (low) {
        size_t ln = strlen(low);
        long long bestpos = -1;
        for (size_t o = 0; o < n_options; o++) {
            const char *op = options[o] ? options[o] : "";
            char *ol = lower_utf8(op, strlen(op));
            if (!ol)
                continue;
            size_t a = 0, b = strlen(ol);
            if (mmlu) {
                while (a < b && isspace((unsigned char)ol[a]))
                    a++;
                while (b > a && isspace((unsigned char)ol[b - 1]))
                    b--;
            } else {
                while (a < b && strchr("., ", ol[a]))
                    a++;
                while (b > a && strchr("., ", ol[b - 1]))
                    b--;
            }
            long long pos = rfind(low, ln, ol + a, b - a);
            if (pos > bestpos) {
                bestpos = pos;
                by_item = (int)o;
            }
            sn_free(ol);
        }
        sn_free(low);
    }
    if (by_item >= 0) {
        snprintf(raw, cap, "%c", 'A' + by_item);
        return true;
    }
    if (!have_re)
        return false;
    /* the upper-cased matched text */
    char *u = sn_malloc(best_n * 3 + 1);
    if (!u) {
        snprintf(raw, cap, "?");
        return false;
    }
    /* upper-case code point by code point (Python's str.upper, minus its rare expansions) */
    size_t j = 0;
    for (size_t i = 0; i < best_n;) {
        utf8proc_int32_t cp;
        size_t k = cp_at(text + best_s, i, best_n, &cp);
        if (cp < 0) {
            u[j++] = text[best_s + i];
        } else {
            utf8proc_uint8_t enc[4];
            utf8proc_ssize_t e = utf8proc_encode_char(cp < 128 ? toupper(cp)
                                                               : utf8proc_toupper(cp), enc);
            if (e > 0 && (size_t)e <= 3 * k) {
                memcpy(u + j, enc, (size_t)e);
                j += (size_t)e;
            }
        }
        i += k;
    }
    u[j] = '\0';
    snprintf(raw, cap, "%s", u);
    bool ok = j == 1 && u[0] >= 'A' && u[0] < 'A' + (int)n_options;
    sn_free(u);
    return ok;
}

/* ---- one record ---- */

static const char *str_of(const cJSON *j) { return cJSON_IsString(j) ? j->valuestring : NULL; }

/* "Your answer: (X)" (case-insensitive), the last one; 0 when absent. */
static char find_target(const char *s)
{
    char t = 0;
    static const char pat[] = "your answer: (";
    size_t pn = sizeof pat - 1;
    for (const char *p = s; *p; p++) {
        if (strncasecmp(p, pat, pn))
            continue;
        const char *q = p + pn;
        if (isalpha((unsigned char)q[0]) && !((unsigned char)q[0] & 0x80) && q[1] == ')')
            t = (char)toupper((unsigned char)q[0]);
    }
    return t;
}

static int ca_record(struct imp_file *f, const char *json, size_t len, uint64_t line,
                     const char *where, struct sn_buf *out, struct sn_err *err)
{
    struct ca_file *c = f->state;
    cJSON *root = NULL;
    struct sn_err jerr = {0};
    if (sn_json_parse(json, len, where, &root, &jerr))
        return sn_err_set(err, SN_E_FORMAT, "%s", jerr.msg);
    int rc = SN_OK;
    const char **opts = NULL, **replies = NULL;
    struct imp_msg *msgs = NULL;
    struct imp_agent *agents = NULL;
    char (*raws)[32] = NULL;
    char (*sans)[SN_ANSWER_MAX] = NULL;
    bool *adv = NULL;
    char *item_id = NULL;
    cJSON *labels = NULL, *prov = NULL;
    size_t n_opt = 0;

    if (!cJSON_IsObject(root)) {
        rc = imp_fail(err, where, "expected a JSON object");
        goto out;
    }
    const char *fq = str_of(cJSON_GetObjectItemCaseSensitive(root, "question"));
    const cJSON *jans = cJSON_GetObjectItemCaseSensitive(root, "answer");
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(root, "raw_task");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(root, "agent_responses");
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (!fq) {
        rc = imp_fail(err, where, "field 'question': expected string");
        goto out;
    }
    if (!cJSON_IsArray(conv)) {
        rc = imp_fail(err, where, "field 'agent_responses': expected array");
        goto out;
    }
    /* dataset-specific: stem, options, gold */
    const char *stem = NULL, *subject = NULL, *expl = NULL;
    char gold = 0, check = 0;
    const char *ds = c->dataset;
    if (!strcmp(ds, "mmlu")) {
        if (!cJSON_IsArray(raw) || cJSON_GetArraySize(raw) < 6) {
            rc = imp_fail(err, where, "field 'raw_task': expected [question, A, B, C, D, answer]");
            goto out;
        }
        n_opt = 4;
        opts = sn_calloc(n_opt, sizeof *opts);
        if (!opts) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto out;
        }
        stem = str_of(cJSON_GetArrayItem(raw, 0));
        for (int i = 0; i < 4; i++)
            if (!(opts[i] = str_of(cJSON_GetArrayItem(raw, i + 1)))) {
                rc = imp_fail(err, where, "field 'raw_task[%d]': expected string", i + 1);
                goto out;
            }
        const char *a = str_of(jans), *r5 = str_of(cJSON_GetArrayItem(raw, 5));
        if (a && strlen(a) == 1)
            gold = (char)toupper((unsigned char)a[0]);
        if (r5 && strlen(r5) == 1)
            check = (char)toupper((unsigned char)r5[0]);
    } else if (!strcmp(ds, "medmcqa") || !strcmp(ds, "scalr")) {
        bool med = !strcmp(ds, "medmcqa");
        if (!cJSON_IsObject(raw)) {
            rc = imp_fail(err, where, "field 'raw_task': expected object");
            goto out;
        }
        static const char *const med_keys[] = {"opa", "opb", "opc", "opd"};
        static const char *const scalr_keys[] = {"choice_0", "choice_1", "choice_2",
                                                 "choice_3", "choice_4"};
        n_opt = med ? 4 : 5;
        opts = sn_calloc(n_opt, sizeof *opts);
        if (!opts) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n_opt; i++) {
            const char *k = med ? med_keys[i] : scalr_keys[i];
            if (!(opts[i] = str_of(cJSON_GetObjectItemCaseSensitive(raw, k)))) {
                rc = imp_fail(err, where, "field 'raw_task.%s': expected string", k);
                goto out;
            }
        }
        stem = str_of(cJSON_GetObjectItemCaseSensitive(raw, "question"));
        const char *a = str_of(jans);
        if (a && strlen(a) == 1)
            gold = (char)toupper((unsigned char)a[0]);
        if (med) {
            const cJSON *cop = cJSON_GetObjectItemCaseSensitive(raw, "cop");
            if (cJSON_IsNumber(cop) && cop->valuedouble >= 1 && cop->valuedouble <= 4 &&
                cop->valuedouble == (int)cop->valuedouble)
                check = (char)('A' + (int)cop->valuedouble - 1);
            subject = str_of(cJSON_GetObjectItemCaseSensitive(raw, "subject_name"));
            expl = str_of(cJSON_GetObjectItemCaseSensitive(raw, "exp"));
            if (expl && !*expl)
                expl = NULL;
        } else {
            check = gold; /* ScaLR rows carry no second copy of the answer */
        }
    } else { /* truthfulqa */
        const cJSON *mc1 = cJSON_IsObject(raw)
                               ? cJSON_GetObjectItemCaseSensitive(raw, "mc1_targets")
                               : NULL;
        if (!cJSON_IsObject(mc1)) {
            rc = imp_fail(err, where, "field 'raw_task.mc1_targets': expected object");
            goto out;
        }
        int n = cJSON_GetArraySize(mc1);
        if (n < 2 || n > 26) {
            rc = imp_fail(err, where, "field 'raw_task.mc1_targets': %d options (expected 2 to 26)",
                      n);
            goto out;
        }
        n_opt = (size_t)n;
        opts = sn_calloc(n_opt, sizeof *opts);
        if (!opts) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto out;
        }
        int i = 0, n_true = 0;
        for (const cJSON *e = mc1->child; e; e = e->next, i++) {
            opts[i] = e->string;
            if (cJSON_IsNumber(e) && e->valuedouble == 1) {
                check = (char)('A' + i);
                n_true++;
            }
        }
        if (n_true != 1)
            check = 0;
        stem = str_of(cJSON_GetObjectItemCaseSensitive(raw, "question"));
        const cJSON *p0 = cJSON_IsArray(jans) ? cJSON_GetArrayItem(jans, 0) : NULL;
        const char *a = cJSON_IsArray(p0) ? str_of(cJSON_GetArrayItem(p0, 0)) : NULL;
        if (a && strlen(a) == 1)
            gold = (char)toupper((unsigned char)a[0]);
    }
    if (!stem) {
        rc = imp_fail(err, where, "the dataset row has no question text");
        goto out;
    }
    if (!gold || gold < 'A' || gold >= 'A' + (int)n_opt) {
        rc = imp_fail(err, where, "field 'answer': expected one option letter A-%c",
                  (char)('A' + n_opt - 1));
        goto out;
    }
    if (check != gold) {
        rc = imp_fail(err, where, "gold '%c' disagrees with the dataset row's answer ('%c')", gold,
                  check ? check : '?');
        goto out;
    }
    /* item id: dataset + hash of the formatted question; a repeat in this file gets -<id> */
    {
        char h[17];
        imp_hash16(fq, h);
        struct sn_buf ib = {0};
        if (sn_buf_printf(&ib, err, "%s-%s", ds, h)) {
            rc = err->code;
            goto out;
        }
        bool dup = false;
        for (size_t i = 0; i < c->n_seen && !dup; i++)
            dup = !strncmp(c->seen[i], ib.data, ib.len) &&
                  (c->seen[i][ib.len] == '\0');
        if (!dup) {
            if (c->n_seen == c->cap_seen) {
                size_t nc = c->cap_seen ? c->cap_seen * 2 : 128;
                char **ns = sn_realloc(c->seen, nc * sizeof *ns);
                if (!ns) {
                    sn_buf_free(&ib);
                    rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
                    goto out;
                }
                c->seen = ns;
                c->cap_seen = nc;
            }
            c->seen[c->n_seen] = sn_strdup(ib.data);
            if (!c->seen[c->n_seen]) {
                sn_buf_free(&ib);
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
                goto out;
            }
            c->n_seen++;
        } else {
            if (!cJSON_IsNumber(jid)) {
                sn_buf_free(&ib);
                rc = imp_fail(err, where, "repeated question and no numeric 'id' to tell it apart");
                goto out;
            }
            if (sn_buf_printf(&ib, err, "-%lld", (long long)jid->valuedouble)) {
                rc = err->code;
                goto out;
            }
        }
        item_id = ib.data;
    }
    /* agents and their replies */
    int n_agents = cJSON_GetArraySize(conv);
    if (n_agents < 1 || n_agents > CA_MAX_AGENTS) {
        rc = imp_fail(err, where, "field 'agent_responses': %d agents (expected 1 to %d)", n_agents,
                  CA_MAX_AGENTS);
        goto out;
    }
    adv = sn_calloc((size_t)n_agents, sizeof *adv);
    agents = sn_calloc((size_t)n_agents, sizeof *agents);
    if (!adv || !agents) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    size_t R = 0;
    char target = 0;
    bool legacy = false;
    int n_adv = 0, first_honest = -1;
    for (int k = 0; k < n_agents; k++) {
        const cJSON *cv = cJSON_GetArrayItem(conv, k);
        if (!cJSON_IsArray(cv)) {
            rc = imp_fail(err, where, "field 'agent_responses[%d]': expected array", k);
            goto out;
        }
        size_t r = 0;
        const char *first_user = NULL;
        int mi = 0;
        for (const cJSON *m = cv->child; m; m = m->next, mi++) {
            const char *role = str_of(cJSON_GetObjectItemCaseSensitive(m, "role"));
            const char *content = str_of(cJSON_GetObjectItemCaseSensitive(m, "content"));
            if (!role || !content) {
                rc = imp_fail(err, where, "field 'agent_responses[%d][%d]': expected {\"role\": "
                          "string, \"content\": string}", k, mi);
                goto out;
            }
            if (!strcmp(role, "system"))
                adv[k] = true;
            else if (!strcmp(role, "assistant"))
                r++;
            else if (!strcmp(role, "user")) {
                if (!first_user)
                    first_user = content;
            } else {
                rc = imp_fail(err, where, "field 'agent_responses[%d][%d].role': unknown role "
                          "'%.40s'", k, mi, role);
                goto out;
            }
        }
        if (k == 0)
            R = r;
        else if (r != R) {
            rc = imp_fail(err, where, "agent %d has %zu replies, agent 0 has %zu: ragged "
                      "conversations cannot be placed in rounds", k, r, R);
            goto out;
        }
        if (!adv[k]) {
            if (first_honest < 0)
                first_honest = k;
            continue;
        }
        n_adv++;
        if (first_honest >= 0 && !c->warned_late) {
            SN_WARN("%s: adversary in slot %d after an honest slot (the source never does "
                    "that); imported by the system-message rule", where, k);
            c->warned_late = true;
            f->sum->n_warnings++;
        }
        /* target from the first user message; every later user message must agree */
        char t = first_user ? find_target(first_user) : 0;
        if (!t) {
            if (first_user && strstr(first_user, "Correct Answer:")) {
                legacy = true;
                continue;
            }
            rc = imp_fail(err, where, "adversary %d: its first user message names no target "
                      "('Your answer: (X)') and is not the legacy design ('Correct Answer:')",
                      k);
            goto out;
        }
        for (const cJSON *m = cv->child; m; m = m->next) {
            const char *role = str_of(cJSON_GetObjectItemCaseSensitive(m, "role"));
            if (strcmp(role, "user"))
                continue;
            char t2 = find_target(str_of(cJSON_GetObjectItemCaseSensitive(m, "content")));
            if (t2 && t2 != t) {
                rc = imp_fail(err, where, "adversary %d: its messages name targets %c and %c", k, t,
                          t2);
                goto out;
            }
        }
        if (target && target != t) {
            rc = imp_fail(err, where, "adversaries have different targets (%c, %c)", target, t);
            goto out;
        }
        target = t;
    }
    if (R < 1 || R > CA_MAX_ROUNDS) {
        rc = imp_fail(err, where, "%zu rounds (expected 1 to %d)", R, CA_MAX_ROUNDS);
        goto out;
    }
    if (target && legacy) {
        rc = imp_fail(err, where, "adversaries mix the targeted and the legacy design");
        goto out;
    }
    if (target && (target == gold || target >= 'A' + (int)n_opt)) {
        rc = imp_fail(err, where, "adversarial target %c is %s", target,
                  target == gold ? "the gold answer" : "outside the options");
        goto out;
    }
    if (c->name_agents >= 0 && c->name_agents != n_agents && !c->warned_agents) {
        SN_WARN("%s: %d agents, the file name says %d", where, n_agents, c->name_agents);
        c->warned_agents = true;
        f->sum->n_warnings++;
    }
    if (c->name_rounds >= 0 && (size_t)c->name_rounds != R && !c->warned_rounds) {
        SN_WARN("%s: %zu rounds, the file name says %d", where, R, c->name_rounds);
        c->warned_rounds = true;
        f->sum->n_warnings++;
    }
    /* replies[t * n + k], and the user message that preceded each reply */
    size_t nm = R * (size_t)n_agents;
    replies = sn_calloc(nm * 2, sizeof *replies);
    msgs = sn_calloc(nm, sizeof *msgs);
    raws = sn_calloc(nm, sizeof *raws);
    sans = sn_calloc(nm, sizeof *sans);
    if (!replies || !msgs || !raws || !sans) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    const char **prompts = replies + nm;
    for (int k = 0; k < n_agents; k++) {
        size_t t = 0;
        const char *last_user = NULL;
        for (const cJSON *m = cJSON_GetArrayItem(conv, k)->child; m; m = m->next) {
            const char *role = str_of(cJSON_GetObjectItemCaseSensitive(m, "role"));
            const char *content = str_of(cJSON_GetObjectItemCaseSensitive(m, "content"));
            if (!strcmp(role, "user"))
                last_user = content;
            else if (!strcmp(role, "assistant")) {
                replies[t * (size_t)n_agents + (size_t)k] = content;
                prompts[t * (size_t)n_agents + (size_t)k] = last_user;
                t++;
            }
        }
    }
    /* visibility: each other agent's previous reply should appear in the round-t prompt */
    for (size_t t = 1; t < R; t++)
        for (int k = 0; k < n_agents; k++) {
            const char *pr = prompts[t * (size_t)n_agents + (size_t)k];
            for (int j = 0; j < n_agents; j++)
                if (j != k && (!pr || !strstr(pr, replies[(t - 1) * (size_t)n_agents +
                                                           (size_t)j])))
                    f->sum->n_visibility_anomalies++;
        }
    enum sn_import_answers mode = f->p->answers == SN_IMPORT_ANSWERS_SENTINEL
                                      ? SN_IMPORT_ANSWERS_SENTINEL
                                      : SN_IMPORT_ANSWERS_SOURCE;
    static const char *const letters[] = {"A", "B", "C", "D", "E", "F", "G", "H", "I",
                                          "J", "K", "L", "M", "N", "O", "P", "Q", "R",
                                          "S", "T", "U", "V", "W", "X", "Y", "Z"};
    const char **last_raw = sn_calloc((size_t)n_agents, sizeof *last_raw);
    if (!last_raw) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nm; i++) {
        bool ok = sn_import_collab_answer(ds, replies[i], opts, n_opt, raws[i], sizeof raws[i]);
        bool sok = sn_extract_answer(replies[i], SN_TASK_MC, n_opt, sans[i]);
        const char *src = ok ? letters[raws[i][0] - 'A'] : NULL;
        const char *sen = sok ? sans[i] : NULL;
        if (!((src == NULL && sen == NULL) || (src && sen && !strcmp(src, sen))))
            f->sum->n_answers_differ++;
        msgs[i].agent = (int)(i % (size_t)n_agents);
        msgs[i].text = replies[i];
        msgs[i].answer = mode == SN_IMPORT_ANSWERS_SENTINEL ? sen : src;
        msgs[i].answer_rule = mode == SN_IMPORT_ANSWERS_SENTINEL ? "sentinel" : "collab-attack";
        if (!msgs[i].answer)
            f->sum->n_unparsed++;
        f->sum->n_messages++;
        if (i >= (R - 1) * (size_t)n_agents)
            last_raw[i % (size_t)n_agents] = raws[i];
    }
    /* the source's vote on the last round, over its raw answers */
    int w = imp_plurality(last_raw, (size_t)n_agents);
    const char *final = NULL;
    if (w >= 0 && last_raw[w][0] && !last_raw[w][1] && last_raw[w][0] >= 'A' &&
        last_raw[w][0] < 'A' + (int)n_opt)
        final = letters[last_raw[w][0] - 'A'];
    sn_free(last_raw);

    for (int k = 0; k < n_agents; k++) {
        agents[k].role = adv[k] ? "adversary" : "honest";
        const char *mdl = adv[k] ? c->adv_model : c->group_model;
        agents[k].model = mdl ? mdl : "unknown";
        agents[k].backend = "import";
        agents[k].position = adv[k] ? "first" : NULL;
    }
    labels = cJSON_CreateObject();
    prov = cJSON_CreateObject();
    if (!labels || !prov ||
        !cJSON_AddStringToObject(labels, "source", "collab-attack") ||
        !cJSON_AddStringToObject(labels, "design",
                                 !n_adv ? "clean" : legacy ? "legacy-no-target" : "targeted") ||
        !cJSON_AddStringToObject(prov, "format", "collab-attack") ||
        !cJSON_AddStringToObject(prov, "path", c->rel) ||
        !cJSON_AddNumberToObject(prov, "line", (double)line) ||
        !cJSON_AddStringToObject(prov, "answer_rule", mode == SN_IMPORT_ANSWERS_SENTINEL
                                                          ? "sentinel"
                                                          : "collab-attack") ||
        (f->p->repo && !cJSON_AddStringToObject(prov, "repo", f->p->repo)) ||
        (f->p->commit && !cJSON_AddStringToObject(prov, "commit", f->p->commit))) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    char id[600], tgt[2] = {target, 0}, gl[2] = {gold, 0}, pv[128];
    imp_debate_id(c->experiment, item_id, c->replicate, id, sizeof id);
    snprintf(pv, sizeof pv, "collab-attack%s%s", f->p->commit ? "@" : "",
             f->p->commit ? f->p->commit : "");
    struct imp_traj t = {
        .id = id, .experiment = c->experiment, .scenario = n_adv ? "collaboration" : "none",
        .dataset = ds, .item_id = item_id, .subject = subject, .task = "mc", .question = stem,
        .options = opts, .n_options = n_opt, .gold = gl, .gold_explanation = expl,
        .adversarial_target = target ? tgt : NULL, .strategy = "simultaneous",
        .n_agents = n_agents, .agents = agents,
        .attack_name = n_adv ? "collaboration" : "none", .n_attackers = n_adv,
        .best_of_n = n_adv ? (c->best_of_n ? c->best_of_n : 1) : 0,
        .placement = n_adv ? "first" : NULL, .msgs = msgs, .n_rounds = R,
        .final_answer = final, .final_correct = final && final[0] == gold, .labels = labels,
        .import = prov, .replicate = c->replicate,
        .backend = "import: debate imported from the Collaboration-attack logs; latency and "
                   "token counts are unknown (written as 0)",
        .prompt_version = pv};
    rc = imp_write_traj(&t, out, err);
out:
    cJSON_Delete(root);
    cJSON_Delete(labels);
    cJSON_Delete(prov);
    sn_free(opts);
    sn_free(replies);
    sn_free(msgs);
    sn_free(raws);
    sn_free(sans);
    sn_free(adv);
    sn_free(agents);
    sn_free(item_id);
    return rc;
}

const struct imp_format imp_format_collab_attack = {
    .name = "collab-attack", .file_open = ca_open, .record = ca_record,
    .file_close = ca_close};
