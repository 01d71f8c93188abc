/* getopt_long is a GNU extension (glibc, musl). */
#define _GNU_SOURCE
#include "fb_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_json.h"

#define ALL FB_SC_COMMON
#define BIG 1e18 /* a bound no count reaches; strtol's range is checked on its own */

/* Every option of every kernel. A kernel's --help lists the rows its scope accepts. */
static const struct fb_optdef FB_TABLE[] = {
    {"help", FB_O_HELP, ALL, FB_T_FLAG, 0, 0, NULL, NULL, "this text"},
    {"print-options", FB_O_PRINT_OPTIONS, ALL, FB_T_FLAG, 0, 0, NULL, NULL,
     "print the parsed options as one JSON record and exit (nothing runs)"},
    {"sizes", FB_O_SIZES, ALL, FB_T_SIZES, 0, 0, NULL, "MIN:MAX|a,b,c",
     "power-of-two sweep or a list; K/M/G suffixes (powers of 1024)"},
    {"iterations", FB_O_ITERATIONS, ALL, FB_T_LONG, 1, BIG, NULL, "N",
     "timed iterations per size (overrides both class defaults)"},
    {"warmup", FB_O_WARMUP, ALL, FB_T_LONG, 0, BIG, NULL, "N",
     "exactly N untimed iterations per size (default: ping-pong kernels warm up until two "
     "block medians agree, between a floor and a cap; the others a fixed count)"},
    {"window", FB_O_WINDOW, ALL, FB_T_LONG, 1, 1000000, NULL, "W",
     "messages in flight per window, bandwidth kernels"},
    {"validate", FB_O_VALIDATE, ALL, FB_T_FLAG, 0, 0, NULL, NULL,
     "fill with a pattern, check every received byte"},
    {"large-threshold", FB_O_LARGE_THRESHOLD, ALL, FB_T_SIZE, 0, (double)FB_SIZE_MAX, NULL, "B",
     "size where the large defaults start"},
    {"hugepages", FB_O_HUGEPAGES, ALL, FB_T_FLAG, 0, 0, NULL, NULL,
     "message buffers of 2 MiB and more on transparent huge pages (default: plain pages, as "
     "OSU)"},
    {"rounds", FB_O_ROUNDS, ALL, FB_T_LONG, 1, 1000, NULL, "R",
     "sweep the sizes R times, each sweep running 1/R of the iterations (spreads host-load "
     "bursts over all sizes; MPI kernels draw new buffers each round; default 1)"},
    {"warmup-sync", FB_O_WARMUP_SYNC, FB_SC_COLL, FB_T_CHOICE, 0, 0, "barrier|clock", "MODE",
     "start warm-up calls after a barrier (default) or at one time on a clock every rank "
     "shares (simulator builds only)"},
    {"datatype", FB_O_DATATYPE, FB_SC_COLL, FB_T_CHOICE, 0, 0, "char|int|float|double", "T",
     "as OSU's -T (count = size / element size); default float for reductions, char for the "
     "others"},
    {"osu-iterations", FB_O_OSU_ITERATIONS, FB_SC_COLL, FB_T_LONG, 0, BIG, NULL, "N",
     "after the samples, N calls timed as OSU does for osu_avg; 0: none (default: the size's "
     "--iterations; simulator builds: 0)"},
    {"role", FB_O_ROLE, FB_SC_TP, FB_T_CHOICE, 0, 0, "client|server", "client|server",
     "this side: client (index 0, times, reports) or server"},
    {"peer", FB_O_PEER, FB_SC_TP, FB_T_STRING, 0, 0, NULL, "ADDR", "client: the server's address"},
    {"bind", FB_O_BIND, FB_SC_TP, FB_T_STRING, 0, 0, NULL, "ADDR",
     "server: listen on this address (default: any)"},
    {"port", FB_O_PORT, FB_SC_TP, FB_T_LONG, 0, 65535, NULL, "PORT",
     "rendezvous port (server: 0 picks one and prints it)"},
    {"connect-timeout", FB_O_CONNECT_TIMEOUT, FB_SC_TP, FB_T_DOUBLE, 0.001, BIG, NULL, "S",
     "seconds to wait for the peer (default 60)"},
    {"cpu", FB_O_CPU, FB_SC_TP, FB_T_STRING, 0, 0, NULL, "A[,B]",
     "pin the client to CPU A and the server to B (default A)"},
    {"duration", FB_O_DURATION, FB_SC_TP, FB_T_DOUBLE, 0.001, BIG, NULL, "S",
     "timed part of each size lasts about S seconds (count mode: a count from the warm-up's "
     "pace; time mode: default 2)"},
    {"interval", FB_O_INTERVAL, FB_OPT_TIMED, FB_T_DOUBLE, 0.001, BIG, NULL, "S",
     "time mode: one sample every S seconds (default 0.1)"},
    {"omit", FB_O_OMIT, FB_OPT_TIMED, FB_T_DOUBLE, 0, BIG, NULL, "S",
     "time mode: S seconds streamed first, not sampled (default 0.2)"},
    {"poll", FB_O_POLL, FB_OPT_POLL, FB_T_FLAG, 0, 0, NULL, NULL,
     "receive by non-blocking reads in a spin, as MPI libraries poll (default: blocking reads)"},
    {"streams", FB_O_STREAMS, FB_OPT_STREAMS, FB_T_LONG, 1, 256, NULL, "N",
     "parallel TCP connections (default 4)"},
    {"nodelay", FB_O_NODELAY, FB_OPT_NODELAY, FB_T_FLAG, 0, 0, NULL, NULL,
     "TCP_NODELAY on both sides (Nagle off)"},
    {"quickack", FB_O_QUICKACK, FB_OPT_QUICKACK, FB_T_FLAG, 0, 0, NULL, NULL,
     "TCP_QUICKACK after every receive (no delayed ACK)"},
    {"sndbuf", FB_O_SNDBUF, FB_OPT_BUFS, FB_T_SIZE, 1, (double)(1 << 30), NULL, "BYTES",
     "SO_SNDBUF on both sides (K/M suffixes)"},
    {"rcvbuf", FB_O_RCVBUF, FB_OPT_BUFS, FB_T_SIZE, 1, (double)(1 << 30), NULL, "BYTES",
     "SO_RCVBUF on both sides (K/M suffixes)"},
    {"zerocopy", FB_O_ZEROCOPY, FB_OPT_ZEROCOPY, FB_T_FLAG, 0, 0, NULL, NULL,
     "send with MSG_ZEROCOPY (SO_ZEROCOPY)"},
    {"pattern", FB_O_PATTERN, FB_OPT_PATTERN, FB_T_CHOICE, 0, 0, "pingpong|wwr", "P",
     "pingpong (default; half round trip) or wwr (write size/2, write the rest, read 8 B; full "
     "round trip)"},
    {"udp-timeout", FB_O_UDP_TIMEOUT, FB_OPT_UDP_TIMEOUT, FB_T_DOUBLE, 1, BIG, NULL, "MS",
     "UDP: reply/drain timeout in ms (default 200)"},
    {"displacement-threshold", FB_O_DISPLACEMENT_THRESHOLD, FB_OPT_REORDER, FB_T_LONG, 0, 100000,
     NULL, "N", "RFC 5236's DT: reorder density bins for displacements -N..N (default 64)"},
    {"device", FB_O_DEVICE, FB_OPT_DEVICE, FB_T_STRING, 0, 0, NULL, "NAME",
     "RDMA device (default: the first one)"},
    {"tls", FB_O_TLS, FB_OPT_UCX, FB_T_STRING, 0, 0, NULL, "LIST",
     "UCX transports (as UCX_TLS; the one chosen is reported)"},
    {"net-devices", FB_O_NET_DEVICES, FB_OPT_UCX, FB_T_STRING, 0, 0, NULL, "LIST",
     "UCX devices (as UCX_NET_DEVICES)"},
    {"provider", FB_O_PROVIDER, FB_OPT_OFI, FB_T_STRING, 0, 0, NULL, "NAME",
     "libfabric provider (as FI_PROVIDER, e.g. 'tcp;ofi_rxm')"},
    {"endpoint", FB_O_ENDPOINT, FB_OPT_OFI, FB_T_CHOICE, 0, 0, "rdm|msg", "rdm|msg",
     "libfabric endpoint: rdm (default, reliable datagram) or msg (connected)"},
    {"op", FB_O_OP, FB_OPT_OP, FB_T_CHOICE, 0, 0, "send|write", "send|write",
     "RC send/recv (default) or RDMA write"},
    {"compute-us", FB_O_COMPUTE_US, FB_SC_HALO3D, FB_T_DOUBLE, 0, 1e9, NULL, "US",
     "busy compute per step before the exchange (default 0)"},
    {"dims", FB_O_DIMS, FB_SC_FFT, FB_T_LONG, 2, 3, NULL, "2|3",
     "slabs (2: one transpose) or pencils (3: two, default)"},
    {"local-fft", FB_O_LOCAL_FFT, FB_SC_FFT, FB_T_FLAG, 0, 0, NULL, NULL,
     "radix-2 FFTs over the local data before each transpose"},
    {"mode", FB_O_MODE, FB_SC_MATRIX, FB_T_CHOICE, 0, 0, "concurrent|isolated",
     "concurrent|isolated", "all pairs of a round at once (default) or one at a time"},
    {"pairs", FB_O_PAIRS, FB_SC_MATRIX, FB_T_STRING, 0, 0, NULL, "i:j,...",
     "only these ordered pairs of ranks"},
    {"lat-iterations", FB_O_LAT_ITERATIONS, FB_SC_MATRIX, FB_T_LONG, 1, 100000000, NULL, "N",
     "8-byte ping-pongs per direction (default 500)"},
    {"batch", FB_O_BATCH, FB_SC_BATCH, FB_T_LONG, 1, 1000000, NULL, "N",
     "time N round trips per sample (a ping-pong's sample: their time over 2N, a half round "
     "trip; tcp.latency --pattern wwr: over N, a full round trip); spreads the two timer reads, "
     "as IMB times its whole loop; default 1, OSU's per-round-trip timing"},
    {"cache-cold", FB_O_CACHE_COLD, FB_SC_COLD, FB_T_FLAG, 0, 0, NULL, NULL,
     "cycle send and receive buffers through a region of twice the last-level cache, one "
     "cache-line-aligned slot per iteration, so no message is in cache (IMB's -off_cache, OSU's "
     "-b multiple); default: one buffer each, cache-hot, as OSU"},
    {"stop-precision", FB_O_STOP_PRECISION, FB_SC_STOP, FB_T_DOUBLE, 1e-6, 0.5, NULL, "P",
     "stop timing a size once the 95 % interval of its median is within P of the median (0.01: "
     "+-1 %), after at least a tenth of --iterations (10 or more) and at most all of them; "
     "default: every iteration, as OSU"},
    {"lat-warmup", FB_O_LAT_WARMUP, FB_SC_MATRIX, FB_T_LONG, 0, 100000000, NULL, "N",
     "untimed ping-pongs before them (default 50)"},
};
#define NTABLE (sizeof(FB_TABLE) / sizeof(FB_TABLE[0]))

