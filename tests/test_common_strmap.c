/* tests/test_common_strmap.c: the open-addressing string map of common.h: insert, lookup,
** growth, colliding keys, binary keys, insert-if-absent, and allocation failures, each checked
** against a plain list searched linearly. */
#include "common/common.h"
#include "testutil.h"

#include <stdint.h>

/* The reference: a list searched from the start. */
struct ref {
    char   keys[6000][16];
    size_t lens[6000];
    size_t vals[6000];
    size_t n;
};

static size_t *ref_find(struct ref *r, const void *k, size_t len)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->lens[i] == len && !memcmp(r->keys[i], k, len))
            return &r->vals[i];
    return NULL;
}

static void test_insert_lookup_grow(void)
{
    static struct ref r;
    struct sn_strmap m = {0};
    struct sn_err err = {0};
    CHECK(sn_strmap_find(&m, "x", 1) == NULL); /* empty map, no slots yet */
    CHECK(!sn_strmap_has(&m, "", 0));
    struct sn_rng rng;
    sn_rng_seed(&rng, 7);
    size_t caps_seen = 0, last_cap = 0;
    for (size_t i = 0; i < 5000; i++) {
        char k[16];
        /* short keys over a small alphabet: many repeats */
        size_t len = 1 + sn_rng_below(&rng, 4);
        for (size_t j = 0; j < len; j++)
            k[j] = (char)('a' + sn_rng_below(&rng, 12));
        size_t v = i * 3 + 1;
        bool added = false;
        CHECK(sn_strmap_put(&m, k, len, v, &added, &err) == SN_OK);
        size_t *want = ref_find(&r, k, len);
        CHECK(added == (want == NULL));
        if (!want) {
            memcpy(r.keys[r.n], k, len);
            r.lens[r.n] = len;
            r.vals[r.n] = v;
            r.n++;
        }
        if (m.cap != last_cap) {
            caps_seen++;
            last_cap = m.cap;
        }
        CHECK(m.n == r.n);
        CHECK(m.cap && (m.cap & (m.cap - 1)) == 0); /* a power of two */
        CHECK(2 * m.n <= m.cap);                    /* load at most 1/2 */
    }
    CHECK(caps_seen >= 3); /* it grew more than once */
    for (size_t i = 0; i < r.n; i++) {
        size_t *v = sn_strmap_find(&m, r.keys[i], r.lens[i]);
        CHECK(v && *v == r.vals[i]); /* the first value stays: put never overwrites */
        CHECK(sn_strmap_has(&m, r.keys[i], r.lens[i]));
    }
    /* keys not inserted: letters outside the alphabet, or longer */
    CHECK(!sn_strmap_has(&m, "z", 1));
    CHECK(!sn_strmap_has(&m, "aaaaa", 5));
    CHECK(!sn_strmap_has(&m, "", 0));
    /* a text key reads as a C string */
    size_t seen = 0;
    for (size_t i = 0; i < m.cap; i++)
        if (m.slots[i].key) {
            seen++;
            CHECK(strlen(m.slots[i].key) == m.slots[i].len);
        }
    CHECK(seen == r.n);
    sn_strmap_free(&m);
    CHECK(m.cap == 0 && m.n == 0 && m.slots == NULL);
    CHECK(!sn_strmap_has(&m, "a", 1));
}

/* Keys whose home slot is the same for the first capacity (64): they chain by probing, and
** each must still be found, including after growth splits the chain. */
static void test_collisions(void)
{
    struct sn_strmap m = {0};
    struct sn_err err = {0};
    char keys[20][16];
    size_t n = 0;
    uint64_t home = UINT64_MAX;
    for (unsigned i = 0; n < 20 && i < 1000000; i++) {
        char k[16];
        int len = snprintf(k, sizeof k, "k%u", i);
        uint64_t h = sn_hash64(k, (size_t)len) & 63;
        if (home == UINT64_MAX)
            home = h;
        if (h == home)
            memcpy(keys[n++], k, (size_t)len + 1);
    }
    CHECK(n == 20);
    for (size_t i = 0; i < n; i++) {
        CHECK(sn_strmap_put(&m, keys[i], strlen(keys[i]), i, NULL, &err) == SN_OK);
        for (size_t j = 0; j <= i; j++) {
            size_t *v = sn_strmap_find(&m, keys[j], strlen(keys[j]));
            CHECK(v && *v == j);
        }
    }
    CHECK(m.n == n);
    /* a key with the same home slot that was never inserted ends the probe at an empty slot */
    CHECK(!sn_strmap_has(&m, "not-there", 9));
    sn_strmap_free(&m);
}

