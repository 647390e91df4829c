/* fuzz/fuzz_extract.c: answer extraction and numeric normalisation (context/extract.c) on
** arbitrary bytes. The first byte picks the number of options (0-26); the rest is the
** response. Invariants (abort on violation): a multiple-choice answer is one letter within
** range; a numeric answer parses completely with strtod and normalises to itself; extraction
** is deterministic. */
#include "data/data.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 1 << 16)
        return 0;
    size_t n_opt = data[0] % 27;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char a[SN_ANSWER_MAX], b[SN_ANSWER_MAX];
    if (sn_extract_answer(text, SN_TASK_MC, n_opt, a)) {
        if (strlen(a) != 1 || a[0] < 'A' || (size_t)(a[0] - 'A') >= n_opt)
            abort();
        if (!sn_extract_answer(text, SN_TASK_MC, n_opt, b) || strcmp(a, b) != 0)
            abort();
    } else if (a[0] != '\0') {
        abort();
    }
    if (sn_extract_answer(text, SN_TASK_NUMERIC, 0, a)) {
        char *end;
        strtod(a, &end);
        if (*end != '\0' || a[0] == '\0')
            abort();
        if (!sn_normalize_number(a, b) || strcmp(a, b) != 0)
            abort();
        if (!sn_answer_equal(a, a, SN_TASK_NUMERIC))
            abort();
    } else if (a[0] != '\0') {
        abort();
    }
    if (sn_normalize_number(text, a)) {
        if (!sn_normalize_number(a, b) || strcmp(a, b) != 0)
            abort();
    }
    free(text);
    return 0;
}
