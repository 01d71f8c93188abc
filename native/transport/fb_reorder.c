/* fb_reorder.c - RFC 4737 and RFC 5236 figures of an arrival log (see fb_reorder.h). */
#include "fb_reorder.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Fenwick tree over packet numbers: how many of the numbers below s arrived so far. */
static void bit_add(long *bit, long n, long i)
{
    for (i++; i <= n; i += i & -i)
        bit[i]++;
}

static long bit_below(const long *bit, long i) /* count of numbers < i */
{
    long c = 0;
    for (; i > 0; i -= i & -i)
        c += bit[i];
    return c;
}

/* One more count in a histogram of values >= 1 that grows as needed. */
static int add_count(long **count, long *max, long e, long *cap)
{
    if (e >= *cap) {
        long nc = *cap ? *cap : 16;
        while (nc <= e)
            nc *= 2;
        long *v = realloc(*count, (size_t)nc * sizeof(*v));
        if (!v)
            return -1;
        memset(v + *cap, 0, (size_t)(nc - *cap) * sizeof(*v));
        *count = v;
        *cap = nc;
    }
    (*count)[e]++;
    if (e > *max)
        *max = e;
    return 0;
}

int fb_reorder_analyse(const uint32_t *seq, size_t n, long sent, int dt, struct fb_reorder *r)
{
    memset(r, 0, sizeof(*r));
    r->sent = sent;
    r->arrivals = (long)n;
    r->dt = dt;
    size_t words = (size_t)sent / 8 + 1;
    unsigned char *seen = calloc(words, 1);
    uint32_t *u = malloc((n + 1) * sizeof(*u));       /* first arrivals, in order */
    uint32_t *pmax = malloc((n + 1) * sizeof(*pmax)); /* running max of u */
    long *below = calloc((size_t)sent + 1, sizeof(*below)); /* received numbers < s */
    long *bit = calloc((size_t)sent + 1, sizeof(*bit));
    r->rd_count = calloc((size_t)(2 * dt + 1), sizeof(*r->rd_count));
    long ecap = 0, ocap = 0;
    int rc = -1;
    if (!seen || !u || !pmax || !below || !bit || !r->rd_count)
        goto out;

    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = seq[i];
        if ((long)s >= sent) {
            r->out_of_range++;
            continue;
        }
        if (seen[s / 8] & (1u << (s % 8))) {
            r->duplicates++;
            continue;
        }
        seen[s / 8] |= (unsigned char)(1u << (s % 8));
        u[m] = s;
        pmax[m] = m && pmax[m - 1] > s ? pmax[m - 1] : s;
        m++;
    }
    r->received = (long)m;
    r->lost = sent - r->received;
    for (long s = 0; s < sent; s++)
        below[s + 1] = below[s] + ((seen[s / 8] >> (s % 8)) & 1);

    uint32_t next_exp = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t s = u[i];
        if (s >= next_exp) {
            next_exp = s + 1;
        } else {
            r->reordered++;
            /* the earliest arrival with a higher number: where the running max first
             * exceeds s (it is non-decreasing) */
            size_t lo = 0, hi = i;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (pmax[mid] > s)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (add_count(&r->extent_count, &r->max_extent, (long)(i - lo), &ecap) ||
                add_count(&r->offset_count, &r->max_offset, (long)(next_exp - 1 - s), &ocap))
                goto out;
        }
        long lower_before = bit_below(bit, s);
        long higher_before = (long)i - lower_before;
        long lower_after = below[s] - lower_before;
        long d = higher_before - lower_after;
        if (d < -dt || d > dt)
            r->rd_beyond++;
        else
            r->rd_count[dt + d]++;
        bit_add(bit, sent, s);
    }
    r->reordered_ratio = m ? (double)r->reordered / (double)m : 0;
    rc = 0;
out:
    free(seen);
    free(u);
    free(pmax);
    free(below);
    free(bit);
    if (rc)
        fb_reorder_free(r);
    return rc;
}

void fb_reorder_free(struct fb_reorder *r)
{
    free(r->extent_count);
    free(r->offset_count);
    free(r->rd_count);
    r->extent_count = NULL;
    r->offset_count = NULL;
    r->rd_count = NULL;
}
