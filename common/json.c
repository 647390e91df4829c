/* common/json.c: JSON with positioned errors, recipes with --set overrides and key checks
** (docs/design.md §1 "Every option can come from the recipe ... and be overridden"). */
#include "common/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t sn_json_nul_escape(const char *text, size_t len)
{
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') {
            in_str = !in_str;
        } else if (in_str && text[i] == '\\' && i + 1 < len) {
            if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0)
                return i;
            i++; /* the escaped character (an escaped quote or backslash) */
        }
    }
    return (size_t)-1;
}

/* "name:line:col" of byte off. */
static void json_pos(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

int sn_json_parse(const char *text, size_t len, const char *name, cJSON **out,
                  struct sn_err *err)
{
    const char *end = NULL;
    size_t line, col;
    *out = NULL;
    /* cJSON keeps strings NUL-terminated: a raw NUL byte would end the text early and an
    ** escaped U+0000 would cut a string short, both silently. Refuse them, positioned. */
    const char *nul = memchr(text, 0, len);
    if (nul) {
        json_pos(text, len, (size_t)(nul - text), &line, &col);
        return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: NUL byte in JSON text (byte %zu)",
                          name, line, col, (size_t)(nul - text));
    }
    size_t esc = sn_json_nul_escape(text, len);
    if (esc != (size_t)-1) {
        json_pos(text, len, esc, &line, &col);
        return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: \\u0000 (NUL) in a JSON string is not "
                          "supported (strings are NUL-terminated here; it would cut the text)",
                          name, line, col);
    }
    *out = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (*out) {
        size_t off = (size_t)(end - text);
        while (off < len && strchr(" \t\r\n", text[off]))
            off++;
        if (off == len)
            return SN_OK;
        cJSON_Delete(*out);
        *out = NULL;
        json_pos(text, len, off, &line, &col);
        return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: invalid JSON: text after the end of "
                          "the value", name, line, col);
    }
    if (!end)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory parsing JSON", name);
    size_t off = (size_t)(end - text);
    json_pos(text, len, off, &line, &col);
    char near[24] = "";
    size_t k = 0;
    for (size_t i = off; i < len && k < sizeof near - 1 && text[i] != '\n'; i++)
        near[k++] = text[i];
    near[k] = '\0';
    if (off >= len)
        return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: invalid JSON: unexpected end of input",
                          name, line, col);
    if (!near[0])
        return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: invalid JSON at the end of the line",
                          name, line, col);
    return sn_err_set(err, SN_E_FORMAT, "%s:%zu:%zu: invalid JSON near '%s'", name, line, col,
                      near);
}

int sn_json_load(const char *path, cJSON **out, struct sn_err *err)
{
    char *text;
    size_t len;
    *out = NULL;
    int rc = sn_file_read(path, 64u << 20, &text, &len, err);
    if (rc)
        return rc;
    rc = sn_json_parse(text, len, path, out, err);
    sn_free(text);
    return rc;
}

/* Appends v in the layout Python's json.dumps(indent=2) produces, which is what HF and PEFT
** write (and what users diff against). Scalars use cJSON's own rendering. */
static int json_pretty(struct sn_buf *b, const cJSON *v, int depth, struct sn_err *err)
{
    int rc = SN_OK;
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        bool obj = cJSON_IsObject(v);
        if (!v->child)
            return sn_buf_puts(b, obj ? "{}" : "[]", err);
        rc = sn_buf_puts(b, obj ? "{\n" : "[\n", err);
        for (const cJSON *c = v->child; !rc && c; c = c->next) {
            for (int i = 0; !rc && i < 2 * (depth + 1); i++)
                rc = sn_buf_puts(b, " ", err);
            if (!rc && obj) {
                cJSON *key = cJSON_CreateString(c->string);
                char *ks = key ? cJSON_PrintUnformatted(key) : NULL;
                rc = ks ? sn_buf_printf(b, err, "%s: ", ks)
                        : sn_err_set(err, SN_E_NOMEM, "JSON: out of memory");
                cJSON_free(ks);
                cJSON_Delete(key);
            }
            if (!rc)
                rc = json_pretty(b, c, depth + 1, err);
            if (!rc)
                rc = sn_buf_puts(b, c->next ? ",\n" : "\n", err);
        }
        for (int i = 0; !rc && i < 2 * depth; i++)
            rc = sn_buf_puts(b, " ", err);
        return rc ? rc : sn_buf_puts(b, obj ? "}" : "]", err);
    }
    char *s = cJSON_PrintUnformatted(v);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "JSON: out of memory");
    rc = sn_buf_puts(b, s, err);
    cJSON_free(s);
    return rc;
}

