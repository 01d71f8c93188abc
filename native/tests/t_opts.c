/* t_opts: size parsing, sweeps, lists, defaults and option errors of the shared option layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_opts.h"

#define T_NAME "t_opts"
#include "t_expect.h"

static enum fb_opts_status parse(struct fb_opts *o, enum fb_kernel_class cls, const char *a1,
                                 const char *a2, const char *a3)
{
    char *argv[5] = {"t", (char *)a1, (char *)a2, (char *)a3, NULL};
    int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
    struct fb_defaults d = fb_defaults_for(cls);
    return fb_opts_parse(o, &d, "t", argc, argv, NULL, NULL);
}

int main(void)
{
    size_t v = 0;
    EXPECT(fb_parse_size("4K", &v) == 0 && v == 4096, "4K -> %zu", v);
    EXPECT(fb_parse_size("4M", &v) == 0 && v == (size_t)4 << 20, "4M -> %zu", v);
    EXPECT(fb_parse_size("1GiB", &v) == 0 && v == (size_t)1 << 30, "1GiB -> %zu", v);
    EXPECT(fb_parse_size("17", &v) == 0 && v == 17, "17 -> %zu", v);
    EXPECT(fb_parse_size("-1", &v) == -1, "-1");
    EXPECT(fb_parse_size("4X", &v) == -1, "4X");
    EXPECT(fb_parse_size("", &v) == -1, "empty");
    EXPECT(fb_parse_size("99999999999999999999", &v) == -1, "overflow");

    struct fb_opts o;
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--sizes", "1:4M", NULL) == FB_OPTS_OK, "sweep");
    EXPECT(o.nsizes == 23 && o.sizes[0] == 1 && o.sizes[22] == (size_t)4 << 20, "n %d",
           o.nsizes);
    EXPECT(fb_opts_iterations(&o, 8) == 10000 && fb_opts_warmup(&o, 8) == 1000, "small");
    EXPECT(fb_opts_iterations(&o, 8192) == 1000 && fb_opts_warmup(&o, 8192) == 100, "large");
    fb_opts_free(&o);

    EXPECT(parse(&o, FB_CLASS_BANDWIDTH, "--sizes=0:4", "--validate", NULL) == FB_OPTS_OK, "0");
    EXPECT(o.nsizes == 4 && o.sizes[0] == 0 && o.sizes[3] == 4 && o.validate, "0:4");
    EXPECT(o.window == 64 && fb_opts_iterations(&o, 1) == 100, "bw defaults");
    fb_opts_free(&o);

    EXPECT(parse(&o, FB_CLASS_COLLECTIVE, "--sizes", "3,1k,5", NULL) == FB_OPTS_OK, "list");
    EXPECT(o.nsizes == 3 && o.sizes[1] == 1024 && o.sizes[2] == 5, "list values");
    fb_opts_free(&o);

    EXPECT(parse(&o, FB_CLASS_COLLECTIVE, NULL, NULL, NULL) == FB_OPTS_OK, "defaults");
    EXPECT(o.nsizes == 21 && o.sizes[20] == (size_t)1 << 20, "coll default n %d", o.nsizes);
    fb_opts_free(&o);

    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", "5", "--warmup=0") == FB_OPTS_OK, "it");
    EXPECT(fb_opts_iterations(&o, 1 << 20) == 5 && fb_opts_warmup(&o, 1) == 0, "override");
    fb_opts_free(&o);

    /* 10 iterations over 4 rounds: shares 3, 3, 2, 2; warm-up 5 then ceil(5/4) = 2 */
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", "10", "--warmup=5") == FB_OPTS_OK, "it");
    o.rounds = 4;
    EXPECT(fb_opts_round_iterations(&o, 8, 0) == 3 && fb_opts_round_iterations(&o, 8, 1) == 3 &&
               fb_opts_round_iterations(&o, 8, 2) == 2 && fb_opts_round_iterations(&o, 8, 3) == 2,
           "round shares");
    EXPECT(fb_opts_round_warmup(&o, 8, 0) == 5 && fb_opts_round_warmup(&o, 8, 3) == 2, "rwarm");
    fb_opts_free(&o);
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--rounds", "3", NULL) == FB_OPTS_OK && o.rounds == 3,
           "rounds");
    fb_opts_free(&o);
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--rounds", "0", NULL) == FB_OPTS_ERROR, "zero rounds");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--hugepages", NULL, NULL) == FB_OPTS_OK && o.hugepages,
           "hugepages");
    fb_opts_free(&o);
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--hugepages=1", NULL, NULL) == FB_OPTS_ERROR, "hp=1");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--sizes", "8:4", NULL) == FB_OPTS_ERROR, "min>max");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--sizes", "1:x", NULL) == FB_OPTS_ERROR, "bad size");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--sizes", "1,,2", NULL) == FB_OPTS_ERROR, "empty item");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--bogus", NULL, NULL) == FB_OPTS_ERROR, "unknown");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", NULL, NULL) == FB_OPTS_ERROR, "missing");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", "0", NULL) == FB_OPTS_ERROR, "zero it");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--window", "-3", NULL) == FB_OPTS_ERROR, "neg window");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--help", NULL, NULL) == FB_OPTS_HELP, "help");

    return t_verdict();
}
