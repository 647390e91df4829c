#!/usr/bin/env python3
"""Independent reference for common/rng.c: splitmix64 seeding + xoshiro256** (Blackman & Vigna).
Prints the first output for seed 0, the value pinned in tests/test_common_core.c."""
M = (1 << 64) - 1

def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return x, z ^ (z >> 31)

def rotl(v, k):
    return ((v << k) | (v >> (64 - k))) & M

def first_output(seed):
    x, s = seed, []
    for _ in range(4):
        x, z = splitmix64(x)
        s.append(z)
    return (rotl((s[1] * 5) & M, 7) * 9) & M

if __name__ == "__main__":
    print("%016x" % first_output(0))
