#include "fb_opts.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FB_MAX_SIZES 4096

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
    if (shift && *end == 'i')
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    if (shift && v > (SIZE_MAX >> shift))
        return -1;
    if (v > SIZE_MAX)
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
    size_t *list = malloc(sizeof(*list) * FB_MAX_SIZES);
    int n = 0;
    char buf[256];

    if (!list)
        return set_why(why, whylen, "out of memory", text);
    if (!text || !*text || strlen(text) >= sizeof(buf)) {
        free(list);
        return set_why(why, whylen, "bad size list", text ? text : "");
    }
    strcpy(buf, text);

    char *colon = strchr(buf, ':');
    if (colon) {
        size_t lo, hi;
        *colon = '\0';
        if (strchr(colon + 1, ':') || strchr(buf, ',') || strchr(colon + 1, ',')) {
            free(list);
            return set_why(why, whylen, "expected MIN:MAX or a,b,c", text);
        }
        if (fb_parse_size(buf, &lo) || fb_parse_size(colon + 1, &hi)) {
            free(list);
            return set_why(why, whylen, "bad size in range", text);
        }
        if (lo > hi) {
            free(list);
            return set_why(why, whylen, "MIN is larger than MAX", text);
        }
        size_t s = lo;
        if (s == 0) {
            list[n++] = 0;
            s = 1;
        }
        while (s <= hi && n < FB_MAX_SIZES) {
            list[n++] = s;
            if (s > SIZE_MAX / 2)
                break;
            s *= 2;
        }
    } else {
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (n == FB_MAX_SIZES || fb_parse_size(tok, &list[n])) {
                free(list);
                return set_why(why, whylen, n == FB_MAX_SIZES ? "too many sizes" : "bad size",
                               tok);
            }
            n++;
        }
        if (n == 0 || text[strlen(text) - 1] == ',' || text[0] == ',' || strstr(text, ",,")) {
            free(list);
            return set_why(why, whylen, "bad size list", text);
        }
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