const struct fb_optdef *fb_opts_table(size_t *n)
{
    *n = NTABLE;
    return FB_TABLE;
}

struct fb_defaults fb_defaults_for(enum fb_kernel_class cls)
{
    struct fb_defaults d = {
        .window = 64,
        .large_threshold = 8192,
        .size_min = 1,
        .size_max = (size_t)4 << 20,
    };
    switch (cls) {
    case FB_CLASS_LATENCY:
        d.iters_small = 10000, d.warmup_small = 1000;
        d.iters_large = 1000, d.warmup_large = 100;
        /* OSU 7's skip is 200 (5.x: 100); the caps above are fabench's old fixed counts */
        d.settle_floor_small = 200, d.settle_floor_large = 20;
        break;
    case FB_CLASS_BANDWIDTH:
        d.iters_small = 100, d.warmup_small = 10;
        d.iters_large = 20, d.warmup_large = 2;
        break;
    case FB_CLASS_COLLECTIVE:
        d.iters_small = 1000, d.warmup_small = 100;
        d.iters_large = 100, d.warmup_large = 10;
        d.size_max = (size_t)1 << 20;
        break;
    }
    return d;
}

int fb_parse_size(const char *text, size_t *out)
{
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I') && (end[1] == 'b' || end[1] == 'B'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    if (v > SIZE_MAX || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int set_why(char *why, size_t whylen, const char *msg, const char *item)
{
    if (why && whylen)
        snprintf(why, whylen, "%s: '%s'", msg, item);
    return -1;
}

int fb_parse_sizes(const char *text, size_t **sizes, int *nsizes, char *why, size_t whylen)
{
    if (!text || !*text)
        return set_why(why, whylen, "bad size list", "");
    size_t *list = malloc(sizeof(*list) * FB_MAX_SIZES);
    char *buf = strdup(text);
    int n = 0, rc = 0;
    if (!list || !buf) {
        rc = set_why(why, whylen, "out of memory", text);
        goto out;
    }
    char *colon = strchr(buf, ':');
    if (colon) {
        size_t lo, hi;
        *colon = '\0';
        if (strchr(colon + 1, ':') || strchr(buf, ',') || strchr(colon + 1, ',')) {
            rc = set_why(why, whylen, "expected MIN:MAX or a,b,c", text);
            goto out;
        }
        if (fb_parse_size(buf, &lo) || fb_parse_size(colon + 1, &hi) || hi > FB_SIZE_MAX) {
            rc = set_why(why, whylen, "bad size in range (0 .. 2G)", text);
            goto out;
        }
        if (lo > hi) {
            rc = set_why(why, whylen, "MIN is larger than MAX", text);
            goto out;
        }
        size_t s = lo;
        if (s == 0) {
            list[n++] = 0;
            s = 1;
        }
        for (; s <= hi; s *= 2)
            list[n++] = s; /* at most 33 with hi <= 2^31 */
    } else {
        /* strsep, not strtok: an empty item is an error, not skipped */
        for (char *p = buf, *tok; (tok = strsep(&p, ",")) != NULL;) {
            if (n == FB_MAX_SIZES) {
                rc = set_why(why, whylen, "too many sizes (at most 4096)", text);
                goto out;
            }
            if (fb_parse_size(tok, &list[n]) || list[n] > FB_SIZE_MAX) {
                rc = set_why(why, whylen, "bad size (0 .. 2G)", tok);
                goto out;
            }
            n++;
        }
    }
out:
    free(buf);
    if (rc) {
        free(list);
        return rc;
    }
    *sizes = list;
    *nsizes = n;
    return 0;
}

static void default_sizes(const struct fb_defaults *d, char *out, size_t cap)
{
    if (d->sizes)
        snprintf(out, cap, "%s", d->sizes);
    else
        snprintf(out, cap, "%zu:%zu", d->size_min, d->size_max);
}

static void print_help(FILE *out, const char *prog, const struct fb_defaults *d, unsigned scope,
                       const struct fb_own_opts *own)
{
    char range[64];
    default_sizes(d, range, sizeof(range));
    fprintf(out, "usage: %s [options]\n"
                 "Prints JSON Lines records on stdout (see docs/kernel-protocol.md).\n\n",
            prog);
    for (size_t i = 0; i < NTABLE; i++) {
        const struct fb_optdef *t = &FB_TABLE[i];
        if (!(t->scope & scope))
            continue;
        char left[48];
        snprintf(left, sizeof(left), "--%s%s%s", t->name, t->metavar ? " " : "",
                 t->metavar ? t->metavar : "");
        /* help wrapped at 100 columns, under its own column */
        fprintf(out, "  %-26s", left);
        int col = 28;
        for (const char *p = t->help; *p;) {
            size_t w = strcspn(p, " ");
            if (col + 1 + (int)w > 100) {
                fprintf(out, "\n%28s", "");
                col = 28;
            }
            fprintf(out, " %.*s", (int)w, p);
            col += 1 + (int)w;
            p += w;
            while (*p == ' ')
                p++;
        }
        fputc('\n', out);
    }
    fprintf(out,
            "\nDefaults here: --sizes %s; --iterations %ld below the large threshold, %ld at or\n"
            "above; --window (default %d); --large-threshold (default %zu).\n",
            range, d->iters_small, d->iters_large, d->window, d->large_threshold);
    if (d->settle_floor_small > 0)
        fprintf(out,
                "Warm-up: settled, in blocks of half the floor until two block medians agree "
                "within %.0f %%,\nat least %ld / %ld and at most %ld / %ld iterations "
                "(--warmup N: exactly N).\n",
                100 * FB_SETTLE_TOL, d->settle_floor_small, d->settle_floor_large,
                d->warmup_small, d->warmup_large);
    else
        fprintf(out, "Warm-up: --warmup %ld / %ld.\n", d->warmup_small, d->warmup_large);
    if (own && own->help)
        fprintf(out, "\n%s", own->help);
}

static enum fb_opts_status fail(FILE *err, const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum fb_opts_status fail(FILE *err, const char *prog, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        fprintf(err, "%s: ", prog);
        va_start(ap, fmt);
        vfprintf(err, fmt, ap);
        va_end(ap);
        fprintf(err, " (try --help)\n");
    }
    return FB_OPTS_ERROR;
}

/* "a|b|c" -> "a, b or c" */
static void choices_text(const char *choices, char *out, size_t cap)
{
    size_t n = 0;
    const char *last = strrchr(choices, '|');
    for (const char *p = choices; *p && n + 6 < cap; p++) {
        if (*p != '|') {
            out[n++] = *p;
        } else if (p == last) {
            memcpy(out + n, " or ", 4);
            n += 4;
        } else {
            memcpy(out + n, ", ", 2);
            n += 2;
        }
    }
    out[n] = '\0';
}

static int choice_index(const char *choices, const char *val)
{
    size_t vlen = strlen(val);
    int k = 0;
    for (const char *p = choices; *p; k++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vlen && !strncmp(p, val, len))
            return k;
        p += len + (bar ? 1 : 0);
    }
    return -1;
}

