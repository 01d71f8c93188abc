/* sched_getaffinity and the CPU_* macros are GNU extensions (the ranks' bindings, below). */
#define _GNU_SOURCE
#include "fb_mpi_common.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fb_pattern.h"
#include "fb_timer.h"

#ifndef FB_MPI_FLAVOUR
#define FB_MPI_FLAVOUR "mpi"
#endif

/* Before MPI_Init the rank is only known from the launcher's environment; used so that a bad
 * option is reported once, not once per rank. */
static bool launcher_says_not_rank0(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strcmp(v, "0") != 0;
    }
    return false;
}

static void trim_right(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* What the two clock reads around every sample add to it: the median of back-to-back pairs
 * (the first read's return and the second's entry are the part inside a sample). */
static double timer_overhead_us(void)
{
    return fb_timer_overhead_us(1001);
}

enum { CPUS_LEN = 256 };

/* The CPUs this rank may run on as a kernel CPU list ("0-3,8"), "?" when it does not fit or
 * cannot be read: with hwloc's NIC locality it tells a rank bound far from the NIC from one
 * near it (fabench matrix advise, docs/matrix.md). */
static void affinity_list(char *out, size_t cap)
{
    cpu_set_t set;
    snprintf(out, cap, "?");
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        int w = e > c ? snprintf(out + used, cap - used, "%s%d-%d", used ? "," : "", c, e)
                      : snprintf(out + used, cap - used, "%s%d", used ? "," : "", c);
        if (w < 0 || (size_t)w >= cap - used) { /* a cut list would name wrong CPUs */
            snprintf(out, cap, "?");
            return;
        }
        used += (size_t)w;
        c = e;
    }
}

static void emit_meta(struct fb_mpi_ctx *ctx)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    int len = 0;
    memset(name, 0, sizeof(name));
    MPI_Get_processor_name(name, &len);
    char cpus[CPUS_LEN];
    memset(cpus, 0, sizeof(cpus));
    affinity_list(cpus, sizeof(cpus));

    char *all = NULL;
    char *all_cpus = NULL;
    if (ctx->rank == 0) {
        all = calloc((size_t)ctx->nranks, sizeof(name));
        all_cpus = calloc((size_t)ctx->nranks, CPUS_LEN);
        if (!all || !all_cpus) {
            fprintf(stderr, "%s: out of memory\n", ctx->kernel);
            MPI_Abort(ctx->comm, 1);
        }
    }
    MPI_Gather(name, (int)sizeof(name), MPI_CHAR, all, (int)sizeof(name), MPI_CHAR, 0, ctx->comm);
    MPI_Gather(cpus, CPUS_LEN, MPI_CHAR, all_cpus, CPUS_LEN, MPI_CHAR, 0, ctx->comm);
    if (ctx->rank != 0)
        return;

    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    memset(lib, 0, sizeof(lib));
    MPI_Get_library_version(lib, &len);
    trim_right(lib);
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    char version[32];
    snprintf(version, sizeof(version), "%d.%d", major, minor);

    const char **hosts = malloc(sizeof(*hosts) * (size_t)ctx->nranks);
    const char **bound = malloc(sizeof(*bound) * (size_t)ctx->nranks);
    if (!hosts || !bound) {
        fprintf(stderr, "%s: out of memory\n", ctx->kernel);
        MPI_Abort(ctx->comm, 1);
    }
    for (int r = 0; r < ctx->nranks; r++) {
        hosts[r] = all + (size_t)r * sizeof(name);
        bound[r] = all_cpus + (size_t)r * CPUS_LEN;
    }

    struct fb_json *j = &ctx->json;
    fb_json_begin(j, "meta");
    fb_json_str(j, "kernel", ctx->kernel);
    fb_json_int(j, "ranks", ctx->nranks);
    fb_json_str(j, "library", lib);
    fb_json_str(j, "mpi_version", version);
    fb_json_str(j, "flavour", FB_MPI_FLAVOUR);
    fb_json_str_array(j, "hosts", hosts, (size_t)ctx->nranks);
    fb_json_str_array(j, "cpus", bound, (size_t)ctx->nranks);
    fb_json_int(j, "window", ctx->opts.window);
    fb_json_bool(j, "validate", ctx->opts.validate);
    fb_json_str(j, "timer", FB_TIMER_NAME);
    fb_json_double(j, "timer_overhead_us", timer_overhead_us(), 4);
    fb_json_end(j, stdout);
    free(hosts);
    free(bound);
    free(all);
    free(all_cpus);
}

