/* coll.c - collective kernels: barrier, t0, one call, t1 per iteration on every rank; the
 * per-iteration times are reduced to rank 0 afterwards (max = the collective's time, min,
 * mean). --validate fills before the barrier and checks after t1.
 */
#include "coll.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "fb_buf.h"
#include "fb_mpi_common.h"
#include "fb_pattern.h"
#include "fb_timer.h"

#define ROOT 0

#ifdef SMPI_SHARED_MALLOC
/* SimGrid (smpicc): every simulated rank lives in one process, so thousands of ranks' buffers
 * would not fit; only their timing is simulated, so all ranks share one backing store. */
#define coll_buf_alloc(len, huge) SMPI_SHARED_MALLOC((len) ? (len) : 1)
#define coll_buf_free(p) SMPI_SHARED_FREE(p)
#else
#define coll_buf_alloc(len, huge) fb_buf_alloc_pages(len, huge)
#define coll_buf_free(p) fb_buf_free(p)
#endif

static const char *const NAMES[] = {
    [FB_COLL_ALLREDUCE] = "mpi.allreduce", [FB_COLL_ALLTOALL] = "mpi.alltoall",
    [FB_COLL_ALLGATHER] = "mpi.allgather", [FB_COLL_GATHER] = "mpi.gather",
    [FB_COLL_BCAST] = "mpi.bcast",         [FB_COLL_REDUCE] = "mpi.reduce",
    [FB_COLL_BARRIER] = "mpi.barrier",
};

struct coll {
    struct fb_mpi_ctx *ctx;
    enum fb_coll_kind kind;
    int rank, n;
    char *sbuf, *rbuf;
};

static bool is_reduction(enum fb_coll_kind k)
{
    return k == FB_COLL_ALLREDUCE || k == FB_COLL_REDUCE;
}

/* Bytes of the send and receive buffers for a message size. */
static void buffer_sizes(const struct coll *c, size_t size, size_t *sbytes, size_t *rbytes)
{
    size_t n = (size_t)c->n;
    *sbytes = *rbytes = size;
    switch (c->kind) {
    case FB_COLL_ALLTOALL:
        *sbytes = *rbytes = n * size;
        break;
    case FB_COLL_ALLGATHER:
    case FB_COLL_GATHER:
        *rbytes = n * size;
        break;
    case FB_COLL_BARRIER:
        *sbytes = *rbytes = 0;
        break;
    default:
        break;
    }
}

static void op(struct coll *c, size_t size)
{
    int count = (int)(is_reduction(c->kind) ? size / sizeof(float) : size);
    switch (c->kind) {
    case FB_COLL_ALLREDUCE:
        MPI_Allreduce(c->sbuf, c->rbuf, count, MPI_FLOAT, MPI_SUM, c->ctx->comm);
        break;
    case FB_COLL_REDUCE:
        MPI_Reduce(c->sbuf, c->rbuf, count, MPI_FLOAT, MPI_SUM, ROOT, c->ctx->comm);
        break;
    case FB_COLL_ALLTOALL:
        MPI_Alltoall(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, c->ctx->comm);
        break;
    case FB_COLL_ALLGATHER:
        MPI_Allgather(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, c->ctx->comm);
        break;
    case FB_COLL_GATHER:
        MPI_Gather(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, ROOT, c->ctx->comm);
        break;
    case FB_COLL_BCAST:
        MPI_Bcast(c->sbuf, count, MPI_CHAR, ROOT, c->ctx->comm);
        break;
    case FB_COLL_BARRIER:
        MPI_Barrier(c->ctx->comm);
        break;
    }
}

static void fill(struct coll *c, size_t size, long iter)
{
    size_t sbytes, rbytes;
    buffer_sizes(c, size, &sbytes, &rbytes);
    if (is_reduction(c->kind))
        fb_pattern_fill_f32((float *)(void *)c->sbuf, size / sizeof(float), size, iter, c->rank);
    else if (c->kind == FB_COLL_BCAST) {
        if (c->rank == ROOT)
            fb_pattern_fill(c->sbuf, size, 0, size, iter, ROOT);
    } else if (c->kind != FB_COLL_BARRIER)
        fb_pattern_fill(c->sbuf, sbytes, 0, size, iter, c->rank);
}

