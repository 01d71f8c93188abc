/* pt2pt.c - point-to-point kernels: one loop per kind, shared set-up and reporting.
 *
 * Timing is per iteration (one round trip or one window) with fill/check of --validate kept
 * outside the timed region; in --validate mode a barrier separates iterations so a check on
 * one side never delays the other side's next timed region.
 */
#include "pt2pt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_mpi_common.h"
#include "fb_pattern.h"
#include "fb_stop.h"
#include "fb_timer.h"


enum fb_pt2pt_kind {
    FB_PT2PT_LATENCY, /* ping-pong between ranks 0 and 1, half round trip */
    FB_PT2PT_BW,      /* rank 0 streams windows to rank 1, 1-byte ack per window */
    FB_PT2PT_BIBW,    /* ranks 0 and 1 stream windows to each other */
    FB_PT2PT_MBW_MR,  /* rank i streams to rank i + n/2, every pair at once */
};

struct kind_info {
    const char *kernel;
    enum fb_kernel_class cls;
    bool pairs; /* pairs the ranks: native/kernels.list must say ranks=even */
};

static const struct kind_info KINDS[] = {
    [FB_PT2PT_LATENCY] = {"mpi.latency", FB_CLASS_LATENCY, false},
    [FB_PT2PT_BW] = {"mpi.bw", FB_CLASS_BANDWIDTH, false},
    [FB_PT2PT_BIBW] = {"mpi.bibw", FB_CLASS_BANDWIDTH, false},
    [FB_PT2PT_MBW_MR] = {"mpi.mbw_mr", FB_CLASS_BANDWIDTH, true},
};
#define NKINDS (sizeof(KINDS) / sizeof(KINDS[0]))

/* Everything one rank needs for a run: its role, its peer, its buffers. */
struct pt2pt {
    struct fb_mpi_ctx *ctx;
    enum fb_pt2pt_kind kind;
    MPI_Comm comm;   /* ranks that take part (MPI_COMM_NULL: idle rank) */
    int rank, peer;  /* in comm */
    bool sender;     /* streams (bw, mbw_mr) or starts the ping-pong (latency) */
    bool designated; /* the rank FABENCH_CORRUPT acts on */
    int window;
    char *sbuf, *rbuf;
    /* this iteration's message buffers: the start of each (one slot, validating or not:
     * one footprint, OSU's), or --cache-cold's slot of the ping-pong's message; a window
     * kernel's --cache-cold places each message of the window by `ring` (`at`) instead */
    char *scur, *rcur;
    struct fb_ring ring;
    const struct fb_ring *at; /* &ring, or NULL: every message of a window at scur / rcur */
    size_t blen;       /* bytes of each of sbuf and rbuf */
    struct fb_mpi_xfer mx; /* the loop engine's MPI hooks (fb_loop.h) */
    struct fb_xfer x;
};

/* One timed iteration, by the engine's loop of this kind's shape; returns the sample in us
 * (meaningful on the timing side only). `next`: where the following window lands (a window
 * receiver posts its receives ahead), NULL when none follows or it is posted later. */
static double iteration(struct pt2pt *p, size_t size, char *next)
{
    double sample = 0.0;
    int rc = 0;
    switch (p->kind) {
    case FB_PT2PT_LATENCY:
        rc = fb_pingpong(&p->x, p->sender, p->scur, p->rcur, size, p->ctx->opts.batch,
                         &sample);
        break;
    case FB_PT2PT_BW:
    case FB_PT2PT_MBW_MR:
        rc = fb_window(&p->x, p->sender, p->scur, p->rcur, p->sender ? NULL : next, p->at,
                       size, p->window, &sample);
        break;
    case FB_PT2PT_BIBW:
        rc = fb_window_bidir(&p->x, p->scur, p->rcur, p->at, size, p->window, &sample);
        break;
    }
    if (rc) {
        fprintf(stderr, "%s: a transfer failed\n", p->ctx->kernel);
        MPI_Abort(p->ctx->comm, 1);
    }
    return sample;
}

/* A window receiver, whose next window's receives go out before its ack (fb_window). */
static bool posts_ahead(const struct pt2pt *p)
{
    return (p->kind == FB_PT2PT_BW || p->kind == FB_PT2PT_MBW_MR) && !p->sender;
}

