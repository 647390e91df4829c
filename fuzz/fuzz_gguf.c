/* fuzz/fuzz_gguf.c: the strict GGUF reader (export/export.h) on arbitrary bytes. Every input
** must either be refused with an error message and no handle, or open cleanly; a file that
** opens must have every tensor's bytes inside the input, in order and without overlap, and
** every KV must be describable and every tensor convertible without a fault. */
#include "export/export.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_err err = {0};
    struct sn_gguf *g = NULL;
    if (sn_gguf_open_memory(data, size, "fuzz", &g, &err) != SN_OK) {
        if (g || !err.msg[0])
            abort(); /* failure must leave no handle and say why */
        return 0;
    }
    const uint8_t *prev_end = NULL;
    for (size_t i = 0; i < sn_gguf_n_tensors(g); i++) {
        const struct sn_gguf_tensor *t = sn_gguf_tensor(g, i);
        const uint8_t *p = t->data;
        if (p < data || t->nbytes > size || p + t->nbytes > data + size ||
            sn_gguf_find_tensor(g, t->name) != t || (prev_end && p < prev_end))
            abort();
        prev_end = p + t->nbytes;
        if (t->n_elements <= 4096) {
            float *buf = malloc(t->n_elements * sizeof *buf + 1);
            if (buf) {
                struct sn_err e2 = {0};
                if (sn_gguf_tensor_to_f32(t, buf, &e2) != SN_OK)
                    abort();
                free(buf);
            }
        }
    }
    for (size_t i = 0; i < sn_gguf_n_kv(g); i++) {
        struct sn_buf b = {0};
        struct sn_err e2 = {0};
        const char *k = sn_gguf_key(g, i);
        if (!k || sn_gguf_find(g, k) != (int)i || sn_gguf_kv_describe(g, i, &b, &e2) != SN_OK)
            abort();
        sn_buf_free(&b);
    }
    sn_gguf_close(g);
    return 0;
}