int fb_mpi_start(struct fb_mpi_ctx *ctx, const struct fb_mpi_kernel *k, enum fb_kernel_class cls,
                 int min_ranks, const struct fb_own_opts *own, int *argc, char ***argv,
                 int *exit_code)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->kernel = k->name;
    bool even_ranks = strcmp(k->ranks, "even") == 0;

    struct fb_defaults d = fb_defaults_for(cls);
    d.sizes = k->sizes;
    const char *prog = k->name; /* messages name the kernel, as its records do */
    bool quiet = launcher_says_not_rank0();
    unsigned scope = cls == FB_CLASS_COLLECTIVE ? FB_SC_COLL : 0;
    switch (fb_opts_parse_own(&ctx->opts, &d, prog, scope, own, *argc, *argv,
                              quiet ? NULL : stdout, quiet ? NULL : stderr)) {
    case FB_OPTS_OK:
        break;
    case FB_OPTS_HELP:
        *exit_code = 0;
        return -1;
    case FB_OPTS_ERROR:
        *exit_code = 2;
        return -1;
    }

    MPI_Init(argc, argv);
    /* Not before MPI_Init: under SimGrid the clock reads the host's monotonic clock until then
     * and the simulated one after, which made elapsed_s negative. */
    ctx->t_start_us = fb_now_us();
    ctx->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(ctx->comm, &ctx->rank);
    MPI_Comm_size(ctx->comm, &ctx->nranks);
    const char *corrupt = getenv("FABENCH_CORRUPT");
    ctx->corrupt = corrupt && strcmp(corrupt, "1") == 0;
    const char *shared = getenv("FABENCH_SHARED_CORES");
    ctx->shared_cores = shared && strcmp(shared, "1") == 0;

    if (ctx->nranks < min_ranks) {
        char msg[128];
        snprintf(msg, sizeof(msg), "needs at least %d ranks, got %d", min_ranks, ctx->nranks);
        fb_mpi_usage_exit(ctx, msg);
    }
    if (ctx->opts.osu_iterations < 0 && fb_mpi_global_clock())
        ctx->opts.osu_iterations = 0; /* a simulator's wall time is the cost: opt in */
    if (ctx->opts.warmup_sync == FB_WARMUP_CLOCK && !fb_mpi_global_clock())
        fb_mpi_usage_exit(ctx, "--warmup-sync clock needs a clock every rank shares (a "
                               "simulator build); real ranks' clocks are not synchronised");
    if (even_ranks && ctx->nranks % 2)
        fb_mpi_usage_exit(ctx, "needs an even number of ranks (rank i pairs with i + n/2)");
    for (int i = 0; i < ctx->opts.nsizes; i++)
        if (ctx->opts.sizes[i] > (size_t)INT_MAX / (size_t)ctx->nranks)
            fb_mpi_usage_exit(ctx, "message sizes must stay below INT_MAX / ranks bytes");
    emit_meta(ctx);
    return 0;
}

void fb_mpi_usage_exit(struct fb_mpi_ctx *ctx, const char *msg)
{
    if (ctx->rank == 0)
        fprintf(stderr, "%s: %s\n", ctx->kernel, msg);
    fb_opts_free(&ctx->opts);
    fb_json_free(&ctx->json);
    MPI_Finalize();
    exit(2);
}

