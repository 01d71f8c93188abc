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

enum fb_kernel_class {
    FB_CLASS_LATENCY,    /* ping-pong */
    FB_CLASS_BANDWIDTH,  /* windowed streaming */
    FB_CLASS_COLLECTIVE, /* one collective call per iteration */
};

struct fb_defaults {
    long iters_small, warmup_small; /* below large_threshold */
    long iters_large, warmup_large; /* at or above large_threshold */
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
    struct fb_defaults defaults;
};

enum fb_opts_status {
    FB_OPTS_OK = 0,
    FB_OPTS_HELP = 1,  /* --help printed: exit 0 */
    FB_OPTS_ERROR = 2, /* message printed: exit 2 */
};

/* OSU's defaults for a kernel class. */
struct fb_defaults fb_defaults_for(enum fb_kernel_class cls);

/* Parse argv[1..argc) into *o. Help goes to `out`, errors to `err` (either may be NULL to stay
 * quiet, e.g. on all ranks but one). `prog` names the kernel in messages. */
enum fb_opts_status fb_opts_parse(struct fb_opts *o, const struct fb_defaults *d, const char *prog,
                                  int argc, char **argv, FILE *out, FILE *err);

/* Free what fb_opts_parse allocated. */
void fb_opts_free(struct fb_opts *o);

/* Timed and warm-up iterations for one message size. */
long fb_opts_iterations(const struct fb_opts *o, size_t size);
/* The largest of --sizes, at least `floor` (buffers are sized once for every size). */
size_t fb_opts_max_size(const struct fb_opts *o, size_t floor);
/* The largest iteration count over --sizes, at least 1 (sample arrays sized once). */
long fb_opts_max_iterations(const struct fb_opts *o);
long fb_opts_warmup(const struct fb_opts *o, size_t size);

/* Rounds: the size list is swept `rounds` times and each sweep runs its share of a size's
 * iterations, so a burst of load on a shared host lands on a slice of every size instead of
 * on all samples of whichever size was running. Round 0 gets the full warm-up; later rounds a
 * warm-up of ceil(warmup / rounds) after switching back to the size. A share may be 0 when
 * iterations < rounds: skip the size in that round. */
long fb_opts_round_iterations(const struct fb_opts *o, size_t size, long round);
long fb_opts_round_warmup(const struct fb_opts *o, size_t size, long round);

/* One size: decimal bytes with an optional K, M or G suffix (powers of 1024, optional
 * trailing B or iB). Returns 0 on success, -1 on a malformed or overflowing value. */
int fb_parse_size(const char *text, size_t *out);

/* A --sizes argument: "MIN:MAX" (MIN, then doubling up to MAX; MIN 0 gives 0, 1, 2, ...) or a
 * list "a,b,c". On success *sizes is malloc'ed. Returns 0, or -1 with a reason in why[]. */
int fb_parse_sizes(const char *text, size_t **sizes, int *nsizes, char *why, size_t whylen);

#endif
