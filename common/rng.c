/* common/rng.c: xoshiro256** (Blackman & Vigna, "Scrambled linear pseudorandom number
** generators", 2018) seeded through splitmix64, plus derived seeds. */
#include "common/common.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sn_rng_seed(struct sn_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sn_rng_u64(struct sn_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sn_rng_uniform(struct sn_rng *rng)
{
    return (double)(sn_rng_u64(rng) >> 11) * 0x1.0p-53;
}

/* Lemire's rejection method would be faster; plain rejection keeps it obviously unbiased. */
uint64_t sn_rng_below(struct sn_rng *rng, uint64_t n)
{
    if (n <= 1)
        return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = sn_rng_u64(rng);
    } while (x >= limit);
    return x % n;
}

double sn_rng_normal(struct sn_rng *rng)
{
    double u1 = sn_rng_uniform(rng), u2 = sn_rng_uniform(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

void sn_rng_shuffle(struct sn_rng *rng, void *base, size_t n, size_t size)
{
    unsigned char *b = base, tmp[256];
    if (size > sizeof tmp)
        return; /* elements larger than 256 bytes: shuffle pointers instead */
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)sn_rng_below(rng, i);
        if (j != i - 1) {
            memcpy(tmp, b + j * size, size);
            memcpy(b + j * size, b + (i - 1) * size, size);
            memcpy(b + (i - 1) * size, tmp, size);
        }
    }
}

uint64_t sn_seed_derive(uint64_t seed, const char *label, uint64_t index)
{
    uint64_t x = seed ^ sn_hash64(label, strlen(label));
    x ^= splitmix64(&index);
    return splitmix64(&x);
}

uint64_t sn_hash64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
