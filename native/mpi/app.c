/* app.c - application proxies: the communication of a 3D stencil code and of a distributed
 * FFT, one step per timed iteration, optional compute between.
 *
 * mpi.halo3d (SST Ember's halo3d motif): the ranks on a 3D grid (MPI_Dims_create, not
 * periodic), each step an optional compute phase (--compute-us: a busy wait, as Ember's compute
 * delay) then a face exchange with the up to six neighbours: six MPI_Irecv, six MPI_Isend,
 * MPI_Waitall. Size = bytes per face. A sample is the step's time on the slowest rank; the
 * record carries the communication fraction (exchange time / step time, slowest rank per step).
 *
 * mpi.fft: the transposes of a distributed FFT. --dims 3 (default): a pencil decomposition on
 * a 2D process grid, each step an MPI_Alltoall in the row sub-communicator then one in the
 * column sub-communicator (the two transposes of a 3D FFT); --dims 2: a slab decomposition,
 * one MPI_Alltoall over all ranks (a 2D FFT). Size = bytes of a rank's local data (what it
 * sends in each transpose). --local-fft adds real local work before each transpose: radix-2
 * complex FFTs over a work array of the same size (a separate array: the data moved stays the
 * validation pattern). A sample is the step's time on the slowest rank; the record carries the
 * number of transposes per sample and the communication fraction.
 *
 * --validate fills every send buffer with the pattern of (size, iteration, sending rank) and
 * checks every received byte, outside the timed region.
 */
#include "app.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_mpi_common.h"
#include "fb_pattern.h"
#include "fb_timer.h"

#define TAG_FACE 200
#define FB_PI 3.14159265358979323846

enum app_kind { APP_HALO3D, APP_FFT };

static const char *const NAMES[] = {[APP_HALO3D] = "mpi.halo3d", [APP_FFT] = "mpi.fft"};

struct app_opts {
    double compute_us; /* halo3d: busy compute per step */
    int dims;          /* fft: 3 (pencils, two transposes) or 2 (slabs, one) */
    bool local_fft;    /* fft: local radix-2 FFTs before each transpose */
};

/* The proxies' own options (rows of the option table in fb_opts.c), checked there. */
static int set_own(void *ctx, enum fb_opt_id id, const struct fb_optval *v, char *why, size_t len)
{
    struct app_opts *a = ctx;
    (void)why, (void)len;
    if (id == FB_O_COMPUTE_US)
        a->compute_us = v->d;
    else if (id == FB_O_DIMS)
        a->dims = (int)v->l;
    else if (id == FB_O_LOCAL_FFT)
        a->local_fft = true;
    return 0;
}

static void busy_wait(double us)
{
    if (us <= 0)
        return;
    double end = fb_now_us() + us;
    while (fb_now_us() < end)
        ;
}

/* In-place radix-2 complex FFT of n (a power of two) points stored re,im interleaved. */
static void fft_radix2(double *x, size_t n)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double tr = x[2 * i], ti = x[2 * i + 1];
            x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
            x[2 * j] = tr, x[2 * j + 1] = ti;
        }
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        double ang = -2.0 * FB_PI / (double)len;
        double wr = cos(ang), wi = sin(ang);
        for (size_t i = 0; i < n; i += len) {
            double cr = 1.0, ci = 0.0;
            for (size_t k = 0; k < len / 2; k++) {
                double *a = x + 2 * (i + k), *b = x + 2 * (i + k + len / 2);
                double br = b[0] * cr - b[1] * ci, bi = b[0] * ci + b[1] * cr;
                b[0] = a[0] - br, b[1] = a[1] - bi;
                a[0] += br, a[1] += bi;
                double t = cr * wr - ci * wi;
                ci = cr * wi + ci * wr;
                cr = t;
            }
        }
    }
}

/* Local FFT work over `bytes` of complex doubles: FFTs of the largest power-of-two length
 * (at most 4096 points, a pencil's length) that fits, over consecutive blocks. */
static void local_fft(double *work, size_t bytes)
{
    size_t points = bytes / (2 * sizeof(double));
    size_t n = 1;
    while (n * 2 <= points && n < 4096)
        n *= 2;
    if (n < 2)
        return;
    for (size_t off = 0; off + n <= points; off += n)
        fft_radix2(work + 2 * off, n);
}

