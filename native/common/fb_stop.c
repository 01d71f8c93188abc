/* fb_stop.c - the precision stop (see fb_stop.h). */
#include "fb_stop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fb_order.h"

/* The binomial(n, 1/2) tail that a two-sided 95 % interval leaves on each side. */
#define FB_STOP_TAIL 0.025
/* Fewer samples than this never stop a size: the interval of 10 samples spans their 2nd to
 * 9th values, a rank apart from the extremes. */
#define FB_STOP_MIN_FLOOR 10

struct fb_stop_rule fb_stop_for(long cap, double target)
{
    long c = cap > 0 ? cap : 0;
    if (!(target > 0) || c <= FB_STOP_MIN_FLOOR)
        return (struct fb_stop_rule){.floor = c, .cap = c, .block = c, .target = 0};
    long floor = c / 10 > FB_STOP_MIN_FLOOR ? c / 10 : FB_STOP_MIN_FLOOR;
    return (struct fb_stop_rule){.floor = floor, .cap = c, .block = floor, .target = target};
}

long fb_stop_next_block(const struct fb_stop_rule *r, long done)
{
    long left = r->cap - done;
    if (left <= 0)
        return 0;
    long b = done < r->floor ? r->floor - done : r->block;
    return b > 0 && b < left ? b : left;
}

void fb_stop_median_ranks(long n, long *lo, long *hi)
{
    /* CDF of binomial(n, 1/2) summed in log space: 2^-n underflows from n = 1075 on.
     * ppf(tail) - 1 and isf(tail), as scipy computes them. */
    double lnorm = -(double)n * log(2.0), lg_n1 = lgamma((double)n + 1.0), cdf = 0.0;
    bool low_found = false;
    *lo = -1;
    *hi = n;
    for (long k = 0; k <= n; k++) {
        cdf += exp(lg_n1 - lgamma((double)k + 1.0) - lgamma((double)(n - k) + 1.0) + lnorm);
        if (!low_found && cdf >= FB_STOP_TAIL) {
            low_found = true;
            *lo = k - 1;
        }
        if (1.0 - cdf <= FB_STOP_TAIL) {
            *hi = k;
            return;
        }
    }
}

double fb_stop_precision(const double *samples, long n, double *scratch)
{
    long lo, hi;
    fb_stop_median_ranks(n, &lo, &hi);
    if (n < 2 || lo < 0 || hi >= n)
        return INFINITY;
    memcpy(scratch, samples, sizeof(double) * (size_t)n);
    fb_sort_doubles(scratch, n);
    double med = fb_median_sorted(scratch, n);
    if (!(med > 0))
        return INFINITY;
    return 0.5 * (scratch[hi] - scratch[lo]) / med;
}

bool fb_stop_more(const struct fb_stop_rule *r, const double *samples, long done,
                  double *scratch, double *reached)
{
    *reached = INFINITY;
    if (!(r->target > 0))
        return done < r->cap;
    /* judged at the cap too: the record says how precise a size that ran out of count is */
    if (done >= r->floor)
        *reached = fb_stop_precision(samples, done, scratch);
    return done < r->cap && (done < r->floor || !(*reached <= r->target));
}
