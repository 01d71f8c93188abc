/* coll.c - collective kernels: barrier, t0, one call, t1 per iteration on every rank; the
 * per-iteration times are reduced to rank 0 afterwards (max = the collective's time, min,
 * mean). --validate fills before the barrier and checks after t1.
 *
 * A collective is one row of OPS (its buffers, call, fill and check) plus its line in
 * native/kernels.list, which builds its executable and registers it on the Python side.
 */
#include "coll.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One rank's state for a run. */
struct coll {
    const struct coll_op *op;
    struct fb_mpi_ctx *ctx;
    MPI_Comm comm;
    int rank, n;
    char *sbuf, *rbuf;
};

/* What a collective moves: bytes (MPI_CHAR, count = size), reduction operands (MPI_FLOAT,
 * count = size / 4, sizes below one element skipped) or nothing (one result at size 0). */
enum coll_data { COLL_BYTES, COLL_OPERANDS, COLL_NONE };

/* One collective: one row of OPS below. `buffers` gives the send and receive bytes for a
 * message size; `call` makes the MPI call for `count` elements; `fill` (before the barrier)
 * and `check` (after t1) serve --validate, NULL where there is nothing to fill or check. */
struct coll_op {
    const char *name;
    enum coll_data data;
    void (*buffers)(const struct coll *c, size_t size, size_t *sbytes, size_t *rbytes);
    void (*call)(struct coll *c, int count);
    void (*fill)(struct coll *c, size_t size, long iter);
    void (*check)(struct coll *c, size_t size, long iter);
};

/* ---- buffers ----------------------------------------------------------------------------- */

static void bufs_one(const struct coll *c, size_t size, size_t *s, size_t *r)
{
    (void)c;
    *s = *r = size;
}

static void bufs_per_peer(const struct coll *c, size_t size, size_t *s, size_t *r)
{
    *s = *r = (size_t)c->n * size;
}

static void bufs_gathered(const struct coll *c, size_t size, size_t *s, size_t *r)
{
    *s = size;
    *r = (size_t)c->n * size;
}

static void bufs_none(const struct coll *c, size_t size, size_t *s, size_t *r)
{
    (void)c, (void)size;
    *s = *r = 0;
}

/* ---- calls ------------------------------------------------------------------------------- */

static void call_allreduce(struct coll *c, int count)
{
    MPI_Allreduce(c->sbuf, c->rbuf, count, MPI_FLOAT, MPI_SUM, c->comm);
}

static void call_reduce(struct coll *c, int count)
{
    MPI_Reduce(c->sbuf, c->rbuf, count, MPI_FLOAT, MPI_SUM, ROOT, c->comm);
}

static void call_alltoall(struct coll *c, int count)
{
    MPI_Alltoall(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, c->comm);
}

static void call_allgather(struct coll *c, int count)
{
    MPI_Allgather(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, c->comm);
}

static void call_gather(struct coll *c, int count)
{
    MPI_Gather(c->sbuf, count, MPI_CHAR, c->rbuf, count, MPI_CHAR, ROOT, c->comm);
}

static void call_bcast(struct coll *c, int count)
{
    MPI_Bcast(c->sbuf, count, MPI_CHAR, ROOT, c->comm);
}

static void call_barrier(struct coll *c, int count)
{
    (void)count;
    MPI_Barrier(c->comm);
}

/* ---- --validate: fill ---------------------------------------------------------------------- */

static void fill_operands(struct coll *c, size_t size, long iter)
{
    fb_pattern_fill_f32((float *)(void *)c->sbuf, size / sizeof(float), size, iter, c->rank);
}

/* The whole send buffer (all peers' blocks for alltoall) with this rank's pattern. */
static void fill_own(struct coll *c, size_t size, long iter)
{
    size_t sbytes, rbytes;
    c->op->buffers(c, size, &sbytes, &rbytes);
    fb_pattern_fill(c->sbuf, sbytes, 0, size, iter, c->rank);
}

static void fill_root(struct coll *c, size_t size, long iter)
{
    if (c->rank == ROOT)
        fb_pattern_fill(c->sbuf, size, 0, size, iter, ROOT);
}

/* ---- --validate: check --------------------------------------------------------------------- */

static bool last_rank(const struct coll *c)
{
    return c->rank == c->n - 1;
}

static void check_sum(struct coll *c, size_t size, long iter, bool designated)
{
    size_t count = size / sizeof(float);
    float want = 0, got = 0;
    fb_mpi_maybe_corrupt(c->ctx, c->rbuf, count * sizeof(float), designated);
    long long bad = fb_pattern_check_f32_sum((const float *)(const void *)c->rbuf, count, size,
                                             iter, c->n, &want, &got);
    if (bad >= 0)
        fb_mpi_validation_failed(c->ctx, size, iter, bad * (long long)sizeof(float), want, got);
}

static void check_sum_all(struct coll *c, size_t size, long iter)
{
    check_sum(c, size, iter, last_rank(c));
}

static void check_sum_root(struct coll *c, size_t size, long iter)
{
    if (c->rank == ROOT)
        check_sum(c, size, iter, true);
}

/* Block r of the receive buffer came from rank r; `peer_block`: the sender's block for me
 * (alltoall) rather than its only one. */
