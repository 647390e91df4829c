/* common/text.c: UTF-8 validity and path joining (common.h). */
#include "common/common.h"

#include <stdio.h>
#include <string.h>

bool sn_utf8_valid(const void *data, size_t n, size_t *bad)
{
    const unsigned char *s = data;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2
                 : c >= 0xF0 && c <= 0xF4 ? 3 : 9;
        if (k == 9 || n - i <= k)
            goto no;
        uint32_t cp = c & (0x7Fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                goto no;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            goto no;
        i += k + 1;
    }
    return true;
no:
    if (bad)
        *bad = i;
    return false;
}

bool sn_utf8_valid_str(const char *s)
{
    return s ? sn_utf8_valid(s, strlen(s), NULL) : true;
}

int sn_path_join(char *buf, size_t n, const char *dir, const char *name, struct sn_err *err)
{
    int k = snprintf(buf, n, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= n)
        return sn_err_set(err, SN_E_ARG, "%s/%s: path too long", dir, name);
    return SN_OK;
}

char *sn_path_join_new(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sn_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

bool sn_parse_u64(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false; /* overflow */
        v = v * 10 + d;
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}
