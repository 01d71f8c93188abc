/* t_opts: size parsing, sweeps, lists, defaults and option errors of the shared option layer,
 * and the two grammar tables every kernel binary passes too (argv[1]: their directory). */
#define _GNU_SOURCE /* strsep, open_memstream */
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

/* Each line of a table: TEXT<TAB>EXPECT, '#' lines skipped. Calls fn per row. */
static void each_row(const char *dir, const char *file, void (*fn)(char *text, char *expect))
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab)
            continue;
        *tab = '\0';
        fn(line, tab + 1);
        rows++;
    }
    fclose(f);
    EXPECT(rows > 10, "%s: %d rows", path, rows);
}

static void sizes_row(char *text, char *expect)
{
    size_t *sizes = NULL;
    int n = 0;
    char why[256];
    int rc = fb_parse_sizes(text, &sizes, &n, why, sizeof(why));
    if (!strcmp(expect, "error")) {
        EXPECT(rc == -1, "sizes '%s' parsed, the table says error", text);
        if (rc == 0)
            free(sizes);
        return;
    }
    EXPECT(rc == 0, "sizes '%s' refused (%s), the table says %s", text, why, expect);
    if (rc)
        return;
    char got[1024] = "";
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%zu", i ? "," : "", sizes[i]);
    EXPECT(!strcmp(got, expect), "sizes '%s' -> %s, the table says %s", text, got, expect);
    free(sizes);
}

static void options_row(char *args, char *expect)
{
    char *argv[34] = {"t", "--print-options"};
    int argc = 2;
    char shown[512];
    snprintf(shown, sizeof(shown), "%s", args);
    for (char *p = args, *w; argc < 33 && (w = strsep(&p, " ")) != NULL;)
        if (*w)
            argv[argc++] = w;
    argv[argc] = NULL;
    char *outs = NULL, *errs = NULL;
    size_t outn = 0, errn = 0;
    FILE *out = open_memstream(&outs, &outn), *err = open_memstream(&errs, &errn);
    struct fb_opts o;
    struct fb_defaults d = fb_defaults_for(FB_CLASS_LATENCY);
    enum fb_opts_status st = fb_opts_parse_own(&o, &d, "t", 0, NULL, argc, argv, out, err);
    fclose(out);
    fclose(err);
    if (!strncmp(expect, "error: ", 7)) {
        EXPECT(st == FB_OPTS_ERROR && strstr(errs, expect + 7), "'%s': status %d, '%s'", shown,
               (int)st, errs);
    } else {
        /* --print-options: FB_OPTS_HELP and the record on `out` */
        EXPECT(st == FB_OPTS_HELP, "'%s': status %d, '%s'", shown, (int)st, errs);
        char *p = expect + 2;
        for (char *kv; (kv = strsep(&p, " ")) != NULL;) {
            char *eq = strchr(kv, '=');
            if (!eq)
                continue;
            char want[128], last[128];
            snprintf(want, sizeof(want), "\"%.*s\":%s,", (int)(eq - kv), kv, eq + 1);
            snprintf(last, sizeof(last), "\"%.*s\":%s}", (int)(eq - kv), kv, eq + 1);
            EXPECT(strstr(outs, want) || strstr(outs, last), "'%s': no %s in %s", shown, want,
                   outs);
        }
    }
    free(outs);
    free(errs);
}

int main(int argc, char **argv)
{
    EXPECT(argc > 1, "usage: t_opts TABLE_DIR (native/tests)");
    if (argc > 1) {
        each_row(argv[1], "sizes_grammar.tsv", sizes_row);
        each_row(argv[1], "options_grammar.tsv", options_row);
    }

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

    /* 10 iterations over 4 rounds: shares 3, 3, 2, 2; every round its full warm-up of 5 */
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", "10", "--warmup=5") == FB_OPTS_OK, "it");
    o.rounds = 4;
    EXPECT(fb_opts_round_iterations(&o, 8, 0) == 3 && fb_opts_round_iterations(&o, 8, 1) == 3 &&
               fb_opts_round_iterations(&o, 8, 2) == 2 && fb_opts_round_iterations(&o, 8, 3) == 2,
           "round shares");
    EXPECT(fb_opts_round_warmup(&o, 8, 0) == 5 && fb_opts_round_warmup(&o, 8, 3) == 5, "rwarm");
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
    /* every row of the table is an option some kernel takes, with a reader there */
    size_t nt = 0;
    const struct fb_optdef *tab = fb_opts_table(&nt);
    for (size_t i = 0; i < nt; i++)
        for (size_t k = i + 1; k < nt; k++)
            EXPECT(strcmp(tab[i].name, tab[k].name) && tab[i].id != tab[k].id, "dup %s",
                   tab[i].name);
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--bogus", NULL, NULL) == FB_OPTS_ERROR, "unknown");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", NULL, NULL) == FB_OPTS_ERROR, "missing");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--iterations", "0", NULL) == FB_OPTS_ERROR, "zero it");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--window", "-3", NULL) == FB_OPTS_ERROR, "neg window");
    EXPECT(parse(&o, FB_CLASS_LATENCY, "--help", NULL, NULL) == FB_OPTS_HELP, "help");

    return t_verdict();
}