int sn_json_save(const char *path, const cJSON *json, struct sn_err *err)
{
    struct sn_buf b = {0};
    int rc = json_pretty(&b, json, 0, err);
    if (!rc)
        rc = sn_buf_puts(&b, "\n", err);
    if (!rc)
        rc = sn_atomic_write(path, b.data, b.len, err);
    sn_buf_free(&b);
    return rc;
}

size_t sn_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 128 || m > 128)
        return n > m ? n : m;
    size_t prev[129], cur[129];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (m + 1) * sizeof *prev);
    }
    return prev[m];
}

int sn_recipe_check_keys(const cJSON *obj, const char *where, const char *const *valid,
                         struct sn_err *err)
{
    if (!obj)
        return SN_OK;
    if (!cJSON_IsObject(obj))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s' must be an object", where);
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool ok = false;
        const char *best = NULL;
        size_t best_d = (size_t)-1;
        for (const char *const *v = valid; *v; v++) {
            if (strcmp(c->string, *v) == 0) {
                ok = true;
                break;
            }
            size_t d = sn_edit_distance(c->string, *v);
            if (d < best_d) {
                best_d = d;
                best = *v;
            }
        }
        if (ok)
            continue;
        if (best && best_d <= 3 + strlen(c->string) / 3)
            return sn_err_set(err, SN_E_ARG, "recipe: unknown key '%s%s%s' (did you mean '%s'?)",
                              where && *where ? where : "", where && *where ? "." : "",
                              c->string, best);
        return sn_err_set(err, SN_E_ARG, "recipe: unknown key '%s%s%s'",
                          where && *where ? where : "", where && *where ? "." : "", c->string);
    }
    return SN_OK;
}

int sn_recipe_apply_override(cJSON *root, const char *assignment, struct sn_err *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return sn_err_set(err, SN_E_ARG, "--set '%s': expected KEY.PATH=VALUE", assignment);
    char path[512];
    size_t plen = (size_t)(eq - assignment);
    if (plen >= sizeof path)
        return sn_err_set(err, SN_E_ARG, "--set: key path too long");
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    const char *value = eq + 1;
    /* The value must parse whole: "3x" is not the number 3 (cJSON_Parse alone stops after
    ** the first value and ignores the rest). Not JSON: taken as a string, which a typed getter
    ** then refuses ("simulate.rounds: expected an integer"). */
    cJSON *v = cJSON_ParseWithOpts(value, NULL, 1);
    if (!v)
        v = cJSON_CreateString(value); /* not JSON: a bare string such as sim or cpu */
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "--set: out of memory");
    cJSON *obj = root;
    char *save = NULL, *part = path;
    for (;;) {
        char *dot = strchr(part, '.');
        if (dot)
            *dot = '\0';
        if (!*part) {
            cJSON_Delete(v);
            return sn_err_set(err, SN_E_ARG, "--set '%s': empty key in path", assignment);
        }
        if (!dot) {
            if (cJSON_GetObjectItemCaseSensitive(obj, part))
                cJSON_ReplaceItemInObjectCaseSensitive(obj, part, v);
            else
                cJSON_AddItemToObject(obj, part, v);
            return SN_OK;
        }
        cJSON *next = cJSON_GetObjectItemCaseSensitive(obj, part);
        if (!next) {
            next = cJSON_AddObjectToObject(obj, part);
            if (!next) {
                cJSON_Delete(v);
                return sn_err_set(err, SN_E_NOMEM, "--set: out of memory");
            }
        } else if (!cJSON_IsObject(next)) {
            cJSON_Delete(v);
            return sn_err_set(err, SN_E_ARG, "--set '%s': '%s' is not an object in the recipe",
                              assignment, part);
        }
        obj = next;
        part = dot + 1;
        (void)save;
    }
}

