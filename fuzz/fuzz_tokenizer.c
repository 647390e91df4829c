/* fuzz/fuzz_tokenizer.c: libFuzzer target for sn_tokenizer_encode/decode on arbitrary bytes,
** with the demo tokenizer (written once to a temp file and loaded through sn_tokenizer_open).
** Checks: no crash or sanitizer report; invalid UTF-8 is refused with SN_E_FORMAT and no ids;
** valid UTF-8 gives ids inside the vocabulary whose decoding is NFC(input) (utf8proc), and
** encoding that decoding again gives the same ids.
** Run: build-fuzz/fuzz/fuzz_tokenizer -max_total_time=60 fuzz/corpus/tokenizer */
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

static struct sn_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[64];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "/tmp/sn-fuzz-tokenizer-%ld.json", (long)getpid());
    if (sn_tokenizer_write_demo(path, &err) || sn_tokenizer_open(path, &tok, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    unlink(path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_ids ids = {0}, again = {0};
    struct sn_err err = {0};
    int rc = sn_tokenizer_encode(tok, (const char *)data, size, &ids, &err);
    if (rc) {
        if (rc != SN_E_FORMAT || ids.n || !strstr(err.msg, "byte offset"))
            abort();
        sn_ids_free(&ids);
        return 0;
    }
    for (size_t i = 0; i < ids.n; i++)
        if (ids.v[i] < 0 || (size_t)ids.v[i] >= sn_tokenizer_vocab_size(tok))
            abort();
    char *text = NULL;
    size_t len = 0;
    if (sn_tokenizer_decode(tok, ids.v, ids.n, &text, &len, &err))
        abort();
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t nn = utf8proc_map(data, (utf8proc_ssize_t)size, &nfc,
                                       UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (nn < 0 || (size_t)nn != len || (len && memcmp(nfc, text, len)))
        abort();
    if (sn_tokenizer_encode(tok, text, len, &again, &err) || again.n != ids.n ||
        (ids.n && memcmp(again.v, ids.v, ids.n * sizeof *ids.v)))
        abort();
    free(nfc);
    sn_free(text);
    sn_ids_free(&ids);
    sn_ids_free(&again);
    return 0;
}