static void check_reduction(struct coll *c, size_t size, long iter)
{
    size_t count = size / sizeof(float);
    float want = 0, got = 0;
    fb_mpi_maybe_corrupt(c->ctx, c->rbuf, count * sizeof(float), c->rank == c->n - 1 ||
                         c->kind == FB_COLL_REDUCE);
    long long bad = fb_pattern_check_f32_sum((const float *)(const void *)c->rbuf, count, size,
                                             iter, c->n, &want, &got);
    if (bad >= 0)
        fb_mpi_validation_failed(c->ctx, size, iter, bad * (long long)sizeof(float), want, got);
}

static void check(struct coll *c, size_t size, long iter)
{
    bool last = c->rank == c->n - 1;
    switch (c->kind) {
    case FB_COLL_ALLREDUCE:
        check_reduction(c, size, iter);
        break;
    case FB_COLL_REDUCE:
        if (c->rank == ROOT)
            check_reduction(c, size, iter);
        break;
    case FB_COLL_ALLTOALL: /* block r came from rank r's block for me */
        fb_mpi_maybe_corrupt(c->ctx, c->rbuf, (size_t)c->n * size, last);
        for (int r = 0; r < c->n; r++)
            fb_mpi_check_bytes(c->ctx, c->rbuf + (size_t)r * size, size, (size_t)c->rank * size,
                               size, iter, r, (size_t)r * size);
        break;
    case FB_COLL_GATHER:
        if (c->rank != ROOT)
            break;
        /* fall through */
    case FB_COLL_ALLGATHER:
        fb_mpi_maybe_corrupt(c->ctx, c->rbuf, (size_t)c->n * size, last || c->kind == FB_COLL_GATHER);
        for (int r = 0; r < c->n; r++)
            fb_mpi_check_bytes(c->ctx, c->rbuf + (size_t)r * size, size, 0, size, iter, r,
                               (size_t)r * size);
        break;
    case FB_COLL_BCAST:
        if (c->rank == ROOT)
            break;
        fb_mpi_maybe_corrupt(c->ctx, c->sbuf, size, last);
        fb_mpi_check_bytes(c->ctx, c->sbuf, size, 0, size, iter, ROOT, 0);
        break;
    case FB_COLL_BARRIER:
        break;
    }
}

/* Before each call. A timed call follows a barrier, whose exit skew a measured collective
 * includes. A warm-up call only has to leave the ranks as a timed call does (its own time is
 * discarded); under a simulator, starting it at one instant does that at 2 (P - 1) messages
 * instead of a barrier's P log2 P (the same times to 0.005 us at 240 and 4096 ranks but for
 * one case, docs/model.md). */
static void start(struct coll *c, bool warmup)
{
    if (warmup && c->ctx->opts.warmup_sync == FB_WARMUP_CLOCK)
        fb_mpi_start_together(c->ctx);
    else
        MPI_Barrier(c->ctx->comm);
}

static void run_size(struct coll *c, size_t size, long warmup, long iters, double *local)
{
    bool validate = c->ctx->opts.validate;
    for (long i = 0; i < warmup + iters; i++) {
        if (validate)
            fill(c, size, i);
        start(c, i < warmup);
        double t0 = fb_now_us();
        op(c, size);
        double t1 = fb_now_us();
        if (validate)
            check(c, size, i);
        if (i >= warmup)
            local[i - warmup] = t1 - t0;
    }
}

/* Each round after the first gets buffers on other physical pages: see fb_buf_renew. */
static void renew_buffers(struct coll *c, size_t smax, size_t rmax, long round)
{
#ifdef SMPI_SHARED_MALLOC
    (void)c, (void)smax, (void)rmax, (void)round; /* simulated pages have no placement to sample */
#else
    if (fb_buf_renew_pair(&c->sbuf, smax, &c->rbuf, rmax, c->ctx->opts.hugepages, round)) {
        fprintf(stderr, "%s: out of memory renewing buffers\n", c->ctx->kernel);
        MPI_Abort(c->ctx->comm, 1);
    }
#endif
}