/* SHA-256 of the decimal text of i: 32 bytes that hold NULs now and then. */
static void digest_of(int i, uint8_t d[32])
{
    char s[16];
    snprintf(s, sizeof s, "%d", i);
    struct sn_sha256 h;
    sn_sha256_init(&h);
    sn_sha256_update(&h, s, strlen(s));
    sn_sha256_final(&h, d);
}

/* Keys are bytes: NUL inside a key and digests both work; "a" and "a\0" differ. */
static void test_binary_keys(void)
{
    struct sn_strmap m = {0};
    struct sn_err err = {0};
    bool added;
    CHECK(sn_strmap_put(&m, "a", 1, 1, &added, &err) == SN_OK && added);
    CHECK(sn_strmap_put(&m, "a\0", 2, 2, &added, &err) == SN_OK && added);
    CHECK(sn_strmap_put(&m, "", 0, 3, &added, &err) == SN_OK && added);
    CHECK(sn_strmap_put(&m, "a\0", 2, 9, &added, &err) == SN_OK && !added);
    size_t *v;
    CHECK((v = sn_strmap_find(&m, "a", 1)) && *v == 1);
    CHECK((v = sn_strmap_find(&m, "a\0", 2)) && *v == 2);
    CHECK((v = sn_strmap_find(&m, "", 0)) && *v == 3);
    uint8_t d[32];
    for (int i = 0; i < 200; i++) {
        digest_of(i, d);
        CHECK(sn_strmap_put(&m, d, 32, (size_t)i, &added, &err) == SN_OK && added);
    }
    for (int i = 0; i < 200; i++) {
        digest_of(i, d);
        CHECK((v = sn_strmap_find(&m, d, 32)) && *v == (size_t)i);
        CHECK(!sn_strmap_has(&m, d, 31)); /* a prefix is another key */
    }
    CHECK(m.n == 203);
    *sn_strmap_find(&m, "a", 1) = 42; /* values are writable in place */
    CHECK(*sn_strmap_find(&m, "a", 1) == 42);
    sn_strmap_free(&m);
}

/* An allocation that fails leaves the map as it was, and usable. */
static void test_nomem(void)
{
    for (uint64_t fail = 1; fail <= 80; fail++) { /* the first table, growths, keys */
        struct sn_strmap m = {0};
        struct sn_err err = {0};
        int rc = SN_OK;
        size_t ok = 0;
        sn_alloc_fail_after(fail);
        for (size_t i = 0; i < 100 && !rc; i++) {
            char k[32];
            snprintf(k, sizeof k, "key%zu", i);
            rc = sn_strmap_put(&m, k, strlen(k), i, NULL, &err);
            if (!rc)
                ok++;
        }
        sn_alloc_fail_after(0);
        CHECK(rc == SN_E_NOMEM);
        CHECK(m.n == ok);
        for (size_t i = 0; i < ok; i++) {
            char k[32];
            snprintf(k, sizeof k, "key%zu", i);
            size_t *v = sn_strmap_find(&m, k, strlen(k));
            CHECK(v && *v == i);
        }
        struct sn_err e2 = {0};
        CHECK(sn_strmap_put(&m, "after", 5, 7, NULL, &e2) == SN_OK);
        CHECK(sn_strmap_has(&m, "after", 5));
        sn_strmap_free(&m);
    }
}

int main(void)
{
    test_insert_lookup_grow();
    test_collisions();
    test_binary_keys();
    test_nomem();
    return sn_test_done();
}
