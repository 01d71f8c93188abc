/* fb_stop.h - the precision stop: time a size until its median is known to a precision asked,
 * not for a count fixed in advance.
 *
 * The rule (docs/statistics.md, "Precision stop"): the timed loop runs in blocks; after each
 * block the timing side takes the 95 % confidence interval of the median of every sample so
 * far (the exact order-statistic interval the report prints: ranks from the binomial(n, 1/2)
 * distribution, as scipy.stats.quantile_test's interval) and stops once its half-width is at
 * most `target` x the median. It always runs `floor` iterations (a tenth of the count, at
 * least 10) and never more than `cap` (the kernel's count, OSU's): a size that cannot reach
 * the target gets OSU's sample count, never fewer samples than OSU where precision is short.
 *
 * As the settled warm-up (fb_settle.h), only a timing side judges, and the kernel's agree
 * hook carries its verdict to every side between blocks, outside the timed samples.
 */
#ifndef FB_STOP_H
#define FB_STOP_H

#include <stdbool.h>

struct fb_stop_rule {
    long floor;    /* iterations always run */
    long cap;      /* iterations at most */
    long block;    /* iterations between two judgements */
    double target; /* relative half-width of the median's interval that is enough; 0: none */
};

/* The rule for a count of `cap` iterations and a target (0: exactly cap, no judgement). */
struct fb_stop_rule fb_stop_for(long cap, double target);

/* The iterations the next block runs, `done` having run (0: the loop is over). */
long fb_stop_next_block(const struct fb_stop_rule *r, long done);

/* The 0-based ranks of the order statistics bounding the 95 % interval of the median of n
 * samples; *lo < 0 when n is too small for any pair to reach 95 %. */
void fb_stop_median_ranks(long n, long *lo, long *hi);

/* The interval's half-width over the median of samples[0..n) (left in place; `scratch` holds
 * n doubles), or INFINITY where it is undefined. */
double fb_stop_precision(const double *samples, long n, double *scratch);

/* After a block, `done` iterations in all: true when the loop goes on. *reached gets the
 * precision judged (INFINITY before the floor or without a target). */
bool fb_stop_more(const struct fb_stop_rule *r, const double *samples, long done,
                  double *scratch, double *reached);

#endif