/* Read and check a value by the option's type; 0, or -1 with the reason in why[]. */
static int read_value(const struct fb_optdef *t, const char *val, struct fb_optval *v, char *why,
                      size_t len)
{
    char *end = NULL;
    char lim[96];
    memset(v, 0, sizeof(*v));
    v->text = val;
    if (t->type != FB_T_FLAG && !*val) {
        snprintf(why, len, "--%s needs a value", t->name);
        return -1;
    }
    switch (t->type) {
    case FB_T_FLAG:
    case FB_T_STRING:
    case FB_T_SIZES:
        return 0;
    case FB_T_LONG:
        errno = 0;
        v->l = strtol(val, &end, 10);
        if (errno || *end || (double)v->l < t->lo || (double)v->l > t->hi) {
            if (t->hi >= BIG)
                snprintf(lim, sizeof(lim), "an integer >= %.0f", t->lo);
            else
                snprintf(lim, sizeof(lim), "%.0f..%.0f", t->lo, t->hi);
            snprintf(why, len, "--%s wants %s, got '%s'", t->name, lim, val);
            return -1;
        }
        return 0;
    case FB_T_DOUBLE:
        errno = 0;
        v->d = strtod(val, &end);
        if (errno || *end || !isfinite(v->d) || !(v->d >= t->lo) || v->d > t->hi) {
            if (t->hi >= BIG)
                snprintf(lim, sizeof(lim), "a number >= %g", t->lo);
            else
                snprintf(lim, sizeof(lim), "a number %g..%g", t->lo, t->hi);
            snprintf(why, len, "--%s wants %s, got '%s'", t->name, lim, val);
            return -1;
        }
        return 0;
    case FB_T_SIZE:
        if (fb_parse_size(val, &v->z) || (double)v->z < t->lo || (double)v->z > t->hi) {
            snprintf(why, len, "--%s wants a size, got '%s' (%.0f..%.0f bytes, K/M/G suffixes)",
                     t->name, val, t->lo, t->hi);
            return -1;
        }
        return 0;
    case FB_T_CHOICE:
        v->l = choice_index(t->choices, val);
        if (v->l < 0) {
            choices_text(t->choices, lim, sizeof(lim));
            snprintf(why, len, "--%s wants %s, got '%s'", t->name, lim, val);
            return -1;
        }
        return 0;
    }
    return 0;
}

