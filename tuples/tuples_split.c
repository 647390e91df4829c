/* tuples/tuples_split.c: the split rule a build recorded, read back from its manifest's
** settings (tuples/tuples.h: sn_tuples_split_from_settings), so that a later stage can tell which
** trajectories the build put in which split (`sentinel eval`'s n-gram baseline trains on the
** train split's trajectories; docs/eval.md "Baselines"). The writer is tuples/build.c
** (make_settings); the keys are docs/formats.md "Manifest". */
#include "tuples/tuples.h"

#include <inttypes.h>
#include <string.h>

static int read_list(const cJSON *settings, const char *key, const char ***out, size_t *n,
                     struct sn_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(settings, key), *e;
    *out = NULL;
    *n = 0;
    if (!a)
        return SN_OK;
    if (!cJSON_IsArray(a))
        return sn_err_set(err, SN_E_FORMAT, "manifest settings.%s: expected a list of strings",
                          key);
    size_t m = (size_t)cJSON_GetArraySize(a);
    if (!m)
        return SN_OK;
    const char **v = sn_calloc(m, sizeof *v);
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    size_t k = 0;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsString(e)) {
            sn_free(v);
            return sn_err_set(err, SN_E_FORMAT, "manifest settings.%s[%zu]: expected a string",
                              key, k);
        }
        v[k++] = e->valuestring;
    }
    *out = v;
    *n = k;
    return SN_OK;
}

int sn_tuples_split_from_settings(const cJSON *settings, struct sn_tuples_params *p,
                                  struct sn_err *err)
{
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(settings, "split_by");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(settings, "split_seed");
    const cJSON *vf = cJSON_GetObjectItemCaseSensitive(settings, "validation_fraction");
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(settings, "test_fraction");
    p->validation_values = p->test_values = NULL;
    p->n_validation_values = p->n_test_values = 0;
    if (!cJSON_IsObject(settings) || !cJSON_IsString(by) || !cJSON_IsString(seed) ||
        !cJSON_IsNumber(vf) || !cJSON_IsNumber(tf))
        return sn_err_set(err, SN_E_FORMAT, "manifest settings: expected split_by (string), "
                          "split_seed (decimal string), validation_fraction and test_fraction "
                          "(numbers)");
    int rc = sn_split_by_parse(by->valuestring, &p->split_by, err);
    if (rc)
        return sn_err_wrap(err, "manifest settings");
    uint64_t s;
    if (!sn_parse_u64(seed->valuestring, strlen(seed->valuestring), 0, UINT64_MAX, &s))
        return sn_err_set(err, SN_E_FORMAT, "manifest settings.split_seed '%s': expected a "
                          "decimal integer", seed->valuestring);
    if (!(vf->valuedouble >= 0 && tf->valuedouble >= 0 && vf->valuedouble + tf->valuedouble <= 1))
        return sn_err_set(err, SN_E_FORMAT, "manifest settings: validation_fraction %g and "
                          "test_fraction %g: expected two shares in [0, 1] summing to at most 1",
                          vf->valuedouble, tf->valuedouble);
    p->split_seed = s;
    p->validation_fraction = vf->valuedouble;
    p->test_fraction = tf->valuedouble;
    const char **va = NULL, **te = NULL;
    rc = read_list(settings, "validation", &va, &p->n_validation_values, err);
    if (!rc)
        rc = read_list(settings, "test", &te, &p->n_test_values, err);
    p->validation_values = va;
    p->test_values = te;
    if (rc)
        sn_tuples_split_lists_free(p);
    return rc;
}

void sn_tuples_split_lists_free(struct sn_tuples_params *p)
{
    sn_free((void *)p->validation_values);
    sn_free((void *)p->test_values);
    p->validation_values = p->test_values = NULL;
    p->n_validation_values = p->n_test_values = 0;
}
