/* fb_timer.h - the one clock every fabench kernel times with.
 *
 * CLOCK_MONOTONIC in microseconds, as a double. Inline so the call costs a vDSO read and
 * nothing more (and so SimGrid's smpicc can substitute its simulated clock at compile time).
 */
#ifndef FB_TIMER_H
#define FB_TIMER_H

#include <time.h>

#define FB_TIMER_NAME "clock_gettime(CLOCK_MONOTONIC)"

static inline double fb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

#endif