void fb_mpi_parked_barrier(MPI_Comm comm)
{
    if (fb_mpi_global_clock()) { /* a simulator: no core to leave free, naps cost events */
        MPI_Barrier(comm);
        return;
    }
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(comm, &req);
    long ns = FB_PARK_NS;
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
         MPI_Test(&req, &done, MPI_STATUS_IGNORE)) {
        const struct timespec nap = {0, ns};
        nanosleep(&nap, NULL);
        ns = ns * 2 > FB_PARK_MAX_NS ? FB_PARK_MAX_NS : ns * 2;
    }
}

int fb_mpi_patient_waitall(int n, MPI_Request *reqs, MPI_Status *stats, long max_nap_ns)
{
    if (fb_mpi_global_clock() || max_nap_ns < FB_PATIENT_MIN_NAP_NS)
        return MPI_Waitall(n, reqs, stats);
    double t0 = fb_now_us();
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, reqs, &done, stats);
        if (rc != MPI_SUCCESS || done)
            return rc;
        double waited_us = fb_now_us() - t0;
        if (waited_us < FB_PATIENT_AFTER_US)
            continue;
        double ns = waited_us * 1e3 / FB_PATIENT_SHARE;
        const struct timespec nap = {0, ns > (double)max_nap_ns ? max_nap_ns : (long)ns};
        nanosleep(&nap, NULL);
    }
}

void fb_mpi_patient_barrier(MPI_Comm comm)
{
    MPI_Request req;
    MPI_Status st;
    MPI_Ibarrier(comm, &req);
    fb_mpi_patient_waitall(1, &req, &st, FB_PARK_MAX_NS);
}

int fb_mpi_finish(struct fb_mpi_ctx *ctx)
{
    /* ranks that took no part (mpi.latency --ranks 4: ranks 2..) wait here all run long */
    fb_mpi_parked_barrier(ctx->comm);
    if (ctx->rank == 0) {
        fb_json_begin(&ctx->json, "end");
        fb_json_str(&ctx->json, "kernel", ctx->kernel);
        fb_json_double(&ctx->json, "elapsed_s", (fb_now_us() - ctx->t_start_us) * 1e-6, 6);
        fb_json_end(&ctx->json, stdout);
    }
    fb_opts_free(&ctx->opts);
    fb_json_free(&ctx->json);
    MPI_Finalize();
    return 0;
}

void fb_mpi_emit_result(struct fb_mpi_ctx *ctx, const struct fb_mpi_result *r)
{
    if (ctx->rank != 0)
        return;
    struct fb_json *j = &ctx->json;
    size_t n = (size_t)r->iterations;
    struct fb_result_head h = {
        .kernel = ctx->kernel, .size = r->size, .iterations = r->iterations,
        .warmup = r->warmup, .warmup_used = r->warmup_used, .settled = r->settled,
        .datatype = r->datatype, .count = r->count,
        .bytes_per_sample = r->bytes_per_sample, .messages_per_sample = r->messages_per_sample,
        .round = r->round, .iterations_cap = r->iterations_cap, .stop_reached = r->stop_reached,
    };
    fb_result_begin(j, &ctx->opts, &h);
    if (r->osu_iterations > 0) {
        fb_json_double(j, "osu_avg", r->osu_avg, 4);
        fb_json_int(j, "osu_iterations", r->osu_iterations);
    }
    if (r->extra)
        r->extra(j, r->extra_arg);
    fb_json_double_array(j, "times", r->times, n, 4);
    if (r->times_min)
        fb_json_double_array(j, "times_min", r->times_min, n, 4);
    if (r->times_mean)
        fb_json_double_array(j, "times_mean", r->times_mean, n, 4);
    if (fb_json_end(j, stdout) != 0) {
        fprintf(stderr, "%s: cannot write result record\n", ctx->kernel);
        MPI_Abort(ctx->comm, 1);
    }
}

