/* matrix.c - mpi.matrix: every ordered pair of ranks (one rank per host), 8-byte ping-pong
 * latency and windowed bandwidth, in N-1 rounds of a round-robin tournament.
 *
 * Round r pairs every rank with one partner (the circle method: rank M-1 stays, the others
 * turn; with an odd number of ranks a dummy M-1 gives one rank a bye), so N hosts take N-1
 * rounds, not N(N-1) jobs. Within a pair each direction is measured: the latency ping-pong
 * started by the source, then the source streaming windows to the destination.
 *
 *   --mode concurrent  every pair of a round at once (what the fabric sustains);
 *   --mode isolated    one pair at a time, the other ranks wait at a barrier (the retest);
 *   --pairs i:j,...    only these ordered pairs (rank numbers), e.g. the suspects;
 *   --lat-iterations N / --lat-warmup N   ping-pongs per direction (default 500 / 50).
 * The bandwidth side takes the common options: --sizes (one size), --window, --iterations,
 * --warmup.
 *
 * Rank 0 writes one `pair` record per measured direction, after each round (a job that dies
 * mid-matrix leaves the finished rounds on stdout): src/dst rank and host, the latency samples
 * (us, half round trip) and the bandwidth samples (us per window of window * size bytes).
 * Reporting travels after a barrier that closes the round, so it never shares a link with a
 * measurement.
 */
#include "matrix.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_mpi_common.h"
#include "fb_timer.h"

#define TAG_REPORT 203 /* the engine's own tags (fb_loop.h) are below */
#define LAT_SIZE 8

struct matrix {
    struct fb_mpi_ctx *ctx;
    bool isolated;
    long lat_iters, lat_warmup;
    bool *wanted;   /* nranks * nranks: wanted[src * n + dst]; NULL: every pair */
    const char *pairs_text; /* --pairs, parsed after MPI_Init (it needs the number of ranks) */
    size_t size;    /* bandwidth message size */
    long bw_iters, bw_warmup;
    int window;
    char *sbuf, *rbuf;
    struct fb_mpi_xfer mx; /* the loop engine's MPI hooks; its peer is set per pair */
    struct fb_xfer x;
    char *hosts;    /* nranks * MPI_MAX_PROCESSOR_NAME, on rank 0 */
    double *lat, *bw; /* this rank's samples, one direction */
};

static bool want(const struct matrix *m, int src, int dst)
{
    return !m->wanted || m->wanted[src * m->ctx->nranks + dst];
}

/* The partner of `rank` in round r of the circle method over M slots (M even); -1: a bye. */
static int partner(int rank, int r, int n)
{
    int slots = n % 2 ? n + 1 : n;
    int turn = slots - 1;
    int p;
    if (rank == turn)
        p = r;
    else if (rank == r)
        p = turn;
    else
        p = ((2 * r - rank) % turn + turn) % turn;
    return p >= n ? -1 : p;
}

static void failed(struct matrix *m)
{
    fprintf(stderr, "%s: a transfer failed\n", m->ctx->kernel);
    MPI_Abort(m->ctx->comm, 1);
}

/* Ping-pong from src; fills m->lat on src. */
static void latency(struct matrix *m, int me, int src, int dst)
{
    m->mx.peer = me == src ? dst : src;
    for (long i = 0; i < m->lat_warmup + m->lat_iters; i++) {
        double sample = 0;
        if (fb_pingpong(&m->x, me == src, m->sbuf, m->rbuf, LAT_SIZE, 1, &sample))
            failed(m);
        if (me == src && i >= m->lat_warmup)
            m->lat[i - m->lat_warmup] = sample;
    }
}

/* Windows from src to dst, 1-byte ack each; fills m->bw on src. */
static void bandwidth(struct matrix *m, int me, int src, int dst)
{
    m->mx.peer = me == src ? dst : src;
    long total = m->bw_warmup + m->bw_iters;
    for (long i = 0; i < total; i++) {
        double sample = 0;
        /* the receiver posts the next window's receives before its ack (fb_window) */
        char *next = me == dst && i + 1 < total &&
                             m->size >= m->ctx->opts.large_threshold ? m->rbuf : NULL;
        if (fb_window(&m->x, me == src, m->sbuf, m->rbuf, next, NULL, m->size, m->window,
                      &sample))
            failed(m);
        if (me == src && i >= m->bw_warmup)
            m->bw[i - m->bw_warmup] = sample;
    }
}

/* Between the phases every rank meets here. Where ranks share cores the others wait seconds
 * beside a pair across a slow link: patiently there (fb_mpi_patient_barrier), which may leave
 * a rank up to 2 ms late into a bandwidth phase, one whose warm-up windows take it up. */