static int parse_long(const char *text, long min, long *out)
{
    if (!text || !*text)
        return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

static void print_help(FILE *out, const char *prog, const struct fb_defaults *d)
{
    char range[64];
    default_sizes(d, range, sizeof(range));
    fprintf(out,
            "usage: %s [options]\n"
            "Prints JSON Lines records on stdout (see docs/kernel-protocol.md).\n\n"
            "  --sizes MIN:MAX        power-of-two sweep, K/M/G suffixes (default %s)\n"
            "  --sizes a,b,c          explicit list of sizes in bytes\n"
            "  --iterations N         timed iterations per size (default %ld below the large\n"
            "                         threshold, %ld at or above)\n"
            "  --warmup N             untimed iterations per size (default %ld / %ld)\n"
            "  --window W             messages in flight per window, bandwidth kernels (default %d)\n"
            "  --validate             fill with a pattern, check every received byte\n"
            "  --warmup-sync MODE     collectives: start warm-up calls after a barrier (default)\n"
            "                         or 'clock': at one time on a clock every rank shares\n"
            "                         (simulator builds only)\n"
            "  --datatype T           collectives: char, int, float or double, as OSU's -T\n"
            "                         (count = size / element size). Default: float for\n"
            "                         reductions (allreduce, reduce), which keeps results\n"
            "                         stored before this option comparable; OSU reduces\n"
            "                         signed char), char for the others\n"
            "  --osu-iterations N     collectives: after the samples, N calls timed as OSU does\n"
            "                         (each call alone, a barrier after it) for osu_avg;\n"
            "                         0: none (default: the size's --iterations; simulator\n"
            "                         builds: 0)\n"
            "  --large-threshold B    size where the large defaults start (default %zu)\n"
            "  --hugepages            message buffers of 2 MiB and more on transparent huge\n"
            "                         pages (default: plain pages, as OSU)\n"
            "  --rounds R             sweep the sizes R times, each sweep running 1/R of the\n"
            "                         iterations (spreads host-load bursts over all sizes;\n"
            "                         MPI kernels draw new buffers each round; default 1)\n"
            "  --help                 this text\n",
            prog, range, d->iters_small, d->iters_large, d->warmup_small,
            d->warmup_large, d->window, d->large_threshold);
}

static enum fb_opts_status fail(FILE *err, const char *prog, const char *fmt, const char *a,
                                const char *b)
{
    if (err) {
        fprintf(err, "%s: ", prog);
        fprintf(err, fmt, a, b);
        fprintf(err, " (try --help)\n");
    }
    return FB_OPTS_ERROR;
}

enum fb_opts_status fb_opts_parse(struct fb_opts *o, const struct fb_defaults *d, const char *prog,
                                  int argc, char **argv, FILE *out, FILE *err)
{
    const char *sizes_arg = NULL;
    memset(o, 0, sizeof(*o));
    o->defaults = *d;
    o->iterations = -1;
    o->warmup = -1;
    o->window = d->window;
    o->large_threshold = d->large_threshold;
    o->rounds = 1;
    o->osu_iterations = -1;

    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *arg = argv[i];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (nlen >= sizeof(name))
            return fail(err, prog, "unknown option '%s'%s", arg, "");
        memcpy(name, arg, nlen);
        name[nlen] = '\0';

        if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
            if (out)
                print_help(out, prog, d);
            return FB_OPTS_HELP;
        }
        bool *flag = !strcmp(name, "--validate")    ? &o->validate
                     : !strcmp(name, "--hugepages") ? &o->hugepages
                                                    : NULL;
        if (flag) {
            if (eq)
                return fail(err, prog, "option '%s' takes no value%s", name, "");
            *flag = true;
            continue;
        }
        if (strcmp(name, "--sizes") && strcmp(name, "--iterations") && strcmp(name, "--warmup") &&
            strcmp(name, "--window") && strcmp(name, "--large-threshold") &&
            strcmp(name, "--rounds") && strcmp(name, "--warmup-sync") &&
            strcmp(name, "--datatype") && strcmp(name, "--osu-iterations"))
            return fail(err, prog, "unknown option '%s'%s", arg, "");
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return fail(err, prog, "option '%s' needs a value%s", name, "");

        if (!strcmp(name, "--sizes")) {
            sizes_arg = val;
        } else if (!strcmp(name, "--iterations")) {
            if (parse_long(val, 1, &o->iterations))
                return fail(err, prog, "--iterations wants an integer >= 1, got '%s'%s", val, "");
        } else if (!strcmp(name, "--warmup")) {
            if (parse_long(val, 0, &o->warmup))
                return fail(err, prog, "--warmup wants an integer >= 0, got '%s'%s", val, "");
        } else if (!strcmp(name, "--warmup-sync")) {
            if (!strcmp(val, "barrier"))
                o->warmup_sync = FB_WARMUP_BARRIER;
            else if (!strcmp(val, "clock"))
                o->warmup_sync = FB_WARMUP_CLOCK;
            else
                return fail(err, prog, "--warmup-sync wants barrier or clock, got '%s'%s", val,
                            "");
        } else if (!strcmp(name, "--osu-iterations")) {
            if (parse_long(val, 0, &o->osu_iterations))
                return fail(err, prog, "--osu-iterations wants an integer >= 0, got '%s'%s", val,
                            "");
        } else if (!strcmp(name, "--datatype")) {
            static const char *const names[] = {"char", "int", "float", "double"};
            o->datatype = FB_DT_DEFAULT;
            for (int k = 0; k < 4; k++)
                if (!strcmp(val, names[k]))
                    o->datatype = (enum fb_datatype)(FB_DT_CHAR + k);
            if (o->datatype == FB_DT_DEFAULT)
                return fail(err, prog, "--datatype wants char, int, float or double, got '%s'%s",
                            val, "");
        } else if (!strcmp(name, "--window")) {
            long w;
            if (parse_long(val, 1, &w) || w > 1000000)
                return fail(err, prog, "--window wants an integer 1..1000000, got '%s'%s", val,
                            "");
            o->window = (int)w;
        } else if (!strcmp(name, "--rounds")) {
            if (parse_long(val, 1, &o->rounds) || o->rounds > 1000)
                return fail(err, prog, "--rounds wants an integer 1..1000, got '%s'%s", val, "");
        } else {
            if (fb_parse_size(val, &o->large_threshold))
                return fail(err, prog, "--large-threshold wants a size, got '%s'%s", val, "");
        }
    }

    char why[320];
    if (sizes_arg) {
        if (fb_parse_sizes(sizes_arg, &o->sizes, &o->nsizes, why, sizeof(why)))
            return fail(err, prog, "--sizes: %s%s", why, "");
    } else {
        char range[64];
        default_sizes(d, range, sizeof(range));
        if (fb_parse_sizes(range, &o->sizes, &o->nsizes, why, sizeof(why)))
            return fail(err, prog, "default sizes: %s%s", why, "");
    }
    return FB_OPTS_OK;
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

long fb_opts_round_iterations(const struct fb_opts *o, size_t size, long round)
{
    long n = fb_opts_iterations(o, size), r = o->rounds > 0 ? o->rounds : 1;
    return n / r + (round < n % r ? 1 : 0);
}

long fb_opts_round_warmup(const struct fb_opts *o, size_t size, long round)
{
    long w = fb_opts_warmup(o, size), r = o->rounds > 0 ? o->rounds : 1;
    return round == 0 ? w : (w + r - 1) / r;
}