static bool receives(const struct pt2pt *p)
{
    return p->kind == FB_PT2PT_LATENCY || p->kind == FB_PT2PT_BIBW || !p->sender;
}

static bool sends(const struct pt2pt *p)
{
    return p->kind == FB_PT2PT_LATENCY || p->kind == FB_PT2PT_BIBW || p->sender;
}

/* Every slot the window sends from carries the iteration's bytes. With --cache-cold the fill
 * leaves the slots it wrote last (up to a last-level cache of them) in cache: a validated
 * cold window is partly warm on its sending side. */
static void fill(struct pt2pt *p, size_t size, long iter)
{
    if (!sends(p))
        return;
    long n = 1; /* distinct send slots of the window */
    if (p->at)
        n = (long)p->at->n < p->window ? (long)p->at->n : p->window;
    for (long k = 0; k < n; k++)
        fb_pattern_fill(p->scur + fb_ring_at(p->at, k), size, 0, size, iter, p->ctx->rank);
}

static void check(struct pt2pt *p, size_t size, long iter)
{
    if (!receives(p))
        return;
    /* the slot of the window's last message: every message carries the iteration's bytes */
    char *last = p->rcur + fb_ring_at(p->at, p->window - 1);
    /* the sub-communicator keeps world order, so p->peer is also the peer's world rank */
    fb_mpi_maybe_corrupt(p->ctx, last, size, p->designated);
    fb_mpi_check_bytes(p->ctx, last, size, 0, size, iter, p->peer, 0);
}

/* --cache-cold, window kernels: every message in its own slot, as IMB's Uniband/Biband
 * -off_cache, not one slot per window (which left all but a window's first message warm). */
static bool per_message(const struct pt2pt *p)
{
    return p->ctx->opts.cache_cold && p->kind != FB_PT2PT_LATENCY;
}

/* Where iteration i's messages sit in the buffers: --cache-cold's ping-pong, a slot of the
 * region per iteration; otherwise the buffers' start (window kernels then place each
 * message by the ring, iteration i's window going on from message i * window). */
static size_t slot(const struct pt2pt *p, size_t size, long i)
{
    const struct fb_opts *o = &p->ctx->opts;
    return o->cache_cold && !per_message(p) ? fb_cold_offset(o->cold_region, size, i) : 0;
}

static struct fb_ring ring(const struct pt2pt *p, size_t size, long i)
{
    return fb_cold_ring(p->ctx->opts.cold_region, size, i * p->window);
}

/* Iteration i of a size (warm-up and timed ones counted together), with --validate's fill,
 * check and barrier around it. `follows`: another iteration of this size comes after it. */
static double step(struct pt2pt *p, size_t size, long i, bool follows)
{
    const struct fb_opts *o = &p->ctx->opts;
    bool validate = o->validate;
    size_t off = slot(p, size, i);
    p->scur = p->sbuf + off;
    p->rcur = p->rbuf + off;
    if (per_message(p)) {
        p->ring = ring(p, size, i);
        p->at = &p->ring;
    }
    /* the receive buffer of the window after this one, if one follows; below
     * --large-threshold none: W eager receives posted before the ack sit on the
     * sender's path (8 B windows read 0.64x, bench/prepost_window.py) */
    char *next = follows && size >= o->large_threshold ? p->rbuf + slot(p, size, i + 1) : NULL;
    if (validate)
        fill(p, size, i);
    /* validating, the next window's receives wait until this one is checked: MPI lets
     * no one read a buffer a posted receive owns */
    double sample = iteration(p, size, validate ? NULL : next);
    if (validate) {
        check(p, size, i);
        struct fb_ring after = ring(p, size, i + 1);
        if (next && posts_ahead(p) &&
            fb_window_post(&p->x, next, p->at ? &after : NULL, size, p->window)) {
            fprintf(stderr, "%s: a transfer failed\n", p->ctx->kernel);
            MPI_Abort(p->ctx->comm, 1);
        }
        MPI_Barrier(p->comm);
    }
    return sample;
}

struct warm {
    struct pt2pt *p;
    size_t size;
};

/* A warm-up iteration: timed iterations always follow it (a size with none is skipped). */
static int warm_iterate(void *ctx, long i, long end, double *sample)
{
    struct warm *w = ctx;
    (void)end;
    *sample = step(w->p, w->size, i, true);
    return 0;
}

