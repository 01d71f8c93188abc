/* t_settle.c - the settled warm-up (fb_settle.c) on a fake clock: each iteration's sample is
 * what a scripted clock says it took, so the test knows when the timings settle. A loop that
 * is settled from the start stops at the floor; one that warms up for a while stops two blocks
 * after it settled; one that keeps drifting runs to the cap; a fixed rule runs its count with
 * no exchange; and a side that does not time follows the timing side's verdict. */
#define T_NAME "t_settle"
#include "t_expect.h"

#include <math.h>

#include "fb_settle.h"

/* The fake clock: iteration i takes clock(i) us, with a deterministic +-2 % jitter. */
struct fake {
    double (*clock)(long i);
    long calls, agrees, last_end;
    bool end_ok; /* every iteration's `end` was its block's end */
    long block_start;
    bool verdict_in; /* what the last agree call was given */
    int peer;        /* agree: 0 echo, 1 a timing peer that always wants more */
};

static double jitter(long i)
{
    return 1.0 + 0.02 * sin((double)i * 1.7);
}

static double flat(long i)
{
    return 0.5 * jitter(i);
}

/* a cold start decaying over ~50 iterations (page faults, caches, a registration cache) */
static double cold_start(long i)
{
    return 0.5 * (1.0 + 4.0 * exp(-(double)i / 50.0)) * jitter(i);
}

/* 20 % faster every 100 iterations, never settling (a clock ramping up, a creeping load) */
static double drifting(long i)
{
    return 10.0 * pow(0.8, (double)(i / 100)) * jitter(i);
}

/* the same every 10 iterations */
static double drifting_fast(long i)
{
    return 10.0 * pow(0.8, (double)(i / 10)) * jitter(i);
}

static int iterate(void *ctx, long i, long end, double *sample)
{
    struct fake *f = ctx;
    if (i != f->calls)
        f->end_ok = false;
    if (end != f->last_end) { /* a new block */
        f->block_start = i;
        f->last_end = end;
    }
    if (end <= i)
        f->end_ok = false;
    f->calls++;
    *sample = f->clock(i);
    return 0;
}

static int agree(void *ctx, bool *more)
{
    struct fake *f = ctx;
    f->agrees++;
    f->verdict_in = *more;
    if (f->peer == 1)
        *more = true;
    return 0;
}

static long run(struct fb_settle_rule r, struct fake *f, bool timing)
{
    f->calls = f->agrees = 0;
    f->last_end = -1;
    f->end_ok = true;
    struct fb_warmup_ops ops = {.iterate = iterate, .agree = agree, .ctx = f, .timing = timing};
    return fb_warmup_run(&r, &ops);
}

int main(void)
{
    struct fb_settle_rule lat = fb_settle_between(200, 1000);
    EXPECT(lat.block == 100 && lat.tol > 0 && !fb_settle_is_fixed(&lat), "block %ld", lat.block);

    struct fake f = {.clock = flat};
    long used = run(lat, &f, true);
    EXPECT(used == 200, "settled from the start: stops at the floor, used %ld", used);
    EXPECT(f.calls == used && f.end_ok, "iterations 0..used-1 with their block's end");
    EXPECT(f.agrees == 2, "one verdict per block, %ld", f.agrees);

    f = (struct fake){.clock = cold_start};
    used = run(lat, &f, true);
    /* block medians 2.49, 1.20, 1.03, 1.00 (x 0.5 us): blocks 3 and 4 agree within 5 % */
    EXPECT(used == 400, "a cold start: stops two warm blocks later, used %ld", used);

    f = (struct fake){.clock = drifting};
    used = run(lat, &f, true);
    EXPECT(used == 1000, "drifting timings run to the cap, used %ld", used);
    EXPECT(f.end_ok, "block ends");

    /* the cap cuts the last block: floor 20, cap 55, blocks of 10 */
    f = (struct fake){.clock = drifting_fast};
    used = run(fb_settle_between(20, 55), &f, true);
    EXPECT(used == 55, "cap 55, used %ld", used);

    /* fixed: exactly N, one block, no exchange with the peer (--warmup N keeps its meaning) */
    f = (struct fake){.clock = drifting};
    used = run(fb_settle_fixed(1000), &f, true);
    EXPECT(used == 1000 && f.agrees == 0 && f.end_ok, "fixed 1000: used %ld, %ld exchanges",
           used, f.agrees);
    used = run(fb_settle_fixed(0), &f, true);
    EXPECT(used == 0 && f.calls == 0, "fixed 0: used %ld", used);
    struct fb_settle_rule r = fb_settle_between(10, 10);
    EXPECT(fb_settle_is_fixed(&r) && r.cap == 10, "floor == cap is fixed");
    r = fb_settle_between(10, 2);
    EXPECT(fb_settle_is_fixed(&r) && r.cap == 10, "floor above cap: the floor, fixed");

    /* a side that does not time votes 'enough' and follows the timing side */
    f = (struct fake){.clock = flat, .peer = 1};
    used = run(lat, &f, false);
    EXPECT(!f.verdict_in, "the non-timing side's own vote is 'enough'");
    EXPECT(used == 1000, "it follows a timing peer that wants more, used %ld", used);
    f = (struct fake){.clock = drifting, .peer = 0};
    used = run(lat, &f, false);
    EXPECT(used == 100, "alone with an echoing peer it stops after the first block, %ld", used);

    /* without an agree hook (one side only) the judgement is the verdict */
    f = (struct fake){.clock = flat};
    struct fb_warmup_ops solo = {.iterate = iterate, .ctx = &f, .timing = true};
    f.last_end = -1, f.end_ok = true;
    used = fb_warmup_run(&lat, &solo);
    EXPECT(used == 200, "solo, settled: %ld", used);

    /* the judgement itself */
    struct fb_settle s;
    fb_settle_init(&s, &lat);
    double a[4] = {1, 1, 1, 1}, b[4] = {1.04, 1.04, 1.04, 1.04}, c[4] = {1.2, 1.2, 1.2, 1.2};
    EXPECT(fb_settle_block(&s, a, 4), "below the floor: more");
    s.used = 300;
    EXPECT(!fb_settle_block(&s, b, 4), "4 %% apart: settled");
    EXPECT(fb_settle_block(&s, c, 4), "15 %% apart: not settled");
    return t_verdict();
}