/* Per-iteration times: this rank's, and the max, min and mean over ranks (rank 0's). */
struct coll_times {
    double *local, *max, *min, *mean;
};

/* One size in one round: run it, reduce the times to rank 0, emit the result. */
static void measure(struct coll *c, size_t size, long round, const struct coll_times *t)
{
    const struct fb_opts *o = &c->ctx->opts;
    if (is_reduction(c->kind) && size < sizeof(float))
        return; /* below one MPI_FLOAT element */
    long iters = fb_opts_round_iterations(o, size, round);
    long warmup = fb_opts_round_warmup(o, size, round);
    if (iters == 0)
        return;
    run_size(c, size, warmup, iters, t->local);
    fb_mpi_reduce_times(c->ctx->comm, t->local, (size_t)iters, t->max, t->min, t->mean);

    bool red = is_reduction(c->kind);
    unsigned long long count = red ? size / sizeof(float) : size;
    struct fb_mpi_result r = {
        .size = size,
        .iterations = iters,
        .warmup = warmup,
        .datatype = red ? "MPI_FLOAT" : c->kind == FB_COLL_BARRIER ? "none" : "MPI_CHAR",
        .count = count,
        .bytes_per_sample = red ? (double)(count * sizeof(float)) : (double)size,
        .messages_per_sample = 1,
        .times = t->max,
        .times_min = t->min,
        .times_mean = t->mean,
        .round = round,
    };
    fb_mpi_emit_result(c->ctx, &r);
}

int fb_coll_main(enum fb_coll_kind kind, int argc, char **argv)
{
    struct fb_mpi_ctx ctx;
    int code = 0;
    size_t size_min = is_reduction(kind) ? sizeof(float) : kind == FB_COLL_BARRIER ? 0 : 1;
    if (fb_mpi_start(&ctx, NAMES[kind], FB_CLASS_COLLECTIVE, size_min, 1, false, &argc, &argv,
                     &code))
        return code;

    struct coll c = {.ctx = &ctx, .kind = kind, .rank = ctx.rank, .n = ctx.nranks};
    const struct fb_opts *o = &ctx.opts;

    /* barrier has no message: one result at size 0 whatever --sizes says */
    static const size_t barrier_size = 0;
    const size_t *sizes = kind == FB_COLL_BARRIER ? &barrier_size : o->sizes;
    int nsizes = kind == FB_COLL_BARRIER ? 1 : o->nsizes;

    size_t smax = 1, rmax = 1;
    long nmax = 1;
    for (int s = 0; s < nsizes; s++) {
        size_t sb, rb;
        buffer_sizes(&c, sizes[s], &sb, &rb);
        smax = sb > smax ? sb : smax;
        rmax = rb > rmax ? rb : rmax;
        nmax = fb_opts_iterations(o, sizes[s]) > nmax ? fb_opts_iterations(o, sizes[s]) : nmax;
    }
    c.sbuf = coll_buf_alloc(smax, o->hugepages);
    c.rbuf = coll_buf_alloc(rmax, o->hugepages);
    struct coll_times t = {
        .local = calloc((size_t)nmax, sizeof(double)),
        .max = calloc((size_t)nmax, sizeof(double)),
        .min = calloc((size_t)nmax, sizeof(double)),
        .mean = calloc((size_t)nmax, sizeof(double)),
    };
    if (!c.sbuf || !c.rbuf || !t.local || !t.max || !t.min || !t.mean) {
        fprintf(stderr, "%s: out of memory\n", ctx.kernel);
        MPI_Abort(ctx.comm, 1);
    }

    for (long round = 0; round < o->rounds; round++) {
        if (round > 0)
            renew_buffers(&c, smax, rmax, round);
        for (int s = 0; s < nsizes; s++)
            measure(&c, sizes[s], round, &t);
    }

    coll_buf_free(c.sbuf);
    coll_buf_free(c.rbuf);
    free(t.local);
    free(t.max);
    free(t.min);
    free(t.mean);
    return fb_mpi_finish(&ctx);
}