/* The timing sides' verdict to every rank of the run (mbw_mr: any pair still moving). */
static int warm_agree(void *ctx, bool *more)
{
    struct warm *w = ctx;
    int in = *more, out = 0;
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, w->p->comm) != MPI_SUCCESS)
        return -1;
    *more = out != 0;
    return 0;
}

/* The timed part's outcome: iterations run, the precision reached at the stop (INFINITY
 * when never judged), and the timed part as a whole: the sum of its blocks, from each block's
 * first iteration's start to its last one's end (the figure OSU divides the bytes by; the
 * judgements between blocks are left out). */
struct timed {
    long ran;
    double reached, whole_us;
};

/* Run one size: the warm-up by `rule`, then the timed iterations into times[] by `stop`
 * (at most stop->cap; fb_stop.h), in blocks whose verdict every rank follows (warm_agree).
 * Returns the warm-up iterations used. One barrier starts the size, as OSU's loops (mbw_mr
 * included: its pairs then stream window after window, as osu_mbw_mr's do). */
static long run_size(struct pt2pt *p, size_t size, const struct fb_settle_rule *rule,
                     const struct fb_stop_rule *stop, double *times, double *scratch,
                     struct timed *out)
{
    MPI_Barrier(p->comm);
    struct warm w = {.p = p, .size = size};
    struct fb_warmup_ops ops = {.iterate = warm_iterate, .agree = warm_agree, .ctx = &w,
                                .timing = p->sender};
    long used = fb_warmup_run(rule, &ops);
    if (used < 0) {
        fprintf(stderr, "%s: the warm-up failed\n", p->ctx->kernel);
        MPI_Abort(p->ctx->comm, 1);
    }
    *out = (struct timed){.reached = INFINITY};
    for (long n; (n = fb_stop_next_block(stop, out->ran)) > 0;) {
        long end = out->ran + n;
        double t_first = fb_now_us();
        /* no receive is posted past a block's end: whether one follows is decided after it */
        for (long k = out->ran; k < end; k++)
            times[k] = step(p, size, used + k, k + 1 < end);
        out->whole_us += fb_now_us() - t_first;
        out->ran = end;
        bool more = end < stop->cap;
        if (stop->target > 0) { /* the timing sides judge; every rank follows */
            more = p->sender && fb_stop_more(stop, times, end, scratch, &out->reached);
            if (warm_agree(&w, &more))
                MPI_Abort(p->ctx->comm, 1);
        }
        if (!more)
            break;
    }
    return used;
}

/* Roles: latency/bw/bibw use world ranks 0 and 1; mbw_mr pairs i with i + n/2. */
static void setup(struct pt2pt *p, struct fb_mpi_ctx *ctx, enum fb_pt2pt_kind kind)
{
    p->ctx = ctx;
    p->kind = kind;
    p->window = kind == FB_PT2PT_LATENCY ? 1 : ctx->opts.window;
    if (ctx->opts.cache_cold) { /* every rank, idle ones too: the usage exit is collective */
        ctx->opts.cold_region = fb_cold_region(fb_opts_max_size(&ctx->opts, 1));
        ctx->opts.cold_cycle = kind == FB_PT2PT_LATENCY ? "iteration" : "message";
        if (!ctx->opts.cold_region)
            fb_mpi_usage_exit(ctx, "--cache-cold: cannot read the last-level cache size "
                                   "(/sys/devices/system/cpu/cpu0/cache)");
    }
    if (kind == FB_PT2PT_MBW_MR) {
        int pairs = ctx->nranks / 2;
        MPI_Comm_dup(ctx->comm, &p->comm);
        p->rank = ctx->rank;
        p->sender = ctx->rank < pairs;
        p->peer = p->sender ? ctx->rank + pairs : ctx->rank - pairs;
        p->designated = ctx->rank == ctx->nranks - 1;
    } else {
        int color = ctx->rank < 2 ? 0 : MPI_UNDEFINED;
        MPI_Comm_split(ctx->comm, color, ctx->rank, &p->comm);
        p->rank = ctx->rank;
        p->sender = ctx->rank == 0;
        p->peer = 1 - ctx->rank;
        p->designated = ctx->rank == 1;
    }
    if (p->comm == MPI_COMM_NULL)
        return;

    size_t maxs = fb_opts_max_size(&ctx->opts, 1);
    /* Validating, every message of a window still lands in the one slot: they all carry the
     * iteration's bytes, so the check of the slot after the window sees the last to land,
     * and a validated run measures the cache footprint of a plain one (W slots read 1.2-1.6x
     * slower at 4 MiB). --cache-cold: the region, whatever the window (fb_buf.h). */
    p->blen = ctx->opts.cache_cold ? ctx->opts.cold_region : maxs;
    p->sbuf = fb_buf_alloc_pages(p->blen, ctx->opts.hugepages);
    p->rbuf = fb_buf_alloc_pages(p->blen, ctx->opts.hugepages);
    p->scur = p->sbuf, p->rcur = p->rbuf;
    int xrc = fb_mpi_xfer_init(&p->mx, &p->x, p->comm, p->peer, 2 * p->window + 1);
    /* ranks sharing cores with others (oversubscribed, or a congestion test's victim beside
     * its aggressors and links) may wait milliseconds for a pong queued behind their traffic */
    p->mx.patient = ctx->shared_cores;
    if (!p->sbuf || !p->rbuf || xrc) {
        fprintf(stderr, "%s: out of memory for %zu-byte buffers\n", ctx->kernel, maxs);
        MPI_Abort(ctx->comm, 1);
    }
}

