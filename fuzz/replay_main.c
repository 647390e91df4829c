/* fuzz/replay_main.c: runs a libFuzzer target without libFuzzer, so every fuzz target is also
** an ordinary ctest (under ASan + UBSan in `make test-asan`). It feeds each file of the corpus
** directory, then N deterministic mutations of them (bit flips, truncations, splices, byte
** insertions), seeded, so a failure reproduces.
** usage: fuzzreplay_<name> CORPUS_DIR [N_MUTATIONS [SEED]] */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: a target's one-time set-up. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static uint64_t state;
static uint64_t next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

struct input {
    uint8_t *data;
    size_t   size;
};

static int load_dir(const char *dir, struct input **out, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (len < 0 || len > (16 << 20)) {
            fclose(f);
            continue;
        }
        uint8_t *buf = malloc((size_t)len + 1);
        if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            fclose(f);
            continue;
        }
        fclose(f);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = realloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (struct input){buf, (size_t)len};
    }
    closedir(d);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR [N_MUTATIONS [SEED]]\n", argv[0]);
        return 2;
    }
    long n_mut = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
    state = argc > 3 ? strtoull(argv[3], NULL, 10) : 0x5eed;
    if (!state)
        state = 1;
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    struct input *in = NULL;
    size_t n = 0;
    load_dir(argv[1], &in, &n);
    static uint8_t empty[1];
    LLVMFuzzerTestOneInput(empty, 0);
    for (size_t i = 0; i < n; i++)
        LLVMFuzzerTestOneInput(in[i].data, in[i].size);
    uint8_t *buf = malloc(1 << 20);
    for (long k = 0; k < n_mut; k++) {
        size_t len;
        if (n == 0 || next() % 8 == 0) { /* random bytes, biased to printable JSON-ish text */
            len = next() % 512;
            static const char alpha[] = "{}[]\":,0123456789.-eE truenfalsx\\u\n\t abc";
            for (size_t i = 0; i < len; i++)
                buf[i] = next() % 4 ? (uint8_t)alpha[next() % (sizeof alpha - 1)]
                                    : (uint8_t)next();
        } else {
            const struct input *src = &in[next() % n];
            len = src->size < (1 << 19) ? src->size : (1 << 19);
            memcpy(buf, src->data, len);
            int edits = 1 + (int)(next() % 4);
            for (int e = 0; e < edits && len; e++) {
                switch (next() % 5) {
                case 0: buf[next() % len] ^= (uint8_t)(1u << (next() % 8)); break;
                case 1: len = next() % (len + 1); break;                      /* truncate */
                case 2: buf[next() % len] = (uint8_t)next(); break;
                case 3: { /* duplicate a slice */
                    size_t a = next() % len, b = a + next() % (len - a + 1);
                    if (len + (b - a) < (1 << 20)) {
                        memmove(buf + b + (b - a), buf + b, len - b);
                        len += b - a;
                    }
                    break;
                }
                default: { /* interesting integers as text */
                    static const char *ints[] = {"-1", "0", "4294967295", "18446744073709551615",
                                                 "9223372036854775807", "1e308", "-0", "NaN"};
                    const char *s = ints[next() % 8];
                    size_t sl = strlen(s), at = next() % (len + 1);
                    if (len + sl < (1 << 20)) {
                        memmove(buf + at + sl, buf + at, len - at);
                        memcpy(buf + at, s, sl);
                        len += sl;
                    }
                }
                }
            }
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    free(buf);
    for (size_t i = 0; i < n; i++)
        free(in[i].data);
    free(in);
    printf("%ld passed, 0 failed\n", (long)n + n_mut + 1);
    return 0;
}
