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
    MPI_Allreduce(c->sbuf, c->rbuf, count, c->dt, MPI_SUM, c->comm);
}

static void call_reduce(struct coll *c, int count)
{
    MPI_Reduce(c->sbuf, c->rbuf, count, c->dt, MPI_SUM, ROOT, c->comm);
}

static void call_alltoall(struct coll *c, int count)
{
    MPI_Alltoall(c->sbuf, count, c->dt, c->rbuf, count, c->dt, c->comm);
}

static void call_allgather(struct coll *c, int count)
{
    MPI_Allgather(c->sbuf, count, c->dt, c->rbuf, count, c->dt, c->comm);
}

static void call_gather(struct coll *c, int count)
{
    MPI_Gather(c->sbuf, count, c->dt, c->rbuf, count, c->dt, ROOT, c->comm);
}

static void call_bcast(struct coll *c, int count)
{
    MPI_Bcast(c->sbuf, count, c->dt, ROOT, c->comm);
}

static void call_barrier(struct coll *c, int count)
{
    (void)count;
    MPI_Barrier(c->comm);
}

/* ---- --validate: fill ---------------------------------------------------------------------- */

/* Fill and check get `size` in bytes of whole elements (count * element size). */
static void fill_operands(struct coll *c, size_t size, long iter)
{
    fb_pattern_fill_operands(c->sbuf, c->elem, size / c->esize, size, iter, c->rank);
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
    size_t count = size / c->esize;
    double want = 0, got = 0;
    fb_mpi_maybe_corrupt(c->ctx, c->rbuf, size, designated);
    long long bad = fb_pattern_check_sum(c->rbuf, c->elem, count, size, iter, c->n, &want, &got);
    if (bad >= 0)
        fb_mpi_validation_failed(c->ctx, size, iter, bad * (long long)c->esize, want, got);
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

/* The MPI datatype a collective moves, from --datatype: float for reductions and char for
 * the others by default; a char reduction uses MPI_SIGNED_CHAR (MPI_SUM is defined on it,
 * as OSU does). */
static void choose_datatype(struct coll *c, enum fb_datatype want)
{
    static const struct {
        MPI_Datatype dt;
        enum fb_elem elem;
        const char *name;
    } T[] = {
        [FB_DT_CHAR] = {MPI_CHAR, FB_ELEM_CHAR, "MPI_CHAR"},
        [FB_DT_INT] = {MPI_INT, FB_ELEM_INT, "MPI_INT"},
        [FB_DT_FLOAT] = {MPI_FLOAT, FB_ELEM_FLOAT, "MPI_FLOAT"},
        [FB_DT_DOUBLE] = {MPI_DOUBLE, FB_ELEM_DOUBLE, "MPI_DOUBLE"},
    };
    if (c->op->data == COLL_NONE) {
        c->dt = MPI_DATATYPE_NULL, c->elem = FB_ELEM_CHAR, c->esize = 0, c->dtname = "none";
        return;
    }
    if (want == FB_DT_DEFAULT)
        want = c->op->data == COLL_OPERANDS ? FB_DT_FLOAT : FB_DT_CHAR;
    c->dt = T[want].dt;
    c->elem = T[want].elem;
    c->esize = fb_elem_size(c->elem);
    c->dtname = T[want].name;
    if (want == FB_DT_CHAR && c->op->data == COLL_OPERANDS)
        c->dt = MPI_SIGNED_CHAR, c->dtname = "MPI_SIGNED_CHAR";
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

/* The per-iteration samples of one size: barrier, t0, call, t1 on every rank. `bytes`: the
 * whole elements of the message. */
static void run_size(struct coll *c, size_t bytes, long warmup, long iters, double *local)
{
    const struct coll_op *op = c->op;
    bool validate = c->ctx->opts.validate;
    int count = c->esize ? (int)(bytes / c->esize) : 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (validate && op->fill)
            op->fill(c, bytes, i);
        start(c, i < warmup);
        double t0 = fb_now_us();
        op->call(c, count);
        double t1 = fb_now_us();
        if (validate && op->check)
            op->check(c, bytes, i);
        if (i >= warmup)
            local[i - warmup] = t1 - t0;
    }
}

/* OSU's average (osu_allreduce and its siblings, 5.x to 7.4): each rank times every call
 * alone and meets the others at a barrier after it, outside the timing; the mean per call
 * on each rank, averaged over the ranks (rank 0's result). A barrier kernel's calls follow
 * each other directly, as osu_barrier's. */
static double osu_average(struct coll *c, size_t bytes, long iters)
{
    int count = c->esize ? (int)(bytes / c->esize) : 0;
    bool sep = c->op->data != COLL_NONE;
    double sum = 0, mine, total = 0;
    MPI_Barrier(c->comm);
    for (long i = 0; i < iters; i++) {
        double t0 = fb_now_us();
        c->op->call(c, count);
        sum += fb_now_us() - t0;
        if (sep)
            MPI_Barrier(c->comm);
    }
    mine = sum / (double)iters;
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, ROOT, c->comm);
    return total / c->n;
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
    if (size < c->esize)
        return; /* below one element */
    long iters = fb_opts_round_iterations(o, size, round);
    long warmup = fb_opts_round_warmup(o, size, round);
    if (iters == 0)
        return;
    unsigned long long count = c->esize ? size / c->esize : 0;
    size_t bytes = c->esize ? (size_t)count * c->esize : size;
    run_size(c, bytes, warmup, iters, t->local);
    fb_mpi_reduce_times(c->comm, t->local, (size_t)iters, t->max, t->min, t->mean);
    long osu_iters = o->osu_iterations < 0 ? iters : o->osu_iterations / o->rounds +
                     (round < o->osu_iterations % o->rounds ? 1 : 0);
    double osu = osu_iters > 0 ? osu_average(c, bytes, osu_iters) : 0;

    struct fb_mpi_result r = {
        .size = size,
        .iterations = iters,
        .warmup = warmup,
        .datatype = c->dtname,
        .count = count,
        .bytes_per_sample = (double)bytes,
        .messages_per_sample = 1,
        .times = t->max,
        .times_min = t->min,
        .times_mean = t->mean,
        .round = round,
        .osu_avg = osu,
        .osu_iterations = osu_iters,
    };
    fb_mpi_emit_result(c->ctx, &r);
}

int fb_coll_main(const struct fb_mpi_kernel *k, int argc, char **argv)
{
    for (size_t i = 0; i < NOPS; i++)
        if (!strcmp(OPS[i].name, k->name))
            return fb_coll_run(k, &OPS[i], argc, argv);
    fprintf(stderr, "%s: coll.c's table has no collective of this name\n", k->name);
    return 2;
}

int fb_coll_run(const struct fb_mpi_kernel *k, const struct coll_op *op, int argc, char **argv)
{
    struct fb_mpi_ctx ctx;
    int code = 0;
    if (fb_mpi_start(&ctx, k, FB_CLASS_COLLECTIVE, 1, NULL, &argc, &argv, &code))
        return code;

    struct coll c = {.op = op, .ctx = &ctx, .comm = ctx.comm, .rank = ctx.rank, .n = ctx.nranks};
    const struct fb_opts *o = &ctx.opts;
    choose_datatype(&c, o->datatype);

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
    c.sbuf = fb_mpi_buf_alloc(smax, o->hugepages);
    c.rbuf = fb_mpi_buf_alloc(rmax, o->hugepages);
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

    fb_mpi_buf_free(c.sbuf);
    fb_mpi_buf_free(c.rbuf);
    free(t.local);
    free(t.max);
    free(t.min);
    free(t.mean);
    return fb_mpi_finish(&ctx);
}
