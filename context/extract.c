/* context/extract.c: final-answer extraction and numeric normalisation (docs/design.md §4
** "Labels"; docs/simulate.md#answers-and-extraction). Contract in context/context.h.
**
** The classic mistakes of research code are regression-tested in tests/test_data_extract.c:
** taking the first capital letter ("The answer is B" -> "T"), concatenating digits
** ("3.5" -> "35"), counting an unparsed answer as correct, reading "I think" as option I.
** Every rule here reads the text left to right and keeps the LAST match of the first rule
** that matches at all, because models state their conclusion at the end. */
#include "context/context.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

static bool is_alnum_c(char c) { return isalnum((unsigned char)c) != 0; }
static bool is_digit_c(char c) { return c >= '0' && c <= '9'; }

static char lc(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* Case-insensitive search for an ASCII needle (lower-case, non-empty). */
static const char *ci_find(const char *hay, const char *needle)
{
    char n0 = needle[0];
    for (const char *p = hay; *p; p++) {
        if (lc(*p) != n0)
            continue;
        size_t k = 1;
        while (needle[k] && lc(p[k]) == needle[k])
            k++;
        if (!needle[k])
            return p;
    }
    return NULL;
}

void sn_format_number(double v, char out[SN_ANSWER_MAX])
{
    if (!isfinite(v)) {
        snprintf(out, SN_ANSWER_MAX, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        return;
    }
    double r = nearbyint(v);
    if (fabs(v - r) <= 1e-9 * fmax(1.0, fabs(v)) && fabs(r) < 1e15) {
        if (r == 0.0)
            r = 0.0; /* no "-0" */
        snprintf(out, SN_ANSWER_MAX, "%.0f", r);
        return;
    }
    snprintf(out, SN_ANSWER_MAX, "%.10g", v);
}

static bool scan_number(const char *s, size_t i, double *v, size_t *end);

/* Spaces, a number (scan_number), spaces, from s[i]: the number in *v, in *end the index after
** the trailing spaces. */
static bool scan_padded(const char *s, size_t i, double *v, size_t *end)
{
    while (s[i] == ' ')
        i++;
    if (!scan_number(s, i, v, end))
        return false;
    while (s[*end] == ' ')
        (*end)++;
    return true;
}

/* Parses one number token starting exactly at s[i]: [sign][$ or \$](digits[,ddd]*[.digits] |
** .digits)[/digits][% or \%], or \frac{a}{b} (also \dfrac, \tfrac). On success *v and *end
** (index one past the token) are set. Digits separated by a comma count as thousands only in
** groups of exactly three ("1,000" = 1000; "1,2" is the number 1 followed by text). */
static bool scan_number(const char *s, size_t i, double *v, size_t *end)
{
    size_t p = i;
    double sign = 1.0;
    if (s[p] == '$') {
        p++;
    } else if (s[p] == '\\' && s[p + 1] == '$') {
        p += 2;
    }
    if (s[p] == '-' || s[p] == '+') {
        sign = s[p] == '-' ? -1.0 : 1.0;
        p++;
    } else if ((unsigned char)s[p] == 0xE2 && (unsigned char)s[p + 1] == 0x88 &&
               (unsigned char)s[p + 2] == 0x92) { /* U+2212 minus sign */
        sign = -1.0;
        p += 3;
    }
    if (s[p] == '$') {
        p++;
    } else if (s[p] == '\\' && s[p + 1] == '$') {
        p += 2;
    }
    /* \frac{a}{b} */
    const char *fr[] = {"\\frac{", "\\dfrac{", "\\tfrac{"};
    for (size_t f = 0; f < 3; f++) {
        size_t fl = strlen(fr[f]);
        if (strncmp(s + p, fr[f], fl) == 0) {
            double a, b;
            size_t e1, e2;
            if (!scan_padded(s, p + fl, &a, &e1) || s[e1] != '}' || s[e1 + 1] != '{')
                return false;
            if (!scan_padded(s, e1 + 2, &b, &e2) || s[e2] != '}' || b == 0.0)
                return false;
            *v = sign * a / b;
            if (!isfinite(*v))
                return false;
            *end = e2 + 1;
            return true;
        }
    }
    size_t start = p;
    char digits[64];
    size_t nd = 0;
    size_t group = 0; /* length of the leading digit run */
    while (is_digit_c(s[p])) {
        if (nd < sizeof digits - 2)
            digits[nd++] = s[p];
        p++;
        group++;
    }
    if (group > 0 && group <= 3) {
        /* thousands separators: ",ddd" not followed by another digit */
        while (s[p] == ',' && is_digit_c(s[p + 1]) && is_digit_c(s[p + 2]) &&
               is_digit_c(s[p + 3]) && !is_digit_c(s[p + 4])) {
            for (int k = 1; k <= 3; k++)
                if (nd < sizeof digits - 2)
                    digits[nd++] = s[p + k];
            p += 4;
        }
    }
    if (s[p] == '.' && is_digit_c(s[p + 1])) {
        if (nd < sizeof digits - 2)
            digits[nd++] = '.';
        p++;
        while (is_digit_c(s[p])) {
            if (nd < sizeof digits - 2)
                digits[nd++] = s[p];
            p++;
        }
    }
    if (p == start || nd == 0 || (nd == 1 && digits[0] == '.'))
        return false;
    /* scientific notation: 1e5, 2.5E-3 (the exponent must end the token) */
    if ((s[p] == 'e' || s[p] == 'E') &&
        (is_digit_c(s[p + 1]) || ((s[p + 1] == '-' || s[p + 1] == '+') && is_digit_c(s[p + 2])))) {
        size_t q = p + 1;
        size_t m0 = nd;
        if (nd < sizeof digits - 2)
            digits[nd++] = 'e';
        if (s[q] == '-' || s[q] == '+') {
            if (nd < sizeof digits - 2)
                digits[nd++] = s[q];
            q++;
        }
        while (is_digit_c(s[q])) {
            if (nd < sizeof digits - 2)
                digits[nd++] = s[q];
            q++;
        }
        if (is_alnum_c(s[q]))
            nd = m0; /* "1e5x": not a number in scientific notation */
        else
            p = q;
    }
    digits[nd] = '\0';
    char *ep;
    double a = strtod(digits, &ep);
    if (*ep)
        return false;
    /* a/b: a simple fraction written inline ("12/4", "3/8") */
    if (s[p] == '/' && is_digit_c(s[p + 1])) {
        size_t q = p + 1;
        double b = 0.0;
        size_t nq = 0;
        char den[32];
        while (is_digit_c(s[q]) && nq < sizeof den - 1)
            den[nq++] = s[q++];
        den[nq] = '\0';
        if (s[q] == '.' && is_digit_c(s[q + 1])) {
            /* "1/2.5" is not a simple fraction; leave the '/' as text */
        } else {
            b = strtod(den, NULL);
            if (b != 0.0 && !is_digit_c(s[q])) {
                a = a / b;
                p = q;
            }
        }
    }
    if (s[p] == '%') {
        p++;
    } else if (s[p] == '\\' && s[p + 1] == '%') {
        p += 2;
    }
    if (!isfinite(a))
        return false; /* "5e555": not a usable answer */
    *v = sign * a;
    *end = p;
    return true;
}

/* A number may start at i if the previous byte is not part of a word or a number. */
static bool number_can_start(const char *s, size_t i)
{
    if (i > 0) {
        char prev = s[i - 1];
        if (is_alnum_c(prev) || prev == '.' || prev == ',' || prev == '_')
            return false;
    }
    char c = s[i];
    if (is_digit_c(c))
        return true;
    if (c == '.' && is_digit_c(s[i + 1]))
        return true;
    if (c == '-' || c == '+' || c == '$')
        return true;
    if ((unsigned char)c == 0xE2)
        return true;
    if (c == '\\')
        return s[i + 1] == '$' || strncmp(s + i, "\\frac{", 6) == 0 ||
               strncmp(s + i, "\\dfrac{", 7) == 0 || strncmp(s + i, "\\tfrac{", 7) == 0;
    return false;
}

static bool scan_number_here(const char *s, size_t i, double *v, size_t *end)
{
    if (!number_can_start(s, i))
        return false;
    return scan_number(s, i, v, end);
}

/* The last number token in s[from, to). */
static bool last_number(const char *s, size_t from, size_t to, double *v)
{
    bool found = false;
    size_t i = from;
    while (i < to && s[i]) {
        double x;
        size_t e;
        if (scan_number_here(s, i, &x, &e) && e <= to) {
            *v = x;
            found = true;
            i = e;
        } else {
            i++;
        }
    }
    return found;
}

/* The first number token at s[i..] after skipping decoration (spaces, ':', '*', '=', '(',
** "is", "$" inline math), within a short distance. */
static bool number_after(const char *s, size_t i, double *v)
{
    size_t lim = i + 24;
    for (size_t p = i; s[p] && p < lim; p++) {
        char c = s[p];
        if (c == ' ' || c == ':' || c == '*' || c == '=' || c == '(' || c == '\t' ||
            c == '\n' || (c == '\\' && (s[p + 1] == '(' || s[p + 1] == '[')))
            continue;
        if ((c == 'i' || c == 'I') && (s[p + 1] == 's' || s[p + 1] == 'S') && s[p + 2] == ' ') {
            p++;
            continue;
        }
        if (c == '$' && !is_digit_c(s[p + 1]) && s[p + 1] != '-' && s[p + 1] != '\\')
            continue; /* "$" opening inline math */
        size_t e;
        if (c == '\\' && strncmp(s + p, "\\boxed{", 7) == 0) {
            p += 6;
            continue;
        }
        if (scan_number(s, p, v, &e))
            return true;
        return false;
    }
    return false;
}

/* ---- numeric normalisation ---- */

bool sn_normalize_number(const char *s, char out[SN_ANSWER_MAX])
{
    out[0] = '\0';
    if (!s)
        return false;
    size_t n = strlen(s);
    if (n > 256)
        return false;
    char buf[260];
    memcpy(buf, s, n + 1);
    /* trim, strip \boxed{...}, $...$ and a trailing period */
    char *b = buf;
    for (int pass = 0; pass < 4; pass++) {
        while (*b == ' ' || *b == '\t' || *b == '\n')
            b++;
        size_t L = strlen(b);
        while (L && (b[L - 1] == ' ' || b[L - 1] == '\t' || b[L - 1] == '\n' || b[L - 1] == '.'))
            b[--L] = '\0';
        if (strncmp(b, "\\boxed{", 7) == 0 && L > 7 && b[L - 1] == '}') {
            b[L - 1] = '\0';
            b += 7;
            continue;
        }
        if (L >= 2 && b[0] == '$' && b[L - 1] == '$' && !is_digit_c(b[1])) {
            b[L - 1] = '\0';
            b++;
            continue;
        }
        if (L >= 4 && b[0] == '\\' && b[1] == '(' && b[L - 2] == '\\' && b[L - 1] == ')') {
            b[L - 2] = '\0';
            b += 2;
            continue;
        }
        break;
    }
    double v;
    size_t e;
    if (!scan_number(b, 0, &v, &e))
        return false;
    while (b[e] == ' ')
        e++;
    if (b[e] == '$' && b[e + 1] == '\0')
        e++;
    if (b[e] != '\0')
        return false;
    sn_format_number(v, out);
    return true;
}

/* ---- letters ---- */

static int letter_at(const char *s, size_t i, size_t n_options, bool allow_lower)
{
    char c = s[i];
    int k;
    if (c >= 'A' && c <= 'Z')
        k = c - 'A';
    else if (allow_lower && c >= 'a' && c <= 'z')
        k = c - 'a';
    else
        return -1;
    if ((size_t)k >= n_options)
        return -1;
    if (i > 0 && is_alnum_c(s[i - 1]))
        return -1;
    if (is_alnum_c(s[i + 1]) || s[i + 1] == '\'')
        return -1;
    return k;
}

/* After a cue ("final answer", "answer is"), skips decoration and reads one option letter.
** A lower-case letter is accepted only when bracketed ("(b)") or followed by punctuation or
** the end ("answer: b."), not as a word ("the answer is a bit unclear"). */
static int letter_after(const char *s, size_t i, size_t n_options)
{
    size_t lim = i + 40;
    size_t p = i;
    while (s[p] && p < lim) {
        char c = s[p];
        if (c == ' ' || c == ':' || c == '*' || c == '(' || c == '[' || c == '\t' ||
            c == '\n' || c == '=' || c == '$' || c == '{' || c == '"' || c == '\'') {
            p++;
            continue;
        }
        if (strncmp(s + p, "\\boxed{", 7) == 0 || strncmp(s + p, "\\text{", 6) == 0) {
            p += (s[p + 1] == 'b') ? 7 : 6;
            continue;
        }
        const char *skip[] = {"is ", "option ", "choice ", "letter ", "Option ", "Choice ",
                              "Letter ", "IS ", "OPTION ", "CHOICE "};
        bool skipped = false;
        for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++) {
            size_t L = strlen(skip[k]);
            if (strncmp(s + p, skip[k], L) == 0) {
                p += L;
                skipped = true;
                break;
            }
        }
        if (skipped)
            continue;
        int k = letter_at(s, p, n_options, false);
        if (k >= 0) {
            /* "A" and "I" as words: "the answer is I think..." is not option I */
            if ((s[p] == 'A' || s[p] == 'I') && s[p + 1] == ' ' && islower((unsigned char)s[p + 2]))
                return -1;
            return k;
        }
        k = letter_at(s, p, n_options, true);
        if (k >= 0) {
            bool bracketed = p > 0 && (s[p - 1] == '(' || s[p - 1] == '[');
            char nx = s[p + 1];
            if (bracketed || nx == '\0' || nx == '.' || nx == ')' || nx == ']' || nx == ',' ||
                nx == '\n' || nx == '*')
                return k;
        }
        return -1;
    }
    return -1;
}

/* Last occurrence of any cue followed by a letter. */
static int letter_by_cues(const char *s, const char *const *cues, size_t n_cues, size_t n_opt)
{
    int best = -1;
    const char *best_pos = NULL;
    for (size_t c = 0; c < n_cues; c++) {
        const char *p = s;
        size_t L = strlen(cues[c]);
        for (;;) {
            const char *h = ci_find(p, cues[c]);
            if (!h)
                break;
            int k = letter_after(s, (size_t)(h - s) + L, n_opt);
            if (k >= 0 && (!best_pos || h > best_pos)) {
                best = k;
                best_pos = h;
            }
            p = h + 1;
        }
    }
    return best;
}

static int extract_letter(const char *s, size_t n_opt)
{
    static const char *const final_cues[] = {"final answer"};
    static const char *const answer_cues[] = {"answer is", "answer:", "answer would be",
                                              "answer should be", "correct option is",
                                              "correct choice is", "i choose", "i pick",
                                              "my choice is", "i select", "answer remains",
                                              "i stand by", "i maintain"};
    int k = letter_by_cues(s, final_cues, 1, n_opt);
    if (k >= 0)
        return k;
    k = letter_by_cues(s, answer_cues, sizeof answer_cues / sizeof answer_cues[0], n_opt);
    if (k >= 0)
        return k;
    /* \boxed{X} */
    {
        const char *p = s, *h;
        int last = -1;
        while ((h = strstr(p, "\\boxed{")) != NULL) {
            size_t i = (size_t)(h - s) + 7;
            int kk = letter_at(s, i, n_opt, false);
            if (kk < 0 && strncmp(s + i, "\\text{", 6) == 0)
                kk = letter_at(s, i + 6, n_opt, false);
            if (kk >= 0)
                last = kk;
            p = h + 1;
        }
        if (last >= 0)
            return last;
    }
    /* last (X) or [X] */
    {
        int last = -1;
        for (size_t i = 1; s[0] && s[i]; i++) {
            if ((s[i - 1] == '(' && s[i + 1] == ')') || (s[i - 1] == '[' && s[i + 1] == ']')) {
                int kk = letter_at(s, i, n_opt, false);
                if (kk >= 0)
                    last = kk;
            }
        }
        if (last >= 0)
            return last;
    }
    /* last standalone letter that is not used as a word */
    {
        int last = -1;
        for (size_t i = 0; s[i]; i++) {
            int kk = letter_at(s, i, n_opt, false);
            if (kk < 0)
                continue;
            char nx = s[i + 1];
            if (nx == '-' || nx == '&' || nx == '/' || nx == '@')
                continue; /* "A-level", "Q&A", "A/B testing" */
            if (i > 0 && (s[i - 1] == '-' || s[i - 1] == '&' || s[i - 1] == '/' ||
                          s[i - 1] == '.'))
                continue; /* "U.S.", "Q&A" */
            if (nx == '.' && is_alnum_c(s[i + 2]))
                continue; /* "e.g." style abbreviations "U.S" */
            if (nx == ' ' && islower((unsigned char)s[i + 2])) {
                /* "I think", "A good point", "B is wrong" — accept only after a cue word */
                bool cued = false;
                const char *cue[] = {"option ", "choice ", "letter ", "Option ", "Choice "};
                for (size_t c = 0; c < 5; c++) {
                    size_t L = strlen(cue[c]);
                    if (i >= L && strncmp(s + i - L, cue[c], L) == 0)
                        cued = true;
                }
                if (!cued)
                    continue;
            }
            last = kk;
        }
        return last;
    }
}

/* ---- numbers ---- */

static bool extract_number(const char *s, double *v)
{
    size_t n = strlen(s);
    /* \boxed{...}: last box; its content normalised, else its last number */
    {
        const char *p = s, *h, *last = NULL;
        while ((h = strstr(p, "\\boxed{")) != NULL) {
            last = h;
            p = h + 1;
        }
        if (last) {
            size_t i = (size_t)(last - s) + 7, depth = 1, j = i;
            while (s[j] && depth) {
                if (s[j] == '{')
                    depth++;
                else if (s[j] == '}')
                    depth--;
                if (depth)
                    j++;
            }
            if (!s[j]) {
                /* unbalanced: fall through to the other rules */
            } else {
                char inner[260];
                size_t L = j - i < sizeof inner - 1 ? j - i : sizeof inner - 1;
                memcpy(inner, s + i, L);
                inner[L] = '\0';
                char norm[SN_ANSWER_MAX];
                if (sn_normalize_number(inner, norm)) {
                    *v = strtod(norm, NULL);
                    return true;
                }
                if (last_number(s, i, j, v))
                    return true;
            }
        }
    }
    /* "#### n" (GSM8K) */
    {
        const char *p = s, *h, *last = NULL;
        while ((h = strstr(p, "####")) != NULL) {
            last = h;
            p = h + 4;
        }
        if (last && number_after(s, (size_t)(last - s) + 4, v))
            return true;
    }
    static const char *const cues[] = {"final answer", "answer is", "answer:",
                                       "answer would be", "answer should be", "answer remains",
                                       "answer = "};
    for (size_t c = 0; c < sizeof cues / sizeof cues[0]; c++) {
        (void)n;
        const char *p = s, *h;
        bool found = false;
        double x = 0.0;
        while ((h = ci_find(p, cues[c])) != NULL) {
            double y;
            if (number_after(s, (size_t)(h - s) + strlen(cues[c]), &y)) {
                x = y;
                found = true;
            }
            p = h + 1;
        }
        if (found) {
            *v = x;
            return true;
        }
        if (c == 0) {
            /* "final answer" wins over the others; only if it had no number do we go on */
        }
    }
    return last_number(s, 0, n, v);
}

bool sn_extract_answer(const char *text, enum sn_task task, size_t n_options,
                       char out[SN_ANSWER_MAX])
{
    out[0] = '\0';
    if (!text)
        return false;
    if (task == SN_TASK_MC) {
        if (n_options == 0 || n_options > SN_OPTIONS_MAX)
            return false;
        int k = extract_letter(text, n_options);
        if (k < 0)
            return false;
        out[0] = (char)('A' + k);
        out[1] = '\0';
        return true;
    }
    double v;
    if (!extract_number(text, &v) || !isfinite(v))
        return false;
    sn_format_number(v, out);
    return true;
}

bool sn_answer_equal(const char *a, const char *b, enum sn_task task)
{
    if (!a || !b || !*a || !*b)
        return false; /* an unparsed answer is never correct */
    if (task == SN_TASK_MC)
        return strcmp(a, b) == 0;
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (*ea || *eb)
        return strcmp(a, b) == 0;
    return fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y)));
}
