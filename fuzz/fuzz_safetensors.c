/* fuzz/fuzz_safetensors.c: the safetensors reader (hf/safetensors.h) on arbitrary bytes.
** Every input must either be refused with an error message or open cleanly; a file that opens
** must have every tensor's bytes inside the input and convertible without a fault. */
#include "hf/hf.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_err err = {0};
    struct sn_st_file *f = NULL;
    if (sn_st_open_memory(data, size, "fuzz", &f, &err) != SN_OK) {
        if (f || !err.msg[0])
            abort(); /* failure must leave no handle and say why */
        return 0;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < sn_st_count(f); i++) {
        const struct sn_st_tensor *t = sn_st_get(f, i);
        const uint8_t *p = t->data;
        if (p < data || p + t->nbytes > data + size || sn_st_find(f, t->name) != t)
            abort();
        total += t->nbytes;
        if (t->n_elements <= 4096) {
            float *buf = malloc(t->n_elements * sizeof *buf + 1);
            if (buf) {
                struct sn_err e2 = {0};
                (void)sn_st_to_f32(t, buf, &e2);
                free(buf);
            }
        }
    }
    if (total > size)
        abort();
    for (size_t i = 0; i < sn_st_metadata_count(f); i++)
        if (!sn_st_metadata(f, sn_st_metadata_key(f, i)))
            abort();
    sn_st_close(f);
    return 0;
}
