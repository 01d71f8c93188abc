/* fb_settle.h - the settled warm-up: warm up until the timings stop moving, not for a count
 * fixed in advance.
 *
 * The rule (docs/statistics.md, "Warm-up"): the warm-up runs in blocks of `block` iterations;
 * the timing side takes each block's median. It always runs `floor` iterations (OSU's own
 * warm-up count, so it never warms less than OSU), then stops after the first block whose
 * median is within `tol` (relative) of the block before it, and never runs more than `cap`
 * (the fixed count fabench used before, so it never warms more than it did). A fixed warm-up
 * (--warmup N) is the rule with floor == cap == N: one block, no exchanges with the peer.
 *
 * Only one side of a pair times (the ping-pong's initiator, the window's sender), but both must
 * stop at the same iteration: after every block the kernel's `agree` hook carries the timing
 * sides' verdict to every side (MPI: an allreduce; transports: the bootstrap channel).
 */
#ifndef FB_SETTLE_H
#define FB_SETTLE_H

#include <stdbool.h>

/* The relative change of two consecutive block medians that counts as settled. Two medians of
 * 100 ping-pongs on a loaded 2-core host differ by 1-3 % when nothing is warming up; a cache,
 * page-fault or registration transient moves them by far more. */
#define FB_SETTLE_TOL 0.05

struct fb_settle_rule {
    long floor; /* iterations always run */
    long cap;   /* iterations at most */
    long block; /* iterations per block (the last block may be cut short by cap) */
    double tol; /* relative change of consecutive block medians that counts as settled */
};

/* The fixed rule: exactly n iterations. */
struct fb_settle_rule fb_settle_fixed(long n);
/* The settled rule between floor and cap, in blocks of floor / 2 (two blocks reach the floor);
 * fixed at cap when floor >= cap. */
struct fb_settle_rule fb_settle_between(long floor, long cap);
bool fb_settle_is_fixed(const struct fb_settle_rule *r);

/* The timing side's judgement, block by block. */
struct fb_settle {
    struct fb_settle_rule rule;
    long used;     /* iterations judged so far */
    double prev;   /* the last block's median; < 0: no block yet */
};

void fb_settle_init(struct fb_settle *s, const struct fb_settle_rule *r);
/* The iterations the next block runs (0: the warm-up is over). */
long fb_settle_next_block(const struct fb_settle *s);
/* Judge one block of n samples (reordered in place): true when the warm-up goes on. */
bool fb_settle_block(struct fb_settle *s, double *samples, long n);

/* What the driver calls. iterate: warm-up iteration i, the last of its block being end - 1
 * (a kernel that prepares the following iteration inside this one needs to know whether one
 * follows in this block); its sample in *sample on a timing side. agree: *more in, this
 * side's verdict (false on a side that does not time); out, the verdict every side follows
 * (true when any timing side wants more). NULL for a kernel with a single side. Both 0 or -1. */
struct fb_warmup_ops {
    int (*iterate)(void *ctx, long i, long end, double *sample);
    int (*agree)(void *ctx, bool *more);
    void *ctx;
    bool timing; /* this side's samples are judged */
};

/* Run the warm-up by rule r: the iterations it used, or -1 when a hook failed. */
long fb_warmup_run(const struct fb_settle_rule *r, const struct fb_warmup_ops *ops);

#endif