static const char *const SCOPE_WHERE[] = {
    [1] = "--datatype, --osu-iterations and --warmup-sync apply to collective kernels only",
};

static void print_options(FILE *out, const char *prog, const struct fb_opts *o)
{
    struct fb_json j = {0};
    fb_json_begin(&j, "options");
    fb_json_str(&j, "kernel", prog);
    double *s = malloc(sizeof(double) * (size_t)(o->nsizes > 0 ? o->nsizes : 1));
    for (int i = 0; s && i < o->nsizes; i++)
        s[i] = (double)o->sizes[i];
    fb_json_double_array(&j, "sizes", s, s ? (size_t)o->nsizes : 0, 0);
    free(s);
    fb_json_int(&j, "iterations", o->iterations);
    fb_json_int(&j, "warmup", o->warmup);
    fb_json_int(&j, "window", o->window);
    fb_json_int(&j, "rounds", o->rounds);
    fb_json_uint(&j, "large_threshold", o->large_threshold);
    fb_json_bool(&j, "validate", o->validate);
    fb_json_bool(&j, "hugepages", o->hugepages);
    fb_json_int(&j, "batch", o->batch);
    fb_json_double(&j, "stop_precision", o->stop_precision, 6);
    fb_json_end(&j, out);
    fb_json_free(&j);
}