struct app {
    struct fb_mpi_ctx *ctx;
    enum app_kind kind;
    struct app_opts o;
    /* halo3d */
    MPI_Comm cart;
    int dims3[3];
    int nbr[6];      /* neighbour ranks (MPI_PROC_NULL at an edge), world ranks (no reorder) */
    int faces;       /* neighbours that exist */
    /* fft */
    MPI_Comm sub[2]; /* row and column communicators (slabs: world in sub[0] only) */
    int nsub;
    int *members[2]; /* world rank of each member of sub[k] */
    int grid[2];
    double *work;
    char *sbuf, *rbuf;
    MPI_Request reqs[12];
    MPI_Status stats[12];
};

static void setup(struct app *a)
{
    struct fb_mpi_ctx *ctx = a->ctx;
    size_t maxs = fb_opts_max_size(&ctx->opts, 1);
    if (a->kind == APP_HALO3D) {
        int periods[3] = {0, 0, 0};
        MPI_Dims_create(ctx->nranks, 3, a->dims3);
        MPI_Cart_create(ctx->comm, 3, a->dims3, periods, 0, &a->cart);
        for (int d = 0; d < 3; d++)
            MPI_Cart_shift(a->cart, d, 1, &a->nbr[2 * d], &a->nbr[2 * d + 1]);
        for (int f = 0; f < 6; f++)
            a->faces += a->nbr[f] != MPI_PROC_NULL;
        a->sbuf = fb_buf_alloc_pages(maxs * 6, ctx->opts.hugepages);
        a->rbuf = fb_buf_alloc_pages(maxs * 6, ctx->opts.hugepages);
    } else {
        if (a->o.dims == 2) {
            a->grid[0] = ctx->nranks, a->grid[1] = 1;
            MPI_Comm_dup(ctx->comm, &a->sub[0]);
            a->nsub = 1;
        } else {
            int g[2] = {0, 0};
            MPI_Dims_create(ctx->nranks, 2, g);
            a->grid[0] = g[0], a->grid[1] = g[1];
            int row = ctx->rank / g[1], col = ctx->rank % g[1];
            MPI_Comm_split(ctx->comm, row, col, &a->sub[0]); /* my row: g[1] ranks */
            MPI_Comm_split(ctx->comm, col, row, &a->sub[1]); /* my column: g[0] ranks */
            a->nsub = 2;
        }
        for (int k = 0; k < a->nsub; k++) {
            int n;
            MPI_Comm_size(a->sub[k], &n);
            a->members[k] = malloc(sizeof(int) * (size_t)n);
            if (!a->members[k]) {
                fprintf(stderr, "%s: out of memory\n", ctx->kernel);
                MPI_Abort(ctx->comm, 1);
            }
            MPI_Allgather(&ctx->rank, 1, MPI_INT, a->members[k], 1, MPI_INT, a->sub[k]);
        }
        a->sbuf = fb_buf_alloc_pages(maxs, ctx->opts.hugepages);
        a->rbuf = fb_buf_alloc_pages(maxs, ctx->opts.hugepages);
        if (a->o.local_fft)
            a->work = calloc(maxs / sizeof(double) + 2, sizeof(double));
    }
    if (!a->sbuf || !a->rbuf || (a->o.local_fft && !a->work)) {
        fprintf(stderr, "%s: out of memory for %zu-byte buffers\n", ctx->kernel, maxs);
        MPI_Abort(ctx->comm, 1);
    }
}

/* The chunk each member of a sub-communicator gets in an all-to-all of `size` bytes. */
static size_t chunk_of(const struct app *a, int k, size_t size)
{
    int n;
    MPI_Comm_size(a->sub[k], &n);
    return size / (size_t)n;
}

static void fill(struct app *a, size_t size, long iter)
{
    int me = a->ctx->rank;
    if (a->kind == APP_HALO3D) {
        for (int f = 0; f < 6; f++)
            fb_pattern_fill(a->sbuf + (size_t)f * size, size, 0, size, iter, me);
    } else {
        fb_pattern_fill(a->sbuf, size, 0, size, iter, me);
    }
}

