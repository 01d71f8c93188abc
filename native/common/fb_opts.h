/* fb_opts.h - the command-line options every fabench kernel shares.
 *
 * A kernel passes its class defaults (OSU's loop constants) and gets back one struct fb_opts;
 * nothing is global. See docs/kernel-protocol.md for the option list.
 */
#ifndef FB_OPTS_H
#define FB_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fb_settle.h"

enum fb_kernel_class {
    FB_CLASS_LATENCY,    /* ping-pong */
    FB_CLASS_BANDWIDTH,  /* windowed streaming */
    FB_CLASS_COLLECTIVE, /* one collective call per iteration */
};

struct fb_defaults {
    long iters_small, warmup_small; /* below large_threshold */
    long iters_large, warmup_large; /* at or above large_threshold */
    /* The settled warm-up's floors (fb_settle.h); the warmup_* counts are its caps. 0: the
     * class warms up for its fixed count. */
    long settle_floor_small, settle_floor_large;
    size_t size_min, size_max;
    const char *sizes; /* default --sizes (the kernel's line in native/kernels.list); NULL:
                          size_min:size_max */
    int window;
    size_t large_threshold;
};

/* How collective kernels start a warm-up call. Timed calls always follow a barrier (the barrier's
 * exit skew is part of what a measured collective records). */
enum fb_warmup_sync {
    FB_WARMUP_BARRIER, /* MPI_Barrier, as timed calls */
    FB_WARMUP_CLOCK,   /* every rank sleeps until one start time on a clock all ranks share */
};

/* --datatype of the collective kernels (OSU's -T). */
enum fb_datatype {
    FB_DT_DEFAULT, /* float for reductions, char for the others */
    FB_DT_CHAR,
    FB_DT_INT,
    FB_DT_FLOAT,
    FB_DT_DOUBLE,
};

struct fb_opts {
    size_t *sizes; /* message sizes in bytes, in the order given */
    int nsizes;
    long iterations; /* -1: class default for each size */
    long warmup;     /* -1: class default for each size */
    int window;
    bool validate;
    enum fb_warmup_sync warmup_sync;
    enum fb_datatype datatype;
    long osu_iterations; /* collectives: calls of the OSU-style loop per size; -1: default */
    size_t large_threshold;
    long rounds; /* passes over the size list; each pass runs its share of the iterations */
    bool hugepages; /* message buffers on transparent huge pages (fb_buf_alloc_pages) */
    long batch;     /* ping-pong kernels: round trips timed together per sample (default 1) */
    bool cache_cold;     /* --cache-cold: buffers cycled through cold_region bytes */
    size_t cold_region;  /* set by the kernel that honours --cache-cold */
    const char *cold_cycle; /* and what takes the next slot: "message" or "iteration" */
    double stop_precision;  /* --stop-precision (fb_stop.h); 0: every iteration counted */
    struct fb_defaults defaults;
};

enum fb_opts_status {
    FB_OPTS_OK = 0,
    FB_OPTS_HELP = 1,  /* --help or --print-options printed: exit 0 */
    FB_OPTS_ERROR = 2, /* message printed: exit 2 */
};

/* Which kernels accept an option (FB_TABLE in fb_opts.c): every kernel gets FB_SC_COMMON;
 * a kernel names the rest it accepts. The transport bits (FB_OPT_*) are a transport kernel's
 * own list (struct fb_tp_kernel.opts). */
enum fb_scope {
    FB_SC_COMMON = 1u << 0,
    FB_SC_COLL = 1u << 1,     /* MPI collectives: --datatype, --osu-iterations, --warmup-sync */
    FB_SC_TP = 1u << 2,       /* every transport kernel: --role, --peer, --port, ... */
    FB_SC_HALO3D = 1u << 3,   /* mpi.halo3d: --compute-us */
    FB_SC_FFT = 1u << 4,      /* mpi.fft: --dims, --local-fft */
    FB_SC_MATRIX = 1u << 5,   /* mpi.matrix: --mode, --pairs, --lat-iterations, --lat-warmup */
    FB_SC_BATCH = 1u << 6,    /* ping-pong kernels on the loop engine: --batch */
    FB_SC_COLD = 1u << 7,     /* kernels that can cycle their buffers: --cache-cold */
    FB_OPT_STREAMS = 1u << 8,
    FB_OPT_NODELAY = 1u << 9,
    FB_OPT_QUICKACK = 1u << 10,
    FB_OPT_BUFS = 1u << 11,     /* --sndbuf, --rcvbuf */
    FB_OPT_ZEROCOPY = 1u << 12,
    FB_OPT_PATTERN = 1u << 13,
    FB_OPT_UDP_TIMEOUT = 1u << 14,
    FB_OPT_DEVICE = 1u << 15,
    FB_OPT_OP = 1u << 16,       /* --op send|write */
    FB_OPT_UCX = 1u << 17,      /* --tls, --net-devices */
    FB_OPT_OFI = 1u << 18,      /* --provider, --endpoint */
    FB_OPT_TIMED = 1u << 19,    /* --interval, --omit (kernels with a time mode) */
    FB_OPT_POLL = 1u << 20,     /* --poll */
    FB_OPT_REORDER = 1u << 21,  /* --displacement-threshold */
    FB_SC_STOP = 1u << 22,      /* kernels whose timed loop stops at a precision: --stop-precision */
};