static void json_number(struct fb_json *j, const char *key, double v)
{
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
        fb_json_int(j, key, (long long)v);
    else
        fb_json_double(j, key, v, 9);
}

void fb_mpi_validation_failed(struct fb_mpi_ctx *ctx, size_t size, long iteration,
                              long long offset, double expected, double got)
{
    struct fb_json *j = &ctx->json;
    fb_json_begin(j, "error");
    fb_json_str(j, "kernel", ctx->kernel);
    fb_json_uint(j, "size", size);
    fb_json_int(j, "iteration", iteration);
    fb_json_int(j, "rank", ctx->rank);
    fb_json_int(j, "offset", offset);
    json_number(j, "expected", expected);
    json_number(j, "got", got);
    fb_json_end(j, stdout);
    fprintf(stderr,
            "%s: validation failed on rank %d: size %zu iteration %ld offset %lld: expected %g, "
            "got %g\n",
            ctx->kernel, ctx->rank, size, iteration, offset, expected, got);
    fflush(stdout);
    fflush(stderr);
    /* MPI_Abort tears the job down at once; under load the launcher (MPICH's hydra proxy
     * seen in CI) had not yet forwarded the error record from the pipe, and the run lost the
     * one line that says what was wrong. A short pause lets it drain; only failing runs pay. */
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    MPI_Abort(ctx->comm, 3);
}

void fb_mpi_check_bytes(struct fb_mpi_ctx *ctx, const void *buf, size_t len, uint64_t off0,
                        size_t size, long iter, int sender, size_t report_base)
{
    uint8_t want = 0, got = 0;
    long long bad = fb_pattern_check(buf, len, off0, size, iter, sender, &want, &got);
    if (bad >= 0)
        fb_mpi_validation_failed(ctx, size, iter, (long long)report_base + bad, want, got);
}

void fb_mpi_maybe_corrupt(struct fb_mpi_ctx *ctx, void *buf, size_t len, bool designated)
{
    if (!ctx->corrupt || ctx->corrupted || !designated || len == 0)
        return;
    ((unsigned char *)buf)[len / 2] ^= 0xFF;
    ctx->corrupted = true;
    fprintf(stderr, "%s: FABENCH_CORRUPT=1: rank %d flipped received byte %zu\n", ctx->kernel,
            ctx->rank, len / 2);
}

void fb_mpi_reduce_max(MPI_Comm comm, const double *local, size_t n, double *out_max)
{
    if (n)
        MPI_Reduce(local, out_max, (int)n, MPI_DOUBLE, MPI_MAX, 0, comm);
}

/* Point-to-point tags of the kernel's own bookkeeping (no MPI collective involved). */
#define TIMES_TAG 31000
#define START_TAG 31001

/* (max, min, sum) triples of b[0..n) folded into a[0..n). */
static void combine_times(double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < 3 * n; i += 3) {
        a[i] = b[i] > a[i] ? b[i] : a[i];
        a[i + 1] = b[i + 1] < a[i + 1] ? b[i + 1] : a[i + 1];
        a[i + 2] += b[i + 2];
    }
}

/* Binomial tree to rank 0: each rank folds its children's triples into buf (3 n doubles),
 * then sends to its parent. tmp holds one child's triples. n = 0 is a bare fan-in. */
static void tree_to_root(MPI_Comm comm, int rank, int nranks, double *buf, double *tmp, size_t n,
                         int tag)
{
    for (int mask = 1; mask < nranks; mask <<= 1) {
        if (rank & mask) {
            MPI_Send(buf, (int)(3 * n), MPI_DOUBLE, rank - mask, tag, comm);
            return;
        }
        if (rank + mask < nranks) {
            MPI_Recv(tmp, (int)(3 * n), MPI_DOUBLE, rank + mask, tag, comm, MPI_STATUS_IGNORE);
            combine_times(buf, tmp, n);
        }
    }
}