static void check_halo(struct app *a, size_t size, long iter)
{
    /* face f receives from nbr[f]; that neighbour sent its opposite face (f ^ 1) */
    int first = 0;
    while (first < 6 && a->nbr[first] == MPI_PROC_NULL)
        first++;
    if (first < 6)
        fb_mpi_maybe_corrupt(a->ctx, a->rbuf + (size_t)first * size, size,
                             a->ctx->rank == a->ctx->nranks - 1);
    for (int f = 0; f < 6; f++)
        if (a->nbr[f] != MPI_PROC_NULL)
            fb_mpi_check_bytes(a->ctx, a->rbuf + (size_t)f * size, size, 0, size, iter,
                               a->nbr[f], (size_t)f * size);
}

static void check_fft(struct app *a, int k, size_t size, long iter)
{
    int n, me;
    MPI_Comm_size(a->sub[k], &n);
    MPI_Comm_rank(a->sub[k], &me);
    size_t chunk = chunk_of(a, k, size);
    fb_mpi_maybe_corrupt(a->ctx, a->rbuf, chunk * (size_t)n, a->ctx->rank == a->ctx->nranks - 1);
    for (int s = 0; s < n; s++)
        fb_mpi_check_bytes(a->ctx, a->rbuf + (size_t)s * chunk, chunk, (uint64_t)me * chunk, size,
                           iter, a->members[k][s], (size_t)s * chunk);
}

/* One step; returns (step time, communication time) on this rank. */
static void step(struct app *a, size_t size, long iter, bool validate, double *t_step,
                 double *t_comm)
{
    double comm = 0;
    double t0 = fb_now_us();
    if (a->kind == APP_HALO3D) {
        busy_wait(a->o.compute_us);
        double c0 = fb_now_us();
        int r = 0;
        for (int f = 0; f < 6; f++)
            if (a->nbr[f] != MPI_PROC_NULL)
                MPI_Irecv(a->rbuf + (size_t)f * size, (int)size, MPI_CHAR, a->nbr[f], TAG_FACE + f,
                          a->cart, &a->reqs[r++]);
        for (int f = 0; f < 6; f++)
            if (a->nbr[f] != MPI_PROC_NULL) /* my face f is the neighbour's face f ^ 1 */
                MPI_Isend(a->sbuf + (size_t)f * size, (int)size, MPI_CHAR, a->nbr[f],
                          TAG_FACE + (f ^ 1), a->cart, &a->reqs[r++]);
        MPI_Waitall(r, a->reqs, a->stats);
        comm = fb_now_us() - c0;
        *t_step = fb_now_us() - t0;
        *t_comm = comm;
        if (validate)
            check_halo(a, size, iter);
        return;
    }
    for (int k = 0; k < a->nsub; k++) {
        if (a->o.local_fft)
            local_fft(a->work, size);
        size_t chunk = chunk_of(a, k, size);
        double c0 = fb_now_us();
        MPI_Alltoall(a->sbuf, (int)chunk, MPI_CHAR, a->rbuf, (int)chunk, MPI_CHAR, a->sub[k]);
        comm += fb_now_us() - c0;
        if (validate) {
            double v0 = fb_now_us();
            check_fft(a, k, size, iter);
            t0 += fb_now_us() - v0; /* the check is not part of the step */
        }
    }
    *t_step = fb_now_us() - t0;
    *t_comm = comm;
}

static void emit_extra(struct fb_json *j, const void *arg)
{
    const double *v = arg; /* comm fraction, then kind-specific fields */
    fb_json_double(j, "comm_fraction", v[0], 4);
    if (v[1] >= 0)
        fb_json_double(j, "compute_us", v[1], 3);
    if (v[2] > 0)
        fb_json_int(j, "transposes", (long long)v[2]);
    fb_json_int(j, "faces", (long long)v[3]);
    char grid[64];
    snprintf(grid, sizeof(grid), "%dx%dx%d", (int)v[4], (int)v[5], (int)v[6]);
    fb_json_str(j, "grid", grid);
}