enum fb_opts_status fb_opts_parse_own(struct fb_opts *o, const struct fb_defaults *d,
                                      const char *prog, unsigned scope,
                                      const struct fb_own_opts *own, int argc, char **argv,
                                      FILE *out, FILE *err)
{
    const char *sizes_arg = NULL;
    bool print = false;
    char why[256];
    memset(o, 0, sizeof(*o));
    o->defaults = *d;
    o->iterations = -1;
    o->warmup = -1;
    o->window = d->window;
    o->large_threshold = d->large_threshold;
    o->rounds = 1;
    o->osu_iterations = -1;
    o->batch = 1;
    scope |= FB_SC_COMMON | (own ? own->scope : 0);

    struct option longopts[NTABLE + 1];
    for (size_t i = 0; i < NTABLE; i++)
        longopts[i] = (struct option){FB_TABLE[i].name,
                                      FB_TABLE[i].type == FB_T_FLAG ? no_argument
                                                                    : required_argument,
                                      NULL, (int)i + 1};
    longopts[NTABLE] = (struct option){0};

    /* '+': stop at the first operand, no reordering, so each call starts at argv[optind];
     * ':': a missing value comes back as ':'. optind 0 resets glibc's state for a new argv. */
    opterr = 0;
    optind = 0;
    for (;;) {
        int at = optind ? optind : 1;
        const char *word = at < argc ? argv[at] : NULL;
        const struct fb_optdef *t = NULL;
        if (word && !strncmp(word, "--", 2) && word[2]) {
            /* Exact names only: getopt_long would take a unique prefix. */
            size_t nlen = strcspn(word + 2, "=");
            for (size_t i = 0; i < NTABLE && !t; i++)
                if (strlen(FB_TABLE[i].name) == nlen && !strncmp(word + 2, FB_TABLE[i].name, nlen))
                    t = &FB_TABLE[i];
            if (!t)
                return fail(err, prog, "unknown option '%.*s'", (int)(nlen + 2), word);
            if (!(t->scope & scope)) {
                const char *where = t->scope == FB_SC_COLL ? SCOPE_WHERE[1] : "";
                return fail(err, prog, "option '--%s' does not apply to %s%s%s", t->name, prog,
                            *where ? "; " : "", where);
            }
            if (t->type == FB_T_FLAG && word[2 + nlen] == '=')
                return fail(err, prog, "option '--%s' takes no value", t->name);
        }
        int c = getopt_long(argc, argv, "+:h", longopts, NULL);
        if (c == -1)
            break;
        if (c == 'h') {
            t = &FB_TABLE[0];
        } else if (c == ':') {
            return fail(err, prog, "option '%s' needs a value", word ? word : "?");
        } else if (c == '?' || c < 1 || c > (int)NTABLE) {
            return fail(err, prog, "unknown option '%s'", word ? word : "?");
        } else {
            t = &FB_TABLE[c - 1];
        }
        struct fb_optval v;
        if (read_value(t, optarg ? optarg : "", &v, why, sizeof(why)))
            return fail(err, prog, "%s", why);
        switch (t->id) {
        case FB_O_HELP:
            if (out)
                print_help(out, prog, d, scope, own);
            return FB_OPTS_HELP;
        case FB_O_PRINT_OPTIONS: print = true; break;
        case FB_O_SIZES: sizes_arg = v.text; break;
        case FB_O_ITERATIONS: o->iterations = v.l; break;
        case FB_O_WARMUP: o->warmup = v.l; break;
        case FB_O_WINDOW: o->window = (int)v.l; break;
        case FB_O_VALIDATE: o->validate = true; break;
        case FB_O_LARGE_THRESHOLD: o->large_threshold = v.z; break;
        case FB_O_HUGEPAGES: o->hugepages = true; break;
        case FB_O_ROUNDS: o->rounds = v.l; break;
        case FB_O_WARMUP_SYNC:
            o->warmup_sync = v.l ? FB_WARMUP_CLOCK : FB_WARMUP_BARRIER;
            break;
        case FB_O_DATATYPE: o->datatype = (enum fb_datatype)(FB_DT_CHAR + v.l); break;
        case FB_O_OSU_ITERATIONS: o->osu_iterations = v.l; break;
        case FB_O_BATCH: o->batch = v.l; break;
        case FB_O_CACHE_COLD: o->cache_cold = true; break;
        case FB_O_STOP_PRECISION: o->stop_precision = v.d; break;
        default:
            if (!own || !own->set)
                return fail(err, prog, "option '--%s' has no reader here", t->name);
            why[0] = '\0';
            if (own->set(own->ctx, t->id, &v, why, sizeof(why)))
                return fail(err, prog, "%s", why[0] ? why : "bad option");
        }
    }
    if (optind < argc)
        return fail(err, prog, "unexpected argument '%s'", argv[optind]);

    if (sizes_arg) {
        if (fb_parse_sizes(sizes_arg, &o->sizes, &o->nsizes, why, sizeof(why)))
            return fail(err, prog, "--sizes: %s", why);
    } else {
        char range[64];
        default_sizes(d, range, sizeof(range));
        if (fb_parse_sizes(range, &o->sizes, &o->nsizes, why, sizeof(why)))
            return fail(err, prog, "default sizes: %s", why);
    }
    if (print) {
        if (out)
            print_options(out, prog, o);
        fb_opts_free(o);
        return FB_OPTS_HELP;
    }
    return FB_OPTS_OK;
}

