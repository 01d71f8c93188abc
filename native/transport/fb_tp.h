/* fb_tp.h - the engine every transport kernel (tcp, udp, ucx, ofi, verbs) runs on.
 *
 * A family file fills one struct fb_tp_kernel per kernel (its own hooks: set-up, one
 * iteration, --validate's fill and check, its extra record fields; chosen once at start, as
 * iperf3 picks a protocol's function table, so no timed loop looks at a kernel's name) and
 * ends with FB_TP_MAIN; the engine owns options, the bootstrap, warm-up, count- or
 * duration-based loops, CPU accounting of both sides and the JSON records
 * (docs/kernel-protocol.md). Index 0 (client) times and reports; index 1 (server) serves.
 */
#ifndef FB_TP_H
#define FB_TP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fb_boot.h"
#include "fb_json.h"
#include "fb_opts.h"

enum fb_family {
    FB_FAM_TCP = 1 << 0,
    FB_FAM_UDP = 1 << 1,
    FB_FAM_UCX = 1 << 2,
    FB_FAM_OFI = 1 << 3,
    FB_FAM_VERBS = 1 << 4,
};

struct fb_tp_cfg {
    bool server;
    const char *peer, *bind;
    int port;
    double connect_timeout_s;
    int cpu[2]; /* per index; -1: not pinned */
    double duration_s;
    double interval_s, omit_s; /* time mode */
    bool interval_set, omit_set;
    bool poll; /* tcp.latency: receive by non-blocking reads in a spin */
    int displacement_dt; /* udp.reorder: RFC 5236's displacement threshold */
    int streams;
    bool nodelay, quickack, zerocopy;
    long sndbuf, rcvbuf;
    const char *pattern; /* tcp.latency: "pingpong" or "wwr" */
    double udp_timeout_ms;
    const char *device;
    const char *op; /* verbs: "send" or "write" */
    const char *tls, *net_devices; /* UCX: set through ucp_config_modify */
    const char *provider;          /* libfabric: hints->fabric_attr->prov_name */
    const char *endpoint;          /* libfabric: "rdm" or "msg" */
};

/* What one side measured over the timed part of one size; the server's goes to the client. */
#define FB_TP_COUNTERS 8
struct fb_tp_side {
    double user_s, sys_s, wall_s;
    double max_rss_mib; /* this image's peak resident set so far (VmHWM): its buffers' footprint */
    double retrans;
    double c[FB_TP_COUNTERS]; /* family-specific counters (UDP receive counts, ...) */
};

struct fb_tp;

/* Time mode (a kernel with run_for, unless --iterations is given): stream for omit_s, then
 * for duration_s, sampling every interval_s. The kernel returns n samples in times[] (malloc'ed,
 * the engine frees), each an interval's time scaled to t->bytes_per_sample (which the kernel
 * sets), so that bytes_per_sample / times[i] is interval i's rate. */
struct fb_tp_timed {
    double omit_s, duration_s, interval_s;
    double *times;
    long n;
};

struct fb_tp_kernel {
    const char *name; /* "tcp.latency" */
    enum fb_family family;
    unsigned opts;    /* its own options: FB_OPT_* bits of enum fb_scope (fb_opts.h) */
    enum fb_kernel_class cls;
    size_t size_floor, size_ceil; /* hard limits (0: none); the default sweep is the
                                     kernel's line in native/kernels.list */
    const char *help;            /* extra --help lines */

