/* t_stop.c - the precision stop (fb_stop.c): the interval's ranks against scipy's
 * (scipy.stats.quantile_test(p=0.5) at 95 %, what the report prints), the precision of known
 * samples worked by hand, and the rule on scripted samples: tight ones stop at the floor,
 * spread ones run to the cap, no target runs the count. */
#define T_NAME "t_stop"
#include "t_expect.h"

#include <math.h>
#include <stdlib.h>

#include "fb_stop.h"

static void ranks(void)
{
    /* n, lo, hi from scipy: quantile_test(x, p=0.5).confidence_interval(0.95) picks
     * order statistics x[lo], x[hi] (0-based) */
    static const long cases[][3] = {{5, -1, 5},     {6, 0, 5},        {7, 0, 6},
                                    {10, 1, 8},     {20, 5, 14},      {100, 39, 60},
                                    {1000, 468, 531}, {9999, 4901, 5097}, {10000, 4901, 5098}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long lo, hi;
        fb_stop_median_ranks(cases[i][0], &lo, &hi);
        EXPECT(lo == cases[i][1] && hi == cases[i][2], "n=%ld: ranks %ld..%ld, want %ld..%ld",
               cases[i][0], lo, hi, cases[i][1], cases[i][2]);
    }
}

static void precision(void)
{
    double scratch[20];
    /* 10 samples 1..10 shuffled: median 5.5, interval x[1]..x[8] = 2..9, half-width 3.5 */
    double s[10] = {7, 2, 9, 1, 10, 4, 3, 8, 6, 5};
    double p = fb_stop_precision(s, 10, scratch);
    EXPECT(fabs(p - 3.5 / 5.5) < 1e-12, "precision %g, want %g", p, 3.5 / 5.5);
    EXPECT(s[0] == 7 && s[9] == 5, "the samples are left in their order");
    EXPECT(isinf(fb_stop_precision(s, 5, scratch)), "5 samples: no 95 %% interval");
}

/* samples around 10 with a relative spread `rel` (deterministic) */
static void fill(double *x, long n, double rel)
{
    for (long i = 0; i < n; i++)
        x[i] = 10.0 * (1.0 + rel * sin((double)i * 2.3));
}

static long run(const struct fb_stop_rule *r, const double *x, double *scratch, double *reached)
{
    long done = 0;
    for (long b; (b = fb_stop_next_block(r, done)) > 0;) {
        done += b;
        if (!fb_stop_more(r, x, done, scratch, reached))
            break;
    }
    return done;
}

static void rule(void)
{
    enum { N = 10000 };
    double *x = malloc(sizeof(double) * N), *scratch = malloc(sizeof(double) * N);
    double reached;
    struct fb_stop_rule r = fb_stop_for(N, 0.01);
    EXPECT(r.floor == 1000 && r.block == 1000 && r.cap == N, "floor %ld block %ld", r.floor,
           r.block);
    fill(x, N, 0.02); /* +-2 %: the interval is far inside 1 % after 1000 samples */
    long done = run(&r, x, scratch, &reached);
    EXPECT(done == 1000 && reached <= 0.01, "tight samples stop at the floor: %ld, %g", done,
           reached);
    fill(x, N, 3.0); /* spread over +-300 %: 1 % is never reached */
    done = run(&r, x, scratch, &reached);
    EXPECT(done == N && reached > 0.01 && isfinite(reached),
           "spread samples run to the cap, judged there: %ld, %g", done, reached);
    struct fb_stop_rule none = fb_stop_for(N, 0);
    done = run(&none, x, scratch, &reached);
    EXPECT(done == N && isinf(reached), "no target: the count, unjudged (%ld)", done);
    struct fb_stop_rule small = fb_stop_for(20, 0.5);
    EXPECT(small.floor == 10 && small.block == 10, "20 iterations: floor 10, got %ld",
           small.floor);
    struct fb_stop_rule tiny = fb_stop_for(8, 0.5);
    EXPECT(tiny.floor == 8 && tiny.target == 0, "8 iterations: all of them, no judgement");
    free(x);
    free(scratch);
}

int main(void)
{
    ranks();
    precision();
    rule();
    return t_verdict();
}