enum fb_opts_status fb_opts_parse(struct fb_opts *o, const struct fb_defaults *d, const char *prog,
                                  int argc, char **argv, FILE *out, FILE *err)
{
    return fb_opts_parse_own(o, d, prog, FB_SC_COLL, NULL, argc, argv, out, err);
}

static void json_count(struct fb_json *j, const char *key, double v)
{
    fb_json_double(j, key, v, v == floor(v) ? 0 : 1);
}

void fb_result_begin(struct fb_json *j, const struct fb_opts *o, const struct fb_result_head *h)
{
    fb_json_begin(j, "result");
    fb_json_str(j, "kernel", h->kernel);
    fb_json_uint(j, "size", h->size);
    fb_json_int(j, "iterations", h->iterations);
    fb_json_int(j, "warmup", h->warmup);
    /* what the warm-up ran: the settled rule's count, or the fixed one */
    fb_json_int(j, "warmup_used", h->settled ? h->warmup_used : h->warmup);
    fb_json_str(j, "warmup_mode", h->settled ? "settled" : "fixed");
    fb_json_str(j, "datatype", h->datatype);
    fb_json_uint(j, "count", h->count);
    fb_json_str(j, "unit", "us");
    if (o->validate)
        fb_json_bool(j, "validated", true);
    else
        fb_json_null(j, "validated");
    json_count(j, "bytes_per_sample", h->bytes_per_sample);
    json_count(j, "messages_per_sample", h->messages_per_sample);
    if (o->rounds > 1) {
        fb_json_int(j, "round", h->round);
        fb_json_int(j, "rounds", o->rounds);
    }
    if (o->batch > 1)
        fb_json_int(j, "batch", o->batch);
    if (o->stop_precision > 0) {
        /* how far the size ran: `iterations` of at most `iterations_cap`, and why it stopped */
        fb_json_double(j, "stop_precision", o->stop_precision, 6);
        fb_json_int(j, "iterations_cap", h->iterations_cap);
        if (isfinite(h->stop_reached))
            fb_json_double(j, "precision_reached", h->stop_reached, 6);
        else
            fb_json_null(j, "precision_reached");
    }
    /* every record says which cache regime it measured */
    fb_json_str(j, "cache", o->cache_cold ? "cold" : "hot");
    if (o->cache_cold) {
        fb_json_uint(j, "cache_region_bytes", o->cold_region);
        /* a slot per message (windows) or per iteration (ping-pong), and how many of this
         * size the region holds: a window of more messages than slots reuses slots in it */
        fb_json_str(j, "cache_cycle", o->cold_cycle ? o->cold_cycle : "iteration");
        fb_json_uint(j, "cache_slots", fb_cold_slots(o->cold_region, h->size));
    }
}