    /* Before the bootstrap (no peer yet): e.g. "is there an RDMA device". May call
     * fb_tp_skip, so a side that cannot run says so without waiting for its peer. */
    int (*precheck)(struct fb_tp *t);
    /* Open the data path (after the bootstrap). May call fb_tp_skip. 0 or -1. */
    int (*setup)(struct fb_tp *t);
    /* Extra meta fields (client only, after setup). */
    void (*meta)(struct fb_tp *t, struct fb_json *j);
    /* Before warm-up of each size: buffers, counters; set t->bytes_per_sample,
     * t->messages_per_sample and t->bytes_per_iteration (both directions, for CPU per GB). */
    int (*begin_size)(struct fb_tp *t, size_t size);
    /* One iteration; the client stores its sample (us) in *sample. 0 or -1. */
    int (*iterate)(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
    /* --validate, kept out of every timed region: `fill` what this side sends in iteration
     * `iter` before it, `check` what it received after it. The engine puts a barrier with the
     * peer between the fill and the iteration, so neither side's fill or check runs inside
     * the other side's timed region. NULL: nothing to fill or check on either side. */
    void (*fill)(struct fb_tp *t, size_t size, long iter);
    void (*check)(struct fb_tp *t, size_t size, long iter);
    /* The time mode's whole measurement of one size (after begin_size and a barrier); fills
     * *tm and this side's CPU and wall time over the part after the omitted start. */
    int (*run_for)(struct fb_tp *t, size_t size, struct fb_tp_timed *tm, struct fb_tp_side *me);
    /* That barrier, where a plain one could hang (udp.latency: the server still echoes a
     * ping sent again after a lost reply). NULL: the bootstrap's barrier. */
    int (*sync)(struct fb_tp *t, size_t size);
    /* After the timed part: fill family counters of this side. */
    void (*end_size)(struct fb_tp *t, size_t size, struct fb_tp_side *me);
    /* Extra result fields (client), given both sides' figures. */
    void (*result)(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                   const struct fb_tp_side *client, const struct fb_tp_side *server);
    void (*teardown)(struct fb_tp *t);
};

struct fb_tp {
    const struct fb_tp_kernel *k;
    const char *default_sizes;
    struct fb_opts opts;
    struct fb_tp_cfg cfg;
    struct fb_boot boot;
    int index; /* 0 client, 1 server */
    bool booted;
    bool time_mode; /* run_for measures (see struct fb_tp_timed) */
    struct fb_json json;
    double t_start_us;
    char host[2][256];
    /* The index one past the last iteration of the loop now running (warm-up, then timed),
     * so an iteration knows whether another follows (ucx.bw's receiver posts the next
     * window's receives ahead only then). */
    long iter_end;
    /* Set by begin_size. */
    double bytes_per_sample, messages_per_sample, bytes_per_iteration;
    /* Extra per-sample series the kernel may fill (e.g. per-stream times), n per timed
     * iteration, written by result(). */
    bool corrupt, corrupted;
    void *priv; /* the family's state: allocated by its setup hook, freed by its teardown */
};

/* The whole kernel: parse, bootstrap, set up, loop over sizes, records, exit code. `sizes` is
 * the default --sizes (from native/kernels.list). */
int fb_tp_main(const struct fb_tp_kernel *k, const char *sizes, int argc, char **argv);

/* A family file's main: the entry of KERNELS named by the build (FB_KERNEL, with its line's
 * FB_KERNEL_SIZES), found once before anything runs. */
#define FB_TP_MAIN(KERNELS)                                                                     \
    int main(int argc, char **argv)                                                             \
    {                                                                                           \
        for (size_t i = 0; i < sizeof(KERNELS) / sizeof(KERNELS[0]); i++)                       \
            if (!strcmp(KERNELS[i].name, FB_KERNEL))                                            \
                return fb_tp_main(&KERNELS[i], FB_KERNEL_SIZES, argc, argv);                    \
        fprintf(stderr, "%s: no entry in %s's KERNELS\n", FB_KERNEL, __FILE__);                \
        return 2;                                                                               \
    }

/* Print a skip record (client and server alike) and exit 77. */
void fb_tp_skip(struct fb_tp *t, const char *reason);

/* Exchange a small blob with the peer through the bootstrap; exits on failure. */
void fb_tp_exchange(struct fb_tp *t, const void *in, size_t len, void *out, size_t cap,
                    size_t *got);

/* --validate: fill a message this side sends; check one received from the peer (offset off0
 * of the peer's message); on a mismatch an error record, a message, exit 3. */
void fb_tp_fill(struct fb_tp *t, void *buf, size_t len, uint64_t off0, size_t size, long iter);
void fb_tp_check(struct fb_tp *t, void *buf, size_t len, uint64_t off0, size_t size, long iter);

/* This side's CPU (since *r0) and wall time (since t0_us) into *me. */
struct rusage;
void fb_tp_usage_since(struct fb_tp_side *me, const struct rusage *r0, double t0_us);

/* Fail with a message (exit 1). */
void fb_tp_die(struct fb_tp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