/* Every option of every kernel, one id each (the row of FB_TABLE). */
enum fb_opt_id {
    FB_O_HELP = 1,
    FB_O_PRINT_OPTIONS,
    FB_O_SIZES,
    FB_O_ITERATIONS,
    FB_O_WARMUP,
    FB_O_WINDOW,
    FB_O_VALIDATE,
    FB_O_LARGE_THRESHOLD,
    FB_O_HUGEPAGES,
    FB_O_ROUNDS,
    FB_O_WARMUP_SYNC,
    FB_O_DATATYPE,
    FB_O_OSU_ITERATIONS,
    FB_O_ROLE,
    FB_O_PEER,
    FB_O_BIND,
    FB_O_PORT,
    FB_O_CONNECT_TIMEOUT,
    FB_O_CPU,
    FB_O_DURATION,
    FB_O_INTERVAL,
    FB_O_OMIT,
    FB_O_POLL,
    FB_O_STREAMS,
    FB_O_NODELAY,
    FB_O_QUICKACK,
    FB_O_SNDBUF,
    FB_O_RCVBUF,
    FB_O_ZEROCOPY,
    FB_O_PATTERN,
    FB_O_UDP_TIMEOUT,
    FB_O_DISPLACEMENT_THRESHOLD,
    FB_O_DEVICE,
    FB_O_TLS,
    FB_O_NET_DEVICES,
    FB_O_PROVIDER,
    FB_O_ENDPOINT,
    FB_O_OP,
    FB_O_COMPUTE_US,
    FB_O_DIMS,
    FB_O_LOCAL_FFT,
    FB_O_MODE,
    FB_O_PAIRS,
    FB_O_LAT_ITERATIONS,
    FB_O_LAT_WARMUP,
    FB_O_BATCH,
    FB_O_CACHE_COLD,
    FB_O_STOP_PRECISION,
};

/* How a value is read and checked (the same way for every kernel that takes the option). */
enum fb_opt_type {
    FB_T_FLAG,   /* no value */
    FB_T_LONG,   /* decimal integer in [lo, hi] */
    FB_T_DOUBLE, /* finite number in [lo, hi] */
    FB_T_SIZE,   /* one size (fb_parse_size) in [lo, hi] bytes */
    FB_T_SIZES,  /* a --sizes list (fb_parse_sizes) */
    FB_T_CHOICE, /* one of `choices` ("a|b|c"); the value's index is passed on */
    FB_T_STRING, /* any non-empty text; the kernel checks it */
};

struct fb_optdef {
    const char *name; /* without the leading -- */
    enum fb_opt_id id;
    unsigned scope;
    enum fb_opt_type type;
    double lo, hi;
    const char *choices; /* FB_T_CHOICE */
    const char *metavar; /* NULL for flags */
    const char *help;
};

/* A parsed value, as the option's type reads it. */
struct fb_optval {
    const char *text;
    long l;      /* FB_T_LONG; FB_T_CHOICE: the index */
    double d;    /* FB_T_DOUBLE */
    size_t z;    /* FB_T_SIZE */
};

/* A kernel's own options: those in `scope` beyond the common and collective ones go to `set`,
 * which returns 0 or -1 with a reason in why[] (printed as "PROG: WHY (try --help)").
 * `help` is printed after the table's lines. */
struct fb_own_opts {
    unsigned scope;
    int (*set)(void *ctx, enum fb_opt_id id, const struct fb_optval *v, char *why, size_t len);
    void *ctx;
    const char *help;
};

/* The one option table (every kernel's options); n rows into *n. */
const struct fb_optdef *fb_opts_table(size_t *n);