/* Max, min and mean in one pass over a tree of point-to-point messages, not three MPI_Reduce
 * calls: at thousands of simulated ranks each reduction after a size costs about as much wall
 * time as the collective itself, and the messages stay off the algorithm pinned for a measured
 * MPI_Reduce (SimGrid's Rabenseifner reduce aborts on a user-defined operation over a
 * derived type, the one-call alternative). */
void fb_mpi_reduce_times(MPI_Comm comm, const double *local, size_t n, double *out_max,
                         double *out_min, double *out_mean)
{
    int nranks = 1, rank = 0;
    MPI_Comm_size(comm, &nranks);
    MPI_Comm_rank(comm, &rank);
    if (n == 0)
        return;
    double *buf = malloc(3 * n * sizeof(double));
    double *tmp = malloc(3 * n * sizeof(double));
    if (!buf || !tmp) {
        fprintf(stderr, "fabench: out of memory reducing times\n");
        MPI_Abort(comm, 1);
    }
    for (size_t i = 0; i < n; i++)
        buf[3 * i] = buf[3 * i + 1] = buf[3 * i + 2] = local[i];
    tree_to_root(comm, rank, nranks, buf, tmp, n, TIMES_TAG);
    if (rank == 0)
        for (size_t i = 0; i < n; i++) {
            out_max[i] = buf[3 * i];
            out_min[i] = buf[3 * i + 1];
            out_mean[i] = buf[3 * i + 2] / nranks;
        }
    free(buf);
    free(tmp);
}

bool fb_mpi_global_clock(void)
{
#ifdef SMPI_SHARED_MALLOC /* built with SimGrid's smpicc: one simulated clock for all ranks */
    return true;
#else
    return false;
#endif
}

/* Simulated time a start is set ahead: more than a fan-out of 8-byte messages takes on any
 * modelled fabric (log2 P hops of tens of us at most), and free: the simulator skips idle time. */
#define START_MARGIN_US 10000.0

static void fan_out(MPI_Comm comm, int rank, int n, double *start_us)
{
    int low = rank & -rank; /* rank's subtree spans [rank, rank + low) */
    if (rank == 0)
        for (low = 1; low < n; low <<= 1)
            ;
    else
        MPI_Recv(start_us, 1, MPI_DOUBLE, rank - low, START_TAG + 1, comm, MPI_STATUS_IGNORE);
    for (int m = low >> 1; m >= 1; m >>= 1)
        if (rank + m < n)
            MPI_Send(start_us, 1, MPI_DOUBLE, rank + m, START_TAG + 1, comm);
}

void fb_mpi_start_together(struct fb_mpi_ctx *ctx)
{
    double start_us = 0;
    tree_to_root(ctx->comm, ctx->rank, ctx->nranks, NULL, NULL, 0, START_TAG);
    if (ctx->rank == 0)
        start_us = fb_now_us() + START_MARGIN_US;
    fan_out(ctx->comm, ctx->rank, ctx->nranks, &start_us);
    double now = fb_now_us();
    if (now > start_us) {
        fprintf(stderr, "%s: rank %d got the start time %.3f us late (margin %.0f us)\n",
                ctx->kernel, ctx->rank, now - start_us, START_MARGIN_US);
        MPI_Abort(ctx->comm, 1);
    }
    long long ns = llround((start_us - now) * 1e3);
    struct timespec wait = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
    nanosleep(&wait, NULL); /* simulated time under SimGrid */
}

static int xfer_post(struct fb_mpi_xfer *m, void *buf, size_t len, int tag, bool send)
{
    if (m->n == m->cap)
        return -1;
    m->ops[m->n++] = (struct fb_mpi_op){buf, (int)len, tag, send};
    return 0;
}

static int xfer_post_recv(void *c, void *buf, size_t len, int tag)
{
    return xfer_post(c, buf, len, tag, false);
}

static int xfer_post_send(void *c, void *buf, size_t len, int tag)
{
    return xfer_post(c, buf, len, tag, true);
}

