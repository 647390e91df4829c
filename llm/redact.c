/* llm/redact.c: one redaction of credentials for every message, log line and file that may
** quote a request or a server's echo of it (llm.h, sn_llm_redact). Forms: HTTP authorization
** schemes (Basic, Bearer), api-key style headers and fields, credentials in a
** URL's userinfo, and secret-bearing query-string parameters. */
#include "llm/llm.h"

#include <ctype.h>
#include <string.h>

static const char RED[] = "[redacted]";

static bool ieq(const char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    if (n < k)
        return false;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)s[i]) != word[i])
            return false;
    return true;
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-'; }

/* token68 (RFC 7235) and the characters of a typical API key */
static bool token_char(char c)
{
    return isalnum((unsigned char)c) || strchr("-._~+/=", c) != NULL;
}

/* Ends a value in a header, a JSON string or a query string. */
static bool value_char(char c)
{
    return c && !isspace((unsigned char)c) && !strchr("\"'&#,;<>\\", c);
}

/* The length of the secret that starts a credential at s[i] (0 when none starts there) and,
** in *skip, how many bytes before the secret are kept as they are ("Bearer ", "api-key: "). */
static size_t match_at(const char *s, size_t n, size_t i, size_t *skip)
{
    static const char *const schemes[] = {"basic", "bearer", NULL};
    static const char *const fields[] = {"x-api-key", "api-key", "api_key", "apikey",
                                         "x-goog-api-key", "authorization", NULL};
    static const char *const params[] = {"key", "api_key", "apikey", "api-key", "token",
                                         "access_token", "auth", "password", "secret",
                                         "sig", "signature", "client_secret", NULL};
    const char *p = s + i;
    size_t left = n - i;
    bool boundary = i == 0 || !word_char(s[i - 1]);
    if (boundary) {
        for (const char *const *w = schemes; *w; w++) {
            size_t k = strlen(*w), j = k;
            if (!ieq(p, left, *w) || j >= left || p[j] != ' ')
                continue;
            while (j < left && p[j] == ' ')
                j++;
            size_t t = j;
            while (t < left && token_char(p[t]))
                t++;
            if (t > j) {
                *skip = j;
                return t - j;
            }
        }
        for (const char *const *w = fields; *w; w++) {
            size_t k = strlen(*w), j = k;
            if (!ieq(p, left, *w) || (j < left && word_char(p[j])))
                continue;
            if (j < left && (p[j] == '"' || p[j] == '\''))
                j++; /* "api_key": "..." in JSON */
            while (j < left && p[j] == ' ')
                j++;
            if (j >= left || (p[j] != ':' && p[j] != '='))
                continue;
            j++;
            while (j < left && (p[j] == ' ' || p[j] == '"' || p[j] == '\''))
                j++;
            if (!strcmp(*w, "authorization")) {
                size_t sk;
                size_t m = match_at(s, n, i + j, &sk); /* "Authorization: Basic ..." */
                if (m) {
                    *skip = j + sk;
                    return m;
                }
            }
            size_t t = j;
            while (t < left && value_char(p[t]))
                t++;
            if (t > j) {
                *skip = j;
                return t - j;
            }
        }
    }
    if (i > 0 && (s[i - 1] == '?' || s[i - 1] == '&' || s[i - 1] == ';')) {
        for (const char *const *w = params; *w; w++) {
            size_t k = strlen(*w);
            if (!ieq(p, left, *w) || k >= left || p[k] != '=')
                continue;
            size_t t = k + 1;
            while (t < left && value_char(p[t]))
                t++;
            if (t > k + 1) {
                *skip = k + 1;
                return t - k - 1;
            }
        }
    }
    /* scheme://user:password@host: everything between "://" and the '@' */
    if (left >= 3 && p[0] == ':' && p[1] == '/' && p[2] == '/') {
        size_t t = 3;
        while (t < left && !strchr("/?#@ \t\"'<>", p[t]))
            t++;
        if (t < left && p[t] == '@' && t > 3) {
            *skip = 3;
            return t - 3;
        }
    }
    return 0;
}

size_t sn_llm_redact(char *s, size_t cap)
{
    if (!s || !cap)
        return 0;
    size_t n = strnlen(s, cap - 1), count = 0;
    s[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t skip = 0, m = match_at(s, n, i, &skip);
        if (!m)
            continue;
        size_t at = i + skip, r = sizeof RED - 1;
        if (m == r && memcmp(s + at, RED, r) == 0) {
            i = at + m - 1; /* already redacted */
            continue;
        }
        /* replace s[at, at+m) by RED, cutting the end of the text if it no longer fits */
        size_t tail = n - (at + m);
        if (at + r >= cap) {
            r = cap - 1 - at;
            tail = 0;
        } else if (at + r + tail >= cap) {
            tail = cap - 1 - at - r;
        }
        memmove(s + at + r, s + at + m, tail);
        memcpy(s + at, RED, r);
        n = at + r + tail;
        s[n] = '\0';
        count++;
        i = at + r - 1;
    }
    return count;
}
