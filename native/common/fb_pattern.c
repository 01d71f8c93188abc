#include "fb_pattern.h"

#include <stdlib.h>
#include <string.h>

uint64_t fb_pattern_seed(uint64_t size, int64_t iter, int rank)
{
    /* splitmix64 finaliser over a combination of the three inputs */
    uint64_t z = size * 0x9E3779B97F4A7C15ull ^ ((uint64_t)iter + 0x632BE59BD9B4E019ull) *
                 0xBF58476D1CE4E5B9ull ^ ((uint64_t)(unsigned)rank + 1) * 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fb_pattern_fill(void *buf, size_t len, uint64_t off0, uint64_t size, int64_t iter, int rank)
{
    uint8_t *p = buf;
    uint64_t seed = fb_pattern_seed(size, iter, rank);
    for (size_t i = 0; i < len; i++)
        p[i] = fb_pattern_byte(seed, off0 + i);
}

long long fb_pattern_check(const void *buf, size_t len, uint64_t off0, uint64_t size,
                           int64_t iter, int rank, uint8_t *expected, uint8_t *got)
{
    const uint8_t *p = buf;
    uint64_t seed = fb_pattern_seed(size, iter, rank);
    for (size_t i = 0; i < len; i++) {
        uint8_t want = fb_pattern_byte(seed, off0 + i);
        if (p[i] != want) {
            if (expected)
                *expected = want;
            if (got)
                *got = p[i];
            return (long long)i;
        }
    }
    return -1;
}


size_t fb_elem_size(enum fb_elem e)
{
    switch (e) {
    case FB_ELEM_CHAR:
        return sizeof(signed char);
    case FB_ELEM_INT:
        return sizeof(int);
    case FB_ELEM_FLOAT:
        return sizeof(float);
    case FB_ELEM_DOUBLE:
        return sizeof(double);
    }
    return 1;
}

static void put_value(void *buf, enum fb_elem e, size_t i, int v)
{
    switch (e) {
    case FB_ELEM_CHAR:
        ((signed char *)buf)[i] = (signed char)v;
        break;
    case FB_ELEM_INT:
        ((int *)buf)[i] = v;
        break;
    case FB_ELEM_FLOAT:
        ((float *)buf)[i] = (float)v;
        break;
    case FB_ELEM_DOUBLE:
        ((double *)buf)[i] = (double)v;
        break;
    }
}

static double get_value(const void *buf, enum fb_elem e, size_t i)
{
    switch (e) {
    case FB_ELEM_CHAR:
        return ((const signed char *)buf)[i];
    case FB_ELEM_INT:
        return ((const int *)buf)[i];
    case FB_ELEM_FLOAT:
        return ((const float *)buf)[i];
    case FB_ELEM_DOUBLE:
        return ((const double *)buf)[i];
    }
    return 0;
}

void fb_pattern_fill_operands(void *buf, enum fb_elem e, size_t count, uint64_t size,
                              int64_t iter, int rank)
{
    uint64_t seed = fb_pattern_seed(size, iter, rank);
    for (size_t i = 0; i < count; i++)
        put_value(buf, e, i, fb_pattern_byte(seed, i) & 0x0F);
}

long long fb_pattern_check_sum(const void *buf, enum fb_elem e, size_t count, uint64_t size,
                               int64_t iter, int nranks, double *expected, double *got)
{
    uint64_t *seeds = malloc(sizeof(*seeds) * (size_t)(nranks > 0 ? nranks : 1));
    if (!seeds) { /* cannot check: report element 0 as suspect rather than pass silently */
        if (expected)
            *expected = 0;
        if (got)
            *got = count ? get_value(buf, e, 0) : 0;
        return 0;
    }
    for (int r = 0; r < nranks; r++)
        seeds[r] = fb_pattern_seed(size, iter, r);
    long long bad = -1;
    for (size_t i = 0; i < count && bad < 0; i++) {
        long sum = 0;
        for (int r = 0; r < nranks; r++)
            sum += fb_pattern_byte(seeds[r], i) & 0x0F;
        double want = (double)sum;
        if (e == FB_ELEM_CHAR) { /* two's complement wrap of the signed char sum */
            unsigned char u = (unsigned char)(sum & 0xFF);
            signed char sc;
            memcpy(&sc, &u, 1);
            want = sc;
        }
        double have = get_value(buf, e, i);
        if (have != want) {
            if (expected)
                *expected = want;
            if (got)
                *got = have;
            bad = (long long)i;
        }
    }
    free(seeds);
    return bad;
}