static void measure(struct app *a, size_t size, long round, double *step_t, double *comm_t,
                    double *max_step, double *max_comm)
{
    struct fb_mpi_ctx *ctx = a->ctx;
    const struct fb_opts *o = &ctx->opts;
    long iters = fb_opts_round_iterations(o, size, round);
    long warmup = fb_opts_round_warmup(o, size, round);
    if (iters == 0)
        return;
    if (a->kind == APP_FFT) {
        for (int k = 0; k < a->nsub; k++) {
            int n;
            MPI_Comm_size(a->sub[k], &n);
            if (size % (size_t)n) {
                if (ctx->rank == 0)
                    fprintf(stderr, "%s: size %zu is not a multiple of %d ranks per transpose: "
                                    "each rank's data must split evenly\n",
                            ctx->kernel, size, n);
                fb_mpi_usage_exit(ctx, "size does not split evenly over the ranks");
            }
        }
    }
    MPI_Barrier(ctx->comm);
    for (long i = 0; i < warmup + iters; i++) {
        if (o->validate) {
            fill(a, size, i);
            MPI_Barrier(ctx->comm);
        }
        double ts, tc;
        MPI_Barrier(ctx->comm);
        step(a, size, i, o->validate, &ts, &tc);
        if (i >= warmup)
            step_t[i - warmup] = ts, comm_t[i - warmup] = tc;
    }
    fb_mpi_reduce_max(ctx->comm, step_t, (size_t)iters, max_step);
    fb_mpi_reduce_max(ctx->comm, comm_t, (size_t)iters, max_comm);
    int faces = a->faces;
    MPI_Allreduce(MPI_IN_PLACE, &faces, 1, MPI_INT, MPI_MAX, ctx->comm);
    if (ctx->rank != 0)
        return;
    double sum_s = 0, sum_c = 0;
    for (long i = 0; i < iters; i++)
        sum_s += max_step[i], sum_c += max_comm[i];
    double extra[7] = {sum_s > 0 ? fmin(1.0, sum_c / sum_s) : 0.0,
                       a->kind == APP_HALO3D ? a->o.compute_us : -1.0,
                       a->kind == APP_FFT ? a->nsub : 0, faces,
                       a->kind == APP_HALO3D ? a->dims3[0] : a->grid[0],
                       a->kind == APP_HALO3D ? a->dims3[1] : a->grid[1],
                       a->kind == APP_HALO3D ? a->dims3[2] : 1};
    /* bytes the busiest rank sends per step */
    double bytes = a->kind == APP_HALO3D ? (double)faces * (double)size
                                         : (double)a->nsub * (double)size;
    struct fb_mpi_result r = {
        .size = size,
        .iterations = iters,
        .warmup = warmup,
        .datatype = "MPI_CHAR",
        .count = size,
        .bytes_per_sample = bytes,
        .messages_per_sample = a->kind == APP_HALO3D ? faces : a->nsub,
        .times = max_step,
        .round = round,
        .extra = emit_extra,
        .extra_arg = extra,
    };
    fb_mpi_emit_result(ctx, &r);
}

int fb_app_main(const struct fb_mpi_kernel *k, int argc, char **argv)
{
    int kind = 0;
    while (kind < 2 && strcmp(NAMES[kind], k->name))
        kind++;
    if (kind == 2) {
        fprintf(stderr, "%s: app.c has no application proxy of this name\n", k->name);
        return 2;
    }
    struct app a = {.kind = (enum app_kind)kind, .o = {.dims = 3}};
    struct fb_own_opts own = {.scope = a.kind == APP_HALO3D ? FB_SC_HALO3D : FB_SC_FFT,
                              .set = set_own, .ctx = &a.o};
    struct fb_mpi_ctx ctx;
    int code = 0;
    if (fb_mpi_start(&ctx, k, FB_CLASS_COLLECTIVE, 2, &own, &argc, &argv, &code))
        return code;
    a.ctx = &ctx;
    setup(&a);
    const struct fb_opts *o = &ctx.opts;
    long nmax = 1;
    for (int s = 0; s < o->nsizes; s++)
        if (fb_opts_iterations(o, o->sizes[s]) > nmax)
            nmax = fb_opts_iterations(o, o->sizes[s]);
    double *buf = calloc(4 * (size_t)nmax, sizeof(double));
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", ctx.kernel);
        MPI_Abort(ctx.comm, 1);
    }
    for (long round = 0; round < o->rounds; round++)
        for (int s = 0; s < o->nsizes; s++)
            measure(&a, o->sizes[s], round, buf, buf + nmax, buf + 2 * nmax, buf + 3 * nmax);
    free(buf);
    if (a.kind == APP_HALO3D)
        MPI_Comm_free(&a.cart);
    for (int s = 0; s < a.nsub; s++) {
        MPI_Comm_free(&a.sub[s]);
        free(a.members[s]);
    }
    fb_buf_free(a.sbuf);
    fb_buf_free(a.rbuf);
    free(a.work);
    return fb_mpi_finish(&ctx);
}
