/* fb_order.h - sorting and medians of timings, shared by the timing engine, the settled
 * warm-up and the precision stop (one comparator, one definition of the median). */
#ifndef FB_ORDER_H
#define FB_ORDER_H

/* sorts v[0..n) ascending in place */
void fb_sort_doubles(double *v, long n);

/* the median of an ascending v[0..n): the mean of the middle two when n is even; n > 0 */
double fb_median_sorted(const double *v, long n);

#endif