/* Each round after the first gets buffers on other physical pages (fb_buf_renew), so a run of
 * R rounds samples R page placements; its warm-up absorbs any first-touch cost in the MPI. */
static void renew_buffers(struct pt2pt *p, long round)
{
    size_t maxs = fb_opts_max_size(&p->ctx->opts, 1);
    if (fb_buf_renew_pair(&p->sbuf, p->blen, &p->rbuf, p->blen, p->ctx->opts.hugepages,
                          round)) {
        fprintf(stderr, "%s: out of memory renewing %zu-byte buffers\n", p->ctx->kernel, maxs);
        MPI_Abort(p->ctx->comm, 1);
    }
}

struct bw_extra {
    double osu_mb_s;           /* bandwidth kernels: bytes over the whole timed part */
    const double *window_max;  /* mbw_mr: per window, the slowest pair's time */
    long n;
};

static void bw_fields(struct fb_json *j, const void *arg)
{
    const struct bw_extra *e = arg;
    fb_json_double(j, "osu_mb_s", e->osu_mb_s, 3);
    if (e->window_max) {
        fb_json_str(j, "mbw_method", "osu");
        fb_json_double_array(j, "window_times_max", e->window_max, (size_t)e->n, 4);
    }
}

/* One size in one round: run it, gather the timing side's samples, emit the result. */
static void measure(struct pt2pt *p, size_t size, long round, double *local, double *times)
{
    const struct fb_opts *o = &p->ctx->opts;
    long iters = fb_opts_round_iterations(o, size, round);
    /* every round gets the size's full rule: later rounds run on renewed buffers */
    struct fb_settle_rule rule = fb_opts_warmup_rule(o, size);
    (void)round;
    if (iters == 0)
        return;
    long cap = iters;
    struct fb_stop_rule stop = fb_stop_for(cap, o->stop_precision);
    struct timed t;
    /* `times` is free until the samples are gathered into it: the stop's sorting space */
    long used = run_size(p, size, &rule, &stop, local, times, &t);
    iters = t.ran;
    double whole_us = t.whole_us;

    double msgs = (double)p->window;
    /* a pair's bytes over its whole timed part, MB/s as OSU prints them (10^6 B/s) */
    double pair_bytes = (double)size * (double)p->window * (double)iters;
    struct bw_extra e = {.osu_mb_s = whole_us > 0 ? pair_bytes / whole_us : 0, .n = iters};
    double *wmax = NULL;
    if (p->kind == FB_PT2PT_MBW_MR) {
        /* osu_mbw_mr's figure: the pairs' rates summed. Per window, the same: the sample is
         * pairs * bytes over the summed rates (the pairs' harmonic mean time), so
         * bytes_per_sample / sample is the window's summed rate. */
        int pairs = p->ctx->nranks / 2;
        double *inv = calloc((size_t)iters, sizeof(double));
        wmax = calloc((size_t)iters, sizeof(double));
        if (!inv || !wmax) {
            fprintf(stderr, "%s: out of memory\n", p->ctx->kernel);
            MPI_Abort(p->ctx->comm, 1);
        }
        for (long i = 0; i < iters; i++)
            inv[i] = p->sender && local[i] > 0 ? 1.0 / local[i] : 0.0;
        double rate = p->sender ? e.osu_mb_s : 0.0, sum_rate = 0.0;
        MPI_Reduce(p->rank == 0 ? MPI_IN_PLACE : inv, p->rank == 0 ? inv : NULL, (int)iters,
                   MPI_DOUBLE, MPI_SUM, 0, p->comm);
        MPI_Reduce(&rate, &sum_rate, 1, MPI_DOUBLE, MPI_SUM, 0, p->comm);
        fb_mpi_reduce_max(p->comm, local, (size_t)iters, wmax);
        for (long i = 0; i < iters; i++)
            times[i] = inv[i] > 0 ? (double)pairs / inv[i] : 0.0;
        free(inv);
        e.osu_mb_s = sum_rate;
        e.window_max = wmax;
        msgs *= pairs;
    } else {
        for (long i = 0; i < iters; i++)
            times[i] = local[i];
        if (p->kind == FB_PT2PT_BIBW) {
            msgs *= 2;
            e.osu_mb_s *= 2;
        }
    }
    struct fb_mpi_result r = {
        .size = size,
        .iterations = iters,
        .warmup = rule.cap,
        .warmup_used = used,
        .settled = !fb_settle_is_fixed(&rule),
        .datatype = "MPI_CHAR",
        .count = size,
        .bytes_per_sample = msgs * (double)size,
        .messages_per_sample = msgs,
        .times = times,
        .round = round,
        .iterations_cap = cap,
        .stop_reached = t.reached,
        .extra = p->kind == FB_PT2PT_LATENCY ? NULL : bw_fields,
        .extra_arg = &e,
    };
    fb_mpi_emit_result(p->ctx, &r);
    free(wmax);
}

