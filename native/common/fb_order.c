#include "fb_order.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void fb_sort_doubles(double *v, long n)
{
    if (n > 1)
        qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
}

double fb_median_sorted(const double *v, long n)
{
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