static void check_blocks(struct coll *c, size_t size, long iter, bool peer_block, bool designated)
{
    fb_mpi_maybe_corrupt(c->ctx, c->rbuf, (size_t)c->n * size, designated);
    uint64_t off0 = peer_block ? (uint64_t)c->rank * size : 0;
    for (int r = 0; r < c->n; r++)
        fb_mpi_check_bytes(c->ctx, c->rbuf + (size_t)r * size, size, off0, size, iter, r,
                           (size_t)r * size);
}

static void check_alltoall(struct coll *c, size_t size, long iter)
{
    check_blocks(c, size, iter, true, last_rank(c));
}

static void check_allgather(struct coll *c, size_t size, long iter)
{
    check_blocks(c, size, iter, false, last_rank(c));
}

static void check_gather(struct coll *c, size_t size, long iter)
{
    if (c->rank == ROOT)
        check_blocks(c, size, iter, false, true);
}

static void check_bcast(struct coll *c, size_t size, long iter)
{
    if (c->rank == ROOT)
        return;
    fb_mpi_maybe_corrupt(c->ctx, c->sbuf, size, last_rank(c));
    fb_mpi_check_bytes(c->ctx, c->sbuf, size, 0, size, iter, ROOT, 0);
}

/* ---- the collectives: one row each --------------------------------------------------------- */

static const struct coll_op OPS[] = {
    {"mpi.allreduce", COLL_OPERANDS, bufs_one, call_allreduce, fill_operands, check_sum_all},
    {"mpi.reduce", COLL_OPERANDS, bufs_one, call_reduce, fill_operands, check_sum_root},
    {"mpi.alltoall", COLL_BYTES, bufs_per_peer, call_alltoall, fill_own, check_alltoall},
    {"mpi.allgather", COLL_BYTES, bufs_gathered, call_allgather, fill_own, check_allgather},
    {"mpi.gather", COLL_BYTES, bufs_gathered, call_gather, fill_own, check_gather},
    {"mpi.bcast", COLL_BYTES, bufs_one, call_bcast, fill_root, check_bcast},
    {"mpi.barrier", COLL_NONE, bufs_none, call_barrier, NULL, NULL},
};
#define NOPS (sizeof(OPS) / sizeof(OPS[0]))

/* Bytes per element of what a collective moves (0: nothing). */
static size_t elem_size(const struct coll_op *op)
{
    return op->data == COLL_OPERANDS ? sizeof(float) : op->data == COLL_BYTES ? 1 : 0;
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
        MPI_Barrier(c->comm);
}

static void run_size(struct coll *c, size_t size, long warmup, long iters, double *local)
{
    const struct coll_op *op = c->op;
    bool validate = c->ctx->opts.validate;
    size_t elem = elem_size(op);
    int count = elem ? (int)(size / elem) : 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (validate && op->fill)
            op->fill(c, size, i);
        start(c, i < warmup);
        double t0 = fb_now_us();
        op->call(c, count);
        double t1 = fb_now_us();
        if (validate && op->check)
            op->check(c, size, i);
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

static const char *datatype_name(const struct coll_op *op)
{
    return op->data == COLL_OPERANDS ? "MPI_FLOAT" : op->data == COLL_BYTES ? "MPI_CHAR" : "none";
}

/* One size in one round: run it, reduce the times to rank 0, emit the result. */
static void measure(struct coll *c, size_t size, long round, const struct coll_times *t)
{
    const struct fb_opts *o = &c->ctx->opts;
    size_t elem = elem_size(c->op);
    if (size < elem)
        return; /* below one element */
    long iters = fb_opts_round_iterations(o, size, round);
    long warmup = fb_opts_round_warmup(o, size, round);
    if (iters == 0)
        return;
    run_size(c, size, warmup, iters, t->local);
    fb_mpi_reduce_times(c->comm, t->local, (size_t)iters, t->max, t->min, t->mean);

    unsigned long long count = elem ? size / elem : 0;
    struct fb_mpi_result r = {
        .size = size,
        .iterations = iters,
        .warmup = warmup,
        .datatype = datatype_name(c->op),
        .count = count,
        .bytes_per_sample = elem ? (double)(count * elem) : (double)size,
        .messages_per_sample = 1,
        .times = t->max,
        .times_min = t->min,
        .times_mean = t->mean,
        .round = round,
    };
    fb_mpi_emit_result(c->ctx, &r);
}

int fb_coll_main(const struct fb_mpi_kernel *k, int argc, char **argv)
{
    const struct coll_op *op = NULL;
    for (size_t i = 0; i < NOPS && !op; i++)
        if (!strcmp(OPS[i].name, k->name))
            op = &OPS[i];
    if (!op) {
        fprintf(stderr, "%s: coll.c's table has no collective of this name\n", k->name);
        return 2;
    }
    struct fb_mpi_ctx ctx;
    int code = 0;
    if (fb_mpi_start(&ctx, k, FB_CLASS_COLLECTIVE, 1, &argc, &argv, &code))
        return code;

    struct coll c = {.op = op, .ctx = &ctx, .comm = ctx.comm, .rank = ctx.rank, .n = ctx.nranks};
    const struct fb_opts *o = &ctx.opts;

    /* no data (barrier): one result at size 0 whatever --sizes says */
    static const size_t no_size = 0;
    const size_t *sizes = op->data == COLL_NONE ? &no_size : o->sizes;
    int nsizes = op->data == COLL_NONE ? 1 : o->nsizes;

    size_t smax = 1, rmax = 1;
    long nmax = 1;
    for (int s = 0; s < nsizes; s++) {
        size_t sb, rb;
        op->buffers(&c, sizes[s], &sb, &rb);
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