static void phase_barrier(const struct matrix *m)
{
    if (m->ctx->shared_cores)
        fb_mpi_patient_barrier(m->ctx->comm);
    else
        MPI_Barrier(m->ctx->comm);
}

/* The pair {a, b} (a < b) of this round, by a or b: both wanted directions, lower rank's
 * first, latency before bandwidth. In concurrent mode every rank (a bye too) meets at a
 * barrier between these four phases, so no ping-pong shares a link or an uplink queue with
 * another pair's stream: latency is measured on a quiet fabric, bandwidth under the round's
 * full load. */
static void pair(struct matrix *m, int me, int a, int b, bool phased)
{
    int dirs[2][2] = {{a, b}, {b, a}};
    for (int d = 0; d < 2; d++) {
        int src = dirs[d][0], dst = dirs[d][1];
        bool mine = a >= 0 && (me == a || me == b) && want(m, src, dst);
        if (mine)
            latency(m, me, src, dst);
        if (phased)
            phase_barrier(m);
        if (mine)
            bandwidth(m, me, src, dst);
        if (phased)
            phase_barrier(m);
    }
}

static void emit(struct matrix *m, long round, int src, int dst, const double *lat,
                 const double *bw)
{
    struct fb_json *j = &m->ctx->json;
    const char *hs = m->hosts + (size_t)src * MPI_MAX_PROCESSOR_NAME;
    const char *hd = m->hosts + (size_t)dst * MPI_MAX_PROCESSOR_NAME;
    fb_json_begin(j, "pair");
    fb_json_str(j, "kernel", m->ctx->kernel);
    fb_json_int(j, "round", round);
    fb_json_str(j, "mode", m->isolated ? "isolated" : "concurrent");
    fb_json_int(j, "src", src);
    fb_json_int(j, "dst", dst);
    fb_json_str(j, "src_host", hs);
    fb_json_str(j, "dst_host", hd);
    fb_json_int(j, "latency_size", LAT_SIZE);
    fb_json_double_array(j, "latency_us", lat, (size_t)m->lat_iters, 4);
    fb_json_uint(j, "size", m->size);
    fb_json_int(j, "window", m->window);
    fb_json_double(j, "bytes_per_sample", (double)m->size * m->window, 0);
    fb_json_double_array(j, "bandwidth_us", bw, (size_t)m->bw_iters, 4);
    if (fb_json_end(j, stdout) != 0) {
        fprintf(stderr, "%s: cannot write pair record\n", m->ctx->kernel);
        MPI_Abort(m->ctx->comm, 1);
    }
}

/* After the round's closing barrier: every source sends its samples to rank 0, which writes
 * them in a fixed order (source rank, then destination). */
static void report_round(struct matrix *m, long round, int me, int n)
{
    size_t nl = (size_t)m->lat_iters, nb = (size_t)m->bw_iters;
    double *buf = malloc((nl + nb) * sizeof(double));
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", m->ctx->kernel);
        MPI_Abort(m->ctx->comm, 1);
    }
    for (int src = 0; src < n; src++) {
        int dst = partner(src, (int)round, n);
        if (dst < 0 || !want(m, src, dst))
            continue;
        if (me == src && me != 0) {
            memcpy(buf, m->lat, nl * sizeof(double));
            memcpy(buf + nl, m->bw, nb * sizeof(double));
            MPI_Send(buf, (int)(nl + nb), MPI_DOUBLE, 0, TAG_REPORT, m->ctx->comm);
        } else if (me == 0) {
            if (src == 0) {
                memcpy(buf, m->lat, nl * sizeof(double));
                memcpy(buf + nl, m->bw, nb * sizeof(double));
            } else {
                MPI_Recv(buf, (int)(nl + nb), MPI_DOUBLE, src, TAG_REPORT, m->ctx->comm,
                         MPI_STATUS_IGNORE);
            }
            emit(m, round, src, dst, buf, buf + nl);
        }
    }
    free(buf);
}

/* This kernel's own options (rows of the option table in fb_opts.c, checked there). */
static int set_own(void *ctx, enum fb_opt_id id, const struct fb_optval *v, char *why, size_t len)
{
    struct matrix *m = ctx;
    (void)why, (void)len;
    switch (id) {
    case FB_O_MODE: m->isolated = v->l == 1; break;
    case FB_O_PAIRS: m->pairs_text = v->text; break;
    case FB_O_LAT_ITERATIONS: m->lat_iters = v->l; break;
    case FB_O_LAT_WARMUP: m->lat_warmup = v->l; break;
    default: break;
    }
    return 0;
}