/* Operations [started, n) as MPI_Isend / MPI_Irecv, in the order posted. */
static void xfer_issue(struct fb_mpi_xfer *m)
{
    for (int k = m->started; k < m->n; k++) {
        struct fb_mpi_op *o = &m->ops[k];
        if (o->send)
            MPI_Isend(o->buf, o->len, MPI_CHAR, m->peer, o->tag, m->comm, &m->reqs[k]);
        else
            MPI_Irecv(o->buf, o->len, MPI_CHAR, m->peer, o->tag, m->comm, &m->reqs[k]);
    }
    m->started = m->n;
}

static int xfer_start(void *c)
{
    xfer_issue(c);
    return 0;
}

/* The longest nap a patient window may take (fb_mpi_patient_waitall): as long as the link
 * takes to carry FB_PATIENT_NAP_BYTES at the rate of this peer's last window; 0 (no naps)
 * before one was timed. */
static long window_nap_ns(const struct fb_mpi_xfer *m)
{
    if (m->rate_peer != m->peer || m->bytes_per_us <= 0)
        return 0;
    double ns = FB_PATIENT_NAP_BYTES / m->bytes_per_us * 1e3;
    return ns > (double)FB_PARK_MAX_NS ? FB_PARK_MAX_NS : (long)ns;
}

static int xfer_wait(void *c)
{
    struct fb_mpi_xfer *m = c;
    int rc = MPI_SUCCESS;
    if (m->n == 1 && m->started == 0 && m->patient && !m->ops[0].send &&
        m->ops[0].len <= FB_PATIENT_SMALL) {
        xfer_issue(m);
        rc = fb_mpi_patient_waitall(1, m->reqs, m->stats, FB_PATIENT_ACK_NAP_NS);
    } else if (m->n == 1 && m->started == 0) {
        struct fb_mpi_op *o = &m->ops[0];
        rc = o->send ? MPI_Send(o->buf, o->len, MPI_CHAR, m->peer, o->tag, m->comm)
                     : MPI_Recv(o->buf, o->len, MPI_CHAR, m->peer, o->tag, m->comm,
                                MPI_STATUS_IGNORE);
    } else if (m->n > 0 && m->patient) {
        xfer_issue(m);
        double t0 = fb_now_us(), bytes = 0;
        for (int k = 0; k < m->n; k++)
            bytes += m->ops[k].len;
        rc = fb_mpi_patient_waitall(m->n, m->reqs, m->stats, window_nap_ns(m));
        /* from this call on, not from the posting: receives posted ahead may have been
         * partly filled already, so the rate comes out high and the naps short */
        m->bytes_per_us = bytes / fmax(fb_now_us() - t0, 1e-3);
        m->rate_peer = m->peer;
    } else if (m->n > 0) {
        xfer_issue(m);
        rc = MPI_Waitall(m->n, m->reqs, m->stats);
    }
    m->n = m->started = 0;
    return rc == MPI_SUCCESS ? 0 : -1;
}

int fb_mpi_xfer_init(struct fb_mpi_xfer *m, struct fb_xfer *x, MPI_Comm comm, int peer, int cap)
{
    *m = (struct fb_mpi_xfer){.comm = comm, .peer = peer, .cap = cap, .rate_peer = -1};
    m->ops = malloc(sizeof(*m->ops) * (size_t)cap);
    m->reqs = malloc(sizeof(*m->reqs) * (size_t)cap);
    m->stats = malloc(sizeof(*m->stats) * (size_t)cap);
    *x = (struct fb_xfer){.post_recv = xfer_post_recv, .post_send = xfer_post_send,
                          .start = xfer_start, .wait = xfer_wait, .c = m, .prepost = false};
    return m->ops && m->reqs && m->stats ? 0 : -1;
}

void fb_mpi_xfer_free(struct fb_mpi_xfer *m)
{
    free(m->ops);
    free(m->reqs);
    free(m->stats);
    m->ops = NULL, m->reqs = NULL, m->stats = NULL;
}
