/* fb_settle.c - the settled warm-up (see fb_settle.h). */
#include "fb_settle.h"

#include <math.h>
#include <stdlib.h>

#include "fb_order.h"

struct fb_settle_rule fb_settle_fixed(long n)
{
    long c = n > 0 ? n : 0;
    return (struct fb_settle_rule){.floor = c, .cap = c, .block = c, .tol = 0};
}

struct fb_settle_rule fb_settle_between(long floor, long cap)
{
    if (floor >= cap || floor < 2)
        return fb_settle_fixed(cap > floor ? cap : floor);
    return (struct fb_settle_rule){.floor = floor, .cap = cap, .block = floor / 2,
                                   .tol = FB_SETTLE_TOL};
}

bool fb_settle_is_fixed(const struct fb_settle_rule *r)
{
    return r->floor >= r->cap;
}

void fb_settle_init(struct fb_settle *s, const struct fb_settle_rule *r)
{
    s->rule = *r;
    s->used = 0;
    s->prev = -1;
}

long fb_settle_next_block(const struct fb_settle *s)
{
    long left = s->rule.cap - s->used;
    if (left <= 0)
        return 0;
    long b = s->rule.block > 0 ? s->rule.block : left;
    return b < left ? b : left;
}

bool fb_settle_block(struct fb_settle *s, double *samples, long n)
{
    s->used += n;
    if (n <= 0 || s->used >= s->rule.cap)
        return false;
    fb_sort_doubles(samples, n);
    double m = fb_median_sorted(samples, n);
    bool settled = s->prev >= 0 && fabs(m - s->prev) <= s->rule.tol * s->prev;
    s->prev = m;
    return s->used < s->rule.floor || !settled;
}

long fb_warmup_run(const struct fb_settle_rule *r, const struct fb_warmup_ops *ops)
{
    struct fb_settle s;
    fb_settle_init(&s, r);
    bool fixed = fb_settle_is_fixed(r);
    double *buf = NULL;
    if (!fixed && !(buf = malloc(sizeof(double) * (size_t)r->block)))
        return -1;
    long i = 0;
    for (long n; (n = fb_settle_next_block(&s)) > 0;) {
        for (long k = 0; k < n; k++, i++) {
            double sample = 0;
            if (ops->iterate(ops->ctx, i, i - k + n, &sample))
                goto fail;
            if (buf)
                buf[k] = sample;
        }
        if (fixed)
            break;
        bool more = fb_settle_block(&s, buf, n);
        if (ops->agree) {
            /* a side that does not time has nothing to judge: the timing sides decide */
            more = ops->timing && more;
            if (ops->agree(ops->ctx, &more))
                goto fail;
        }
        if (!more)
            break;
    }
    free(buf);
    return i;
fail:
    free(buf);
    return -1;
}