int fb_pt2pt_main(const struct fb_mpi_kernel *k, int argc, char **argv)
{
    size_t i = 0;
    while (i < NKINDS && strcmp(KINDS[i].kernel, k->name))
        i++;
    if (i == NKINDS) {
        fprintf(stderr, "%s: pt2pt.c has no point-to-point kernel of this name\n", k->name);
        return 2;
    }
    if (KINDS[i].pairs != !strcmp(k->ranks, "even")) {
        fprintf(stderr, "%s: native/kernels.list says ranks=%s, but the kernel %s\n", k->name,
                k->ranks, KINDS[i].pairs ? "pairs its ranks (ranks=even)" : "needs no pairs");
        return 2;
    }
    enum fb_pt2pt_kind kind = (enum fb_pt2pt_kind)i;
    struct fb_mpi_ctx ctx;
    int code = 0;
    struct fb_own_opts own = {.scope = FB_SC_COLD | FB_SC_STOP |
                                       (kind == FB_PT2PT_LATENCY ? FB_SC_BATCH : 0)};
    if (fb_mpi_start(&ctx, k, KINDS[kind].cls, 2, &own, &argc, &argv, &code))
        return code;

    struct pt2pt p = {0};
    setup(&p, &ctx, kind);
    const struct fb_opts *o = &ctx.opts;
    long nmax = fb_opts_max_iterations(o);
    double *local = calloc((size_t)nmax, sizeof(double));
    double *times = calloc((size_t)nmax, sizeof(double));
    if (!local || !times) {
        fprintf(stderr, "%s: out of memory\n", ctx.kernel);
        MPI_Abort(ctx.comm, 1);
    }

    for (long round = 0; round < o->rounds && p.comm != MPI_COMM_NULL; round++) {
        if (round > 0)
            renew_buffers(&p, round);
        for (int s = 0; s < o->nsizes; s++)
            measure(&p, o->sizes[s], round, local, times);
    }

    if (p.comm != MPI_COMM_NULL)
        MPI_Comm_free(&p.comm);
    fb_buf_free(p.sbuf);
    fb_buf_free(p.rbuf);
    fb_mpi_xfer_free(&p.mx);
    free(local);
    free(times);
    return fb_mpi_finish(&ctx);
}