/* OSU's defaults for a kernel class. */
struct fb_defaults fb_defaults_for(enum fb_kernel_class cls);

/* Parse argv[1..argc) into *o with getopt_long over the rows of the table that `scope`
 * accepts (FB_SC_COMMON always; `own` may be NULL). Help goes to `out`, errors to `err`
 * (either may be NULL to stay quiet, e.g. on all ranks but one). `prog` names the kernel in
 * messages. Every option is spelled in full (no abbreviations: the Python side refuses some
 * options by name). --print-options prints the parsed common options as one JSON record
 * {"type":"options",...} on `out` and returns FB_OPTS_HELP. */
enum fb_opts_status fb_opts_parse_own(struct fb_opts *o, const struct fb_defaults *d,
                                      const char *prog, unsigned scope,
                                      const struct fb_own_opts *own, int argc, char **argv,
                                      FILE *out, FILE *err);

/* The common options (and the collective ones) only. */
enum fb_opts_status fb_opts_parse(struct fb_opts *o, const struct fb_defaults *d, const char *prog,
                                  int argc, char **argv, FILE *out, FILE *err);

/* The fields every result record starts with (docs/kernel-protocol.md), written once here for
 * the MPI and the transport kernels. */
struct fb_json;
struct fb_result_head {
    const char *kernel;
    size_t size;
    long iterations, warmup; /* warmup: the fixed count, or the settled rule's cap */
    /* the warm-up iterations run, when the kernel settled them (fb_settle.h); a kernel that
     * leaves `settled` false ran exactly `warmup` */
    long warmup_used;
    bool settled;
    const char *datatype;
    unsigned long long count;
    double bytes_per_sample, messages_per_sample;
    long round;
    /* --stop-precision (fb_stop.h): the count the loop could run and the precision it
     * reached when it stopped (INFINITY: never judged) */
    long iterations_cap;
    double stop_reached;
};
/* fb_json_begin(j, "result") and the head's fields, with validated and round/rounds from *o. */
void fb_result_begin(struct fb_json *j, const struct fb_opts *o, const struct fb_result_head *h);

/* Free what fb_opts_parse allocated. */
void fb_opts_free(struct fb_opts *o);

/* Timed and warm-up iterations for one message size. */
long fb_opts_iterations(const struct fb_opts *o, size_t size);
/* The largest of --sizes, at least `floor` (buffers are sized once for every size). */
size_t fb_opts_max_size(const struct fb_opts *o, size_t floor);
/* The largest iteration count over --sizes, at least 1 (sample arrays sized once). */
long fb_opts_max_iterations(const struct fb_opts *o);
long fb_opts_warmup(const struct fb_opts *o, size_t size);
/* The warm-up rule for one size: --warmup N is fixed at N; by default the class's settled rule
 * (floor .. the class's warm-up count), fixed where the class has no floor. */
struct fb_settle_rule fb_opts_warmup_rule(const struct fb_opts *o, size_t size);

/* Rounds: the size list is swept `rounds` times and each sweep runs its share of a size's
 * iterations, so a burst of load on a shared host lands on a slice of every size instead of
 * on all samples of whichever size was running. Every round gets the size's full warm-up: later
 * rounds run on renewed buffers, whose registration caches (UCX, verbs) start cold again. A share may be 0 when
 * iterations < rounds: skip the size in that round. */
long fb_opts_round_iterations(const struct fb_opts *o, size_t size, long round);
long fb_opts_round_warmup(const struct fb_opts *o, size_t size, long round);

/* The sizes grammar, one for the kernels and the Python side (fabench.units; both pass the
 * cases of native/tests/sizes_grammar.tsv):
 *   size  = DIGITS [ ("K"|"M"|"G") ["i"] ["B"] | "B" ]   (letters in either case, no spaces;
 *           K, M, G are powers of 1024)
 *   sizes = size ":" size   (MIN, then doubling up to MAX; MIN 0 gives 0, 1, 2, 4, ...)
 *         | size ("," size)*
 * with every size at most FB_SIZE_MAX and at most FB_MAX_SIZES of them. */
#define FB_SIZE_MAX ((size_t)1 << 31)
#define FB_MAX_SIZES 4096

/* One size. Returns 0 on success, -1 on a malformed or overflowing value. */
int fb_parse_size(const char *text, size_t *out);

/* A --sizes argument (the grammar above). On success *sizes is malloc'ed. Returns 0, or -1
 * with a reason in why[]. */
int fb_parse_sizes(const char *text, size_t **sizes, int *nsizes, char *why, size_t whylen);

#endif