void fb_opts_free(struct fb_opts *o)
{
    free(o->sizes);
    o->sizes = NULL;
    o->nsizes = 0;
}

long fb_opts_iterations(const struct fb_opts *o, size_t size)
{
    if (o->iterations >= 0)
        return o->iterations;
    return size < o->large_threshold ? o->defaults.iters_small : o->defaults.iters_large;
}

size_t fb_opts_max_size(const struct fb_opts *o, size_t floor)
{
    size_t m = floor;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > m)
            m = o->sizes[i];
    return m;
}

long fb_opts_max_iterations(const struct fb_opts *o)
{
    long m = 1;
    for (int i = 0; i < o->nsizes; i++)
        if (fb_opts_iterations(o, o->sizes[i]) > m)
            m = fb_opts_iterations(o, o->sizes[i]);
    return m;
}

long fb_opts_warmup(const struct fb_opts *o, size_t size)
{
    if (o->warmup >= 0)
        return o->warmup;
    return size < o->large_threshold ? o->defaults.warmup_small : o->defaults.warmup_large;
}

struct fb_settle_rule fb_opts_warmup_rule(const struct fb_opts *o, size_t size)
{
    if (o->warmup >= 0)
        return fb_settle_fixed(o->warmup);
    bool small = size < o->large_threshold;
    long floor = small ? o->defaults.settle_floor_small : o->defaults.settle_floor_large;
    long cap = fb_opts_warmup(o, size);
    return floor > 0 ? fb_settle_between(floor, cap) : fb_settle_fixed(cap);
}

long fb_opts_round_iterations(const struct fb_opts *o, size_t size, long round)
{
    long n = fb_opts_iterations(o, size), r = o->rounds > 0 ? o->rounds : 1;
    return n / r + (round < n % r ? 1 : 0);
}

long fb_opts_round_warmup(const struct fb_opts *o, size_t size, long round)
{
    (void)round;
    return fb_opts_warmup(o, size);
}