/* Duplicate keys anywhere in the tree: cJSON keeps both and every getter returns the first, so
** "the later one wins" in the user's mind and the earlier one in ours. Path: "simulate.rounds". */
static int check_duplicates(const cJSON *v, struct sn_buf *path, const char *name,
                            struct sn_err *err)
{
    int rc = SN_OK;
    if (cJSON_IsArray(v)) {
        size_t i = 0, len = path->len;
        for (const cJSON *c = v->child; !rc && c; c = c->next, i++) {
            rc = sn_buf_printf(path, err, "[%zu]", i);
            if (!rc)
                rc = check_duplicates(c, path, name, err);
            path->len = len;
        }
        return rc;
    }
    if (!cJSON_IsObject(v))
        return SN_OK;
    struct sn_strmap seen = {0};
    size_t len = path->len;
    for (const cJSON *c = v->child; !rc && c; c = c->next) {
        bool added = false;
        rc = sn_strmap_put(&seen, c->string, strlen(c->string), 0, &added, err);
        if (!rc)
            rc = sn_buf_printf(path, err, "%s%s", len ? "." : "", c->string);
        if (!rc && !added)
            rc = sn_err_set(err, SN_E_ARG, "%s: duplicate key '%s' (the recipe must name each "
                            "key once)", name, path->data);
        if (!rc)
            rc = check_duplicates(c, path, name, err);
        path->len = len;
        if (path->data)
            path->data[len] = '\0';
    }
    sn_strmap_free(&seen);
    return rc;
}

/* The sections of a recipe (docs/formats.md#recipe); each stage checks the keys inside its own
** (`import`: `sentinel run`, docs/run.md).
** "about" is free text for the reader of the recipe (what it is for, what it needs). */
static const char *const recipe_sections[] = {"about", "simulate", "import", "tokenize", "build",
                                              "train", "export", "eval", "out_dir", NULL};

int sn_recipe_load(const char *path, const char *const *overrides, size_t n_overrides,
                   cJSON **out, struct sn_err *err)
{
    cJSON *root = NULL;
    int rc;
    *out = NULL;
    if (path) {
        rc = sn_json_load(path, &root, err);
        if (rc)
            return rc;
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            return sn_err_set(err, SN_E_FORMAT, "%s: a recipe must be a JSON object", path);
        }
        struct sn_buf kp = {0};
        rc = check_duplicates(root, &kp, path, err);
        sn_buf_free(&kp);
        if (rc) {
            cJSON_Delete(root);
            return rc;
        }
    } else {
        root = cJSON_CreateObject();
        if (!root)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_overrides; i++) {
        rc = sn_recipe_apply_override(root, overrides[i], err);
        if (rc) {
            cJSON_Delete(root);
            return rc;
        }
    }
    rc = sn_recipe_check_keys(root, "", recipe_sections, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return SN_OK;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

int sn_json_get_int(const cJSON *obj, const char *where, const char *key, int64_t dflt,
                    int64_t *out, struct sn_err *err)
{
    const cJSON *v = get(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        fabs(v->valuedouble) > 9.007199254740992e15)
        return sn_err_set(err, SN_E_ARG, "%s.%s: expected an integer", where, key);
    *out = (int64_t)v->valuedouble;
    return SN_OK;
}

int sn_json_get_double(const cJSON *obj, const char *where, const char *key, double dflt,
                       double *out, struct sn_err *err)
{
    const cJSON *v = get(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    if (!cJSON_IsNumber(v))
        return sn_err_set(err, SN_E_ARG, "%s.%s: expected a number", where, key);
    *out = v->valuedouble;
    return SN_OK;
}

int sn_json_get_bool(const cJSON *obj, const char *where, const char *key, bool dflt,
                     bool *out, struct sn_err *err)
{
    const cJSON *v = get(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    if (!cJSON_IsBool(v))
        return sn_err_set(err, SN_E_ARG, "%s.%s: expected true or false", where, key);
    *out = cJSON_IsTrue(v);
    return SN_OK;
}

int sn_json_get_string(const cJSON *obj, const char *where, const char *key, const char *dflt,
                       const char **out, struct sn_err *err)
{
    const cJSON *v = get(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    if (!cJSON_IsString(v))
        return sn_err_set(err, SN_E_ARG, "%s.%s: expected a string", where, key);
    *out = v->valuestring;
    return SN_OK;
}
