/* tokenizer/fold.c: the folded form of a text that content keys are taken of (sn_text_fold,
** tokenizer/tokenizer.h): two texts that differ only in Unicode composition, letter case or
** spacing fold to the same bytes. `sentinel build` hashes training questions this way and
** `sentinel eval` hashes evaluated ones the same way (docs/formats.md "Manifest", docs/eval.md
** "Leakage"). Here because tokenizer/ is the module that owns utf8proc. */
#include "tokenizer/tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <utf8proc.h>

static bool fold_space(utf8proc_int32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\v' || cp == '\f' || cp == '\r' || cp == 0x85)
        return true;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
        return true;
    default:
        return false;
    }
}

int sn_text_fold(const char *s, size_t n, struct sn_buf *out, struct sn_err *err)
{
    utf8proc_uint8_t *nfc = NULL;
    if (n > (size_t)PTRDIFF_MAX / 4) /* utf8proc lengths are signed */
        return sn_err_set(err, SN_E_ARG, "fold: text of %zu bytes is too long", n);
    utf8proc_ssize_t nn = n ? utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
                                           &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE)
                            : 0;
    if (nn < 0) {
        free(nfc);
        return sn_err_set(err, SN_E_FORMAT, "fold: NFC normalization failed: %s",
                          utf8proc_errmsg(nn));
    }
    size_t start = out->len;
    bool space = false;
    int rc = SN_OK;
    for (utf8proc_ssize_t i = 0; !rc && i < nn;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(nfc + i, nn - i, &cp);
        if (k <= 0) { /* utf8proc_map returned valid UTF-8; kept as a guard */
            rc = sn_err_set(err, SN_E_FORMAT, "fold: invalid UTF-8 after NFC");
            break;
        }
        i += k;
        if (fold_space(cp)) {
            space = true;
            continue;
        }
        if (space && out->len > start)
            rc = sn_buf_append(out, " ", 1, err);
        space = false;
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t e = utf8proc_encode_char(utf8proc_tolower(cp), enc);
        if (!rc)
            rc = sn_buf_append(out, enc, (size_t)e, err);
    }
    free(nfc); /* allocated by utf8proc with malloc */
    if (!rc && out->len == start) /* an empty text still gives a C string */
        rc = sn_buf_append(out, "", 0, err);
    return rc;
}