/* --pairs "i:j,k:l" into m->wanted; 0, or -1 with a message (rank 0). */
static int parse_pairs(struct matrix *m, const char *text, int n)
{
    m->wanted = calloc((size_t)n * (size_t)n, sizeof(bool));
    if (!m->wanted)
        return -1;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        long i = strtol(p, &end, 10);
        if (end == p || *end != ':')
            return -1;
        p = end + 1;
        long j = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return -1;
        if (i < 0 || j < 0 || i >= n || j >= n || i == j)
            return -1;
        m->wanted[i * n + j] = true;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int fb_matrix_main(const struct fb_mpi_kernel *k, int argc, char **argv)
{
    struct matrix m = {.lat_iters = 500, .lat_warmup = 50};
    struct fb_own_opts own = {.scope = FB_SC_MATRIX, .set = set_own, .ctx = &m};
    int code = 0;
    struct fb_mpi_ctx ctx;
    if (fb_mpi_start(&ctx, k, FB_CLASS_BANDWIDTH, 2, &own, &argc, &argv, &code))
        return code;
    m.ctx = &ctx;
    const struct fb_opts *o = &ctx.opts;
    if (o->nsizes != 1)
        fb_mpi_usage_exit(&ctx, "--sizes: one bandwidth size (e.g. --sizes 1M)");
    m.size = o->sizes[0];
    if (m.size < 1)
        fb_mpi_usage_exit(&ctx, "--sizes: the bandwidth size must be at least 1 byte");
    m.bw_iters = fb_opts_iterations(o, m.size);
    m.bw_warmup = fb_opts_warmup(o, m.size);
    m.window = o->window;
    int n = ctx.nranks, me = ctx.rank;
    if (m.pairs_text && parse_pairs(&m, m.pairs_text, n))
        fb_mpi_usage_exit(&ctx, "--pairs wants i:j,... with distinct ranks below the number "
                                "of ranks");

    size_t buf_len = m.size > LAT_SIZE ? m.size : LAT_SIZE;
    m.sbuf = fb_mpi_buf_alloc(buf_len, o->hugepages);
    m.rbuf = fb_mpi_buf_alloc(buf_len, o->hugepages);
    int xrc = fb_mpi_xfer_init(&m.mx, &m.x, ctx.comm, 0, m.window + 1);
    m.mx.patient = ctx.shared_cores; /* a window across a slow link takes seconds */
    m.lat = calloc((size_t)m.lat_iters, sizeof(double));
    m.bw = calloc((size_t)m.bw_iters, sizeof(double));
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0, sizeof(name));
    int len = 0;
    MPI_Get_processor_name(name, &len);
    if (me == 0)
        m.hosts = calloc((size_t)n, MPI_MAX_PROCESSOR_NAME);
    if (!m.sbuf || !m.rbuf || xrc || !m.lat || !m.bw || (me == 0 && !m.hosts)) {
        fprintf(stderr, "%s: out of memory\n", ctx.kernel);
        MPI_Abort(ctx.comm, 1);
    }
    memset(m.sbuf, 0x5a, buf_len);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, m.hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, ctx.comm);

    for (int r = 0; r < (n % 2 ? n : n - 1); r++) {
        /* Every rank knows the schedule and the list: a round without a wanted pair is skipped
         * by all of them alike. */
        bool any = false;
        for (int a = 0; a < n && !any; a++) {
            int b = partner(a, r, n);
            any = b >= 0 && want(&m, a, b);
        }
        if (!any)
            continue;
        int peer = partner(me, r, n);
        phase_barrier(&m);
        if (m.isolated) {
            for (int a = 0; a < n; a++) {
                int b = partner(a, r, n);
                if (b < a || (!want(&m, a, b) && !want(&m, b, a)))
                    continue;
                if (me == a || me == b)
                    pair(&m, me, a, b, false);
                /* the ranks outside the pair wait asleep, not spinning beside it */
                fb_mpi_parked_barrier(ctx.comm);
            }
        } else {
            /* a bye (peer -1) joins the phases' barriers */
            pair(&m, me, peer < 0 ? -1 : (me < peer ? me : peer), me < peer ? peer : me, true);
        }
        /* Each rank is the source of one direction per round (me -> peer) and only a source
         * writes samples, so m->lat and m->bw still hold that direction's here. */
        phase_barrier(&m);
        report_round(&m, r, me, n);
    }

    fb_mpi_buf_free(m.sbuf);
    fb_mpi_buf_free(m.rbuf);
    fb_mpi_xfer_free(&m.mx);
    free(m.lat);
    free(m.bw);
    free(m.hosts);
    free(m.wanted);
    return fb_mpi_finish(&ctx);
}
