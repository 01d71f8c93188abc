/* fb_tp.c - the transport-kernel engine (see fb_tp.h). */
#include "fb_tp.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fb_loop.h"
#include "fb_pattern.h"
#include "fb_timer.h"

#define FB_TP_MAX_ITERS 2000000L /* duration mode: keeps one record line below ~20 MB */

static bool quiet_errors(const struct fb_tp *t)
{
    /* Under mpirun every rank parses; one message is enough. */
    int idx = fb_boot_early_index();
    (void)t;
    return idx > 0;
}

static int opt_fail(const struct fb_tp *t, const char *fmt, ...)
{
    if (!quiet_errors(t)) {
        va_list ap;
        fprintf(stderr, "%s: ", t->k->name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (try --help)\n");
    }
    return FB_OPTS_ERROR;
}

/* This layer's options (rows of the option table in fb_opts.c, whose types check the values). */
static int set_opt(void *ctx, enum fb_opt_id id, const struct fb_optval *v, char *why, size_t len)
{
    struct fb_tp_cfg *c = ctx;
    switch (id) {
    case FB_O_ROLE: c->server = v->l == 1; break;
    case FB_O_PEER: c->peer = v->text; break;
    case FB_O_BIND: c->bind = v->text; break;
    case FB_O_PORT: c->port = (int)v->l; break;
    case FB_O_CONNECT_TIMEOUT: c->connect_timeout_s = v->d; break;
    case FB_O_CPU: {
        char *end = NULL;
        errno = 0;
        long a = strtol(v->text, &end, 10), b = a;
        bool ok = !errno && end != v->text && a >= 0 && a <= 65535;
        if (ok && *end == ',') {
            const char *s2 = end + 1;
            b = strtol(s2, &end, 10);
            ok = !errno && end != s2 && !*end && b >= 0 && b <= 65535;
        } else if (ok && *end) {
            ok = false;
        }
        if (!ok) {
            snprintf(why, len, "--cpu wants A or A,B (CPU numbers), got '%s'", v->text);
            return -1;
        }
        c->cpu[0] = (int)a;
        c->cpu[1] = (int)b;
        break;
    }
    case FB_O_DURATION: c->duration_s = v->d; break;
    case FB_O_INTERVAL: c->interval_s = v->d, c->interval_set = true; break;
    case FB_O_OMIT: c->omit_s = v->d, c->omit_set = true; break;
    case FB_O_DISPLACEMENT_THRESHOLD: c->displacement_dt = (int)v->l; break;
    case FB_O_POLL: c->poll = true; break;
    case FB_O_STREAMS: c->streams = (int)v->l; break;
    case FB_O_SNDBUF: c->sndbuf = (long)v->z; break;
    case FB_O_RCVBUF: c->rcvbuf = (long)v->z; break;
    case FB_O_PATTERN: c->pattern = v->text; break;
    case FB_O_UDP_TIMEOUT: c->udp_timeout_ms = v->d; break;
    case FB_O_DEVICE: c->device = v->text; break;
    case FB_O_OP: c->op = v->text; break;
    case FB_O_TLS: c->tls = v->text; break;
    case FB_O_NET_DEVICES: c->net_devices = v->text; break;
    case FB_O_PROVIDER: c->provider = v->text; break;
    case FB_O_ENDPOINT: c->endpoint = v->text; break;
    case FB_O_NODELAY: c->nodelay = true; break;
    case FB_O_QUICKACK: c->quickack = true; break;
    case FB_O_ZEROCOPY: c->zerocopy = true; break;
    default: break;
    }
    return 0;
}

/* Take this layer's options out of argv; the rest goes to the shared fb_opts parser. */
static int parse(struct fb_tp *t, int argc, char **argv)
{
    const struct fb_tp_kernel *k = t->k;
    struct fb_tp_cfg *c = &t->cfg;
    c->connect_timeout_s = 60;
    c->interval_s = 0.1;
    c->displacement_dt = 64;
    c->omit_s = 0.2;
    c->cpu[0] = c->cpu[1] = -1;
    c->streams = 4;
    c->pattern = "pingpong";
    c->udp_timeout_ms = 200;
    c->op = "send";
    c->endpoint = "rdm";

    struct fb_defaults d = fb_defaults_for(k->cls);
    d.sizes = t->default_sizes;
    FILE *err = quiet_errors(t) ? NULL : stderr;
    char help[2048];
    snprintf(help, sizeof(help),
             "%s: both sides get the same options; the launcher adds --role, --peer, --bind\n"
             "and --port.\n%s", k->name, k->help ? k->help : "");
    struct fb_own_opts own = {.scope = FB_SC_TP | k->opts, .set = set_opt, .ctx = c,
                              .help = help};
    enum fb_opts_status st =
        fb_opts_parse_own(&t->opts, &d, k->name, 0, &own, argc, argv, stdout, err);
    if (st != FB_OPTS_OK)
        return st;
    for (int i = 0; i < t->opts.nsizes; i++) {
        size_t s = t->opts.sizes[i];
        if (s < k->size_floor || (k->size_ceil && s > k->size_ceil)) {
            char lim[64];
            snprintf(lim, sizeof(lim), "%zu..%zu", k->size_floor, k->size_ceil);
            return opt_fail(t, "size %zu is outside what %s can send (%s bytes)", s, k->name,
                            lim);
        }
    }
    /* A kernel with a time mode streams for a duration unless a count is asked for. */
    t->time_mode = k->run_for && t->opts.iterations < 0;
    if (t->time_mode) {
        if (c->duration_s <= 0)
            c->duration_s = 2.0;
        if (t->opts.validate)
            return opt_fail(t, "--validate needs the count mode (--iterations N): the time mode "
                            "streams with no pause to check in");
        if (t->opts.warmup >= 0)
            return opt_fail(t, "--warmup counts iterations of the count mode (--iterations N); "
                            "the time mode leaves --omit seconds out");
        if (c->duration_s / (double)t->opts.rounds < c->interval_s)
            return opt_fail(t, "--duration (per round) is shorter than one --interval");
    } else if (c->interval_set || c->omit_set) {
        return opt_fail(t, "--interval and --omit apply to the time mode (no --iterations)");
    }
    if (!fb_boot_is_mpi() && !c->server && !c->peer)
        return opt_fail(t, "the client needs --peer ADDRESS (and --port)");
    return FB_OPTS_OK;
}

void fb_tp_die(struct fb_tp *t, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s[%s]: ", t->k->name, t->index == 1 ? "server" : "client");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stdout);
    _exit(1);
}

void fb_tp_skip(struct fb_tp *t, const char *reason)
{
    struct fb_json j = {0};
    fb_json_begin(&j, "skip");
    fb_json_str(&j, "kernel", t->k->name);
    fb_json_str(&j, "reason", reason);
    fb_json_end(&j, stdout);
    fb_json_free(&j);
    fprintf(stderr, "%s: skipped: %s\n", t->k->name, reason);
    if (t->booted && t->boot.finalize)
        t->boot.finalize(&t->boot);
    exit(77);
}

void fb_tp_exchange(struct fb_tp *t, const void *in, size_t len, void *out, size_t cap,
                    size_t *got)
{
    size_t dummy;
    if (t->boot.exchange(&t->boot, in, len, out, cap, got ? got : &dummy))
        fb_tp_die(t, "bootstrap exchange with the peer failed");
}

void fb_tp_fill(struct fb_tp *t, void *buf, size_t len, uint64_t off0, size_t size, long iter)
{
    fb_pattern_fill(buf, len, off0, size, iter, t->index);
}

void fb_tp_check(struct fb_tp *t, void *buf, size_t len, uint64_t off0, size_t size, long iter)
{
    if (t->corrupt && !t->corrupted && t->index == 1 && len) {
        ((unsigned char *)buf)[len / 2] ^= 0x5a;
        t->corrupted = true;
    }
    uint8_t exp = 0, got = 0;
    long long bad = fb_pattern_check(buf, len, off0, size, iter, 1 - t->index, &exp, &got);
    if (bad < 0)
        return;
    struct fb_json j = {0};
    fb_json_begin(&j, "error");
    fb_json_str(&j, "kernel", t->k->name);
    fb_json_uint(&j, "size", size);
    fb_json_int(&j, "iteration", iter);
    fb_json_int(&j, "rank", t->index);
    fb_json_int(&j, "offset", (long long)off0 + bad);
    fb_json_int(&j, "expected", exp);
    fb_json_int(&j, "got", got);
    fb_json_end(&j, stdout);
    fb_json_free(&j);
    fprintf(stderr, "%s: validation failed on the %s: size %zu iteration %ld offset %lld: "
            "expected %u, got %u\n", t->k->name, t->index ? "server" : "client", size, iter,
            (long long)off0 + bad, exp, got);
    fflush(stdout);
    _exit(3);
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static void pin(struct fb_tp *t)
{
    int cpu = t->cfg.cpu[t->index];
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set))
        fb_tp_die(t, "cannot pin to CPU %d: %s", cpu, strerror(errno));
}

static void emit_meta(struct fb_tp *t)
{
    struct fb_json *j = &t->json;
    const struct fb_tp_kernel *k = t->k;
    const char *hosts[2] = {t->host[0], t->host[1]};
    fb_json_begin(j, "meta");
    fb_json_str(j, "kernel", k->name);
    fb_json_int(j, "ranks", 2);
    fb_json_str(j, "bootstrap", t->boot.name);
    fb_json_str_array(j, "hosts", hosts, 2);
    fb_json_str(j, "timer", FB_TIMER_NAME);
    fb_json_double(j, "timer_overhead_us", fb_timer_overhead_us(1001), 4);
    fb_json_int(j, "window", t->opts.window);
    fb_json_bool(j, "validate", t->opts.validate);
    if (t->cfg.duration_s > 0)
        fb_json_double(j, "duration_s", t->cfg.duration_s, 3);
    if (k->run_for) {
        fb_json_str(j, "mode", t->time_mode ? "time" : "count");
        if (t->time_mode) {
            fb_json_double(j, "interval_s", t->cfg.interval_s, 3);
            fb_json_double(j, "omit_s", t->cfg.omit_s, 3);
        }
    }
    if (k->opts & FB_OPT_REORDER)
        fb_json_int(j, "displacement_threshold", t->cfg.displacement_dt);
    if (k->opts & FB_OPT_POLL)
        fb_json_str(j, "receive_mode", t->cfg.poll ? "poll" : "blocking");
    fb_json_int(j, "cpu_client", t->cfg.cpu[0]);
    fb_json_int(j, "cpu_server", t->cfg.cpu[1]);
    if (k->opts & FB_OPT_STREAMS)
        fb_json_int(j, "streams", t->cfg.streams);
    if (k->opts & FB_OPT_NODELAY)
        fb_json_bool(j, "nodelay", t->cfg.nodelay);
    if (k->opts & FB_OPT_QUICKACK)
        fb_json_bool(j, "quickack", t->cfg.quickack);
    if (k->opts & FB_OPT_ZEROCOPY)
        fb_json_bool(j, "zerocopy", t->cfg.zerocopy);
    if (k->opts & FB_OPT_PATTERN)
        fb_json_str(j, "pattern", t->cfg.pattern);
    if (k->meta)
        k->meta(t, j);
    fb_json_end(j, stdout);
}

static void emit_side(struct fb_json *j, const char *who, const struct fb_tp_side *s,
                      double bytes)
{
    char key[48];
    double cpu = s->user_s + s->sys_s;
    snprintf(key, sizeof(key), "%s_cpu_user_s", who);
    fb_json_double(j, key, s->user_s, 6);
    snprintf(key, sizeof(key), "%s_cpu_sys_s", who);
    fb_json_double(j, key, s->sys_s, 6);
    /* CPU utilisation of one core over the timed part, and netperf's service demand (CPU
     * seconds per GB moved, GB = 1e9 bytes). */
    snprintf(key, sizeof(key), "%s_cpu_util", who);
    fb_json_double(j, key, s->wall_s > 0 ? cpu / s->wall_s : NAN, 4);
    snprintf(key, sizeof(key), "%s_cpu_s_per_gb", who);
    fb_json_double(j, key, bytes > 0 ? cpu / (bytes / 1e9) : NAN, 6);
    /* the peak resident set at the end of the size (a launch's peak: a sweep's later sizes
     * carry the largest so far; peak_rss_mib): the buffers' footprint, which shows that a
     * validated run keeps a plain run's */
    snprintf(key, sizeof(key), "%s_max_rss_mib", who);
    fb_json_double(j, key, s->max_rss_mib, 1);
}

/* One iteration, with --validate's fill, barrier and check around it (never inside it). */
static int iteration(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    const struct fb_tp_kernel *k = t->k;
    if (t->opts.validate && (k->fill || k->check)) {
        if (k->fill)
            k->fill(t, size, iter);
        if (k->sync ? k->sync(t, size) : t->boot.spin_barrier(&t->boot))
            fb_tp_die(t, "barrier between validated iterations failed");
    }
    if (k->iterate(t, size, iter, timed, sample))
        return -1;
    if (t->opts.validate && k->check)
        k->check(t, size, iter);
    return 0;
}

/* This process's peak resident set in MiB: VmHWM, the high-water mark of this address space,
 * which exec starts afresh. getrusage's ru_maxrss also keeps the peak of the image before
 * exec (Linux carries it across execve): a kernel started by the Python launcher read ~30 MiB
 * at 4 MiB whether it held 8 MiB of buffers or 30, which hid the footprint this field shows.
 * ru_maxrss where /proc cannot be read. */
static double peak_rss_mib(const struct rusage *r)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (kb >= 0 ? kb : (double)r->ru_maxrss) / 1024.0; /* Linux: both in kB */
}

/* What one size measured, before the record: samples and this side's figures. */
struct measured {
    double *times;
    long iters, warm;
    struct fb_settle_rule rule; /* the warm-up's: warm is what it used */
    double pace_us; /* --duration in count mode: the warm-up's pace */
    struct fb_tp_side me;
};

static double tv_diff(struct timeval a, struct timeval b)
{
    return tv_s(b) - tv_s(a);
}

struct warm {
    struct fb_tp *t;
    size_t size;
};

static int warm_iterate(void *ctx, long i, long end, double *sample)
{
    struct warm *w = ctx;
    w->t->iter_end = end; /* no iteration prepares one beyond its warm-up block */
    return iteration(w->t, w->size, i, false, sample);
}

/* The client times; its verdict reaches the server over the bootstrap channel. */
static int warm_agree(void *ctx, bool *more)
{
    struct warm *w = ctx;
    char mine = *more, peer = 0;
    size_t got = 0;
    fb_tp_exchange(w->t, &mine, 1, &peer, 1, &got);
    if (got != 1)
        return -1;
    *more = mine || peer;
    return 0;
}

/* Count mode: the warm-up (settled or fixed: fb_settle.h), then a counted (or
 * --duration-paced) timed loop. */
static int measure_count(struct fb_tp *t, size_t size, long round, double duration_s,
                         struct measured *m)
{
    (void)round; /* every round gets the size's full warm-up rule */
    m->rule = fb_opts_warmup_rule(&t->opts, size);
    m->iters = fb_opts_round_iterations(&t->opts, size, round);
    if (duration_s > 0 && m->rule.cap < 1)
        m->rule = fb_settle_fixed(1);
    double w0 = fb_now_us();
    struct warm w = {.t = t, .size = size};
    struct fb_warmup_ops ops = {.iterate = warm_iterate, .agree = warm_agree, .ctx = &w,
                                .timing = t->index == 0};
    m->warm = fb_warmup_run(&m->rule, &ops);
    if (m->warm < 0)
        return -1;
    if (duration_s > 0) {
        /* The client turns the duration into a count from its warm-up pace and tells the
         * server, so both sides run the same loop with no end-of-run message in the data. */
        long n = 0;
        if (t->index == 0) {
            double per = (fb_now_us() - w0) / (double)m->warm;
            m->pace_us = per > 0.01 ? per : 0.01;
            double want = duration_s * 1e6 / m->pace_us;
            n = want < 1 ? 1 : (want > FB_TP_MAX_ITERS ? FB_TP_MAX_ITERS : (long)want);
        }
        long peer_n = 0;
        fb_tp_exchange(t, &n, sizeof(n), &peer_n, sizeof(peer_n), NULL);
        m->iters = t->index == 0 ? n : peer_n;
    }
    m->times = calloc((size_t)m->iters + 1, sizeof(*m->times));
    if (!m->times)
        fb_tp_die(t, "out of memory for %ld samples", m->iters);

    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    t->iter_end = m->warm + m->iters;
    double t0 = fb_now_us();
    for (long i = 0; i < m->iters; i++)
        if (iteration(t, size, m->warm + i, true, &m->times[i]))
            return -1;
    double t1 = fb_now_us();
    getrusage(RUSAGE_SELF, &r1);
    m->me.user_s = tv_diff(r0.ru_utime, r1.ru_utime);
    m->me.sys_s = tv_diff(r0.ru_stime, r1.ru_stime);
    m->me.wall_s = (t1 - t0) * 1e-6;
    m->me.max_rss_mib = peak_rss_mib(&r1);
    return 0;
}

/* Time mode: the kernel streams for --omit + this round's share of --duration and returns
 * per-interval samples; it fills this side's figures over the part after --omit. */
static int measure_time(struct fb_tp *t, size_t size, double duration_s, struct measured *m)
{
    struct fb_tp_timed tm = {.omit_s = t->cfg.omit_s, .duration_s = duration_s,
                             .interval_s = t->cfg.interval_s};
    if (t->k->run_for(t, size, &tm, &m->me))
        return -1;
    m->times = tm.times;
    m->iters = tm.n;
    m->warm = 0;
    return 0;
}

void fb_tp_usage_since(struct fb_tp_side *me, const struct rusage *r0, double t0_us)
{
    struct rusage r1;
    getrusage(RUSAGE_SELF, &r1);
    me->user_s = tv_diff(r0->ru_utime, r1.ru_utime);
    me->sys_s = tv_diff(r0->ru_stime, r1.ru_stime);
    me->wall_s = (fb_now_us() - t0_us) * 1e-6;
    me->max_rss_mib = peak_rss_mib(&r1);
}

static int run_size(struct fb_tp *t, size_t size, long round)
{
    const struct fb_tp_kernel *k = t->k;
    /* --duration is per size: each round runs its share of it. */
    double duration_s = t->cfg.duration_s / (double)t->opts.rounds;
    if (fb_opts_round_iterations(&t->opts, size, round) == 0 && duration_s <= 0 &&
        !t->time_mode)
        return 0;
    t->bytes_per_sample = t->messages_per_sample = t->bytes_per_iteration = 0;
    if (k->begin_size && k->begin_size(t, size))
        return -1;
    if (t->boot.barrier(&t->boot))
        fb_tp_die(t, "bootstrap barrier failed");
    struct measured m = {0};
    if (t->time_mode ? measure_time(t, size, duration_s, &m)
                     : measure_count(t, size, round, duration_s, &m))
        return -1;

    struct fb_tp_side peer = {0};
    if (k->end_size)
        k->end_size(t, size, &m.me);
    size_t got = 0;
    fb_tp_exchange(t, &m.me, sizeof(m.me), &peer, sizeof(peer), &got);
    if (got != sizeof(peer))
        fb_tp_die(t, "the peer sent %zu bytes of statistics, expected %zu", got, sizeof(peer));

    if (t->index == 0) {
        struct fb_json *j = &t->json;
        double moved = t->bytes_per_iteration * (double)m.iters;
        struct fb_result_head h = {
            .kernel = k->name, .size = size, .iterations = m.iters, .warmup = m.rule.cap,
            .warmup_used = m.warm, .settled = !fb_settle_is_fixed(&m.rule),
            .datatype = "bytes", .count = size, .bytes_per_sample = t->bytes_per_sample,
            .messages_per_sample = t->messages_per_sample, .round = round,
        };
        fb_result_begin(j, &t->opts, &h);
        fb_json_double(j, "bytes_moved", moved, 0);
        fb_json_double(j, "timed_s", m.me.wall_s, 6);
        if (!t->time_mode && duration_s > 0)
            fb_json_double(j, "warmup_pace_us", m.pace_us, 4);
        /* every record says how tcp.latency received (compared with MPI numbers, which poll) */
        if (k->opts & FB_OPT_POLL)
            fb_json_str(j, "receive_mode", t->cfg.poll ? "poll" : "blocking");
        /* bandwidth kernels: the whole timed part's rate, as OSU and iperf3 report it */
        if (k->cls == FB_CLASS_BANDWIDTH && m.me.wall_s > 0)
            fb_json_double(j, "osu_mb_s", t->bytes_per_sample * (double)m.iters /
                                              (m.me.wall_s * 1e6), 3);
        emit_side(j, "client", &m.me, moved);
        emit_side(j, "server", &peer, moved);
        if (k->result)
            k->result(t, j, size, m.iters, &m.me, &peer);
        fb_json_double_array(j, "times", m.times, (size_t)m.iters, 4);
        if (fb_json_end(j, stdout))
            fb_tp_die(t, "cannot write a result record");
    }
    free(m.times);
    return 0;
}

int fb_tp_main(const struct fb_tp_kernel *k, const char *sizes, int argc, char **argv)
{
    struct fb_tp t;
    memset(&t, 0, sizeof(t));
    t.k = k;
    t.default_sizes = sizes;
    t.t_start_us = fb_now_us();
    int st = parse(&t, argc, argv);
    if (st == FB_OPTS_HELP)
        return 0;
    if (st != FB_OPTS_OK)
        return 2;
    t.index = t.cfg.server ? 1 : 0;
    const char *c = getenv("FABENCH_CORRUPT");
    t.corrupt = c && !strcmp(c, "1");

    if (k->precheck && k->precheck(&t))
        return 1;
    struct fb_boot_cfg bc = {
        .server = t.cfg.server, .peer = t.cfg.peer, .bind = t.cfg.bind, .port = t.cfg.port,
        .timeout_s = t.cfg.connect_timeout_s, .kernel = k->name,
    };
    if (fb_boot_init(&t.boot, &bc, &argc, &argv))
        return 1;
    t.booted = true;
    t.index = t.boot.index;
    pin(&t);

    struct utsname u;
    char me[256] = "?";
    if (uname(&u) == 0)
        snprintf(me, sizeof(me), "%s", u.nodename);
    fb_tp_exchange(&t, me, strlen(me) + 1, t.host[1 - t.index], sizeof(t.host[0]) - 1, NULL);
    snprintf(t.host[t.index], sizeof(t.host[0]), "%s", me);

    if (k->setup && k->setup(&t))
        fb_tp_die(&t, "set-up failed");
    if (t.index == 0)
        emit_meta(&t);
    for (long round = 0; round < t.opts.rounds; round++)
        for (int i = 0; i < t.opts.nsizes; i++)
            if (run_size(&t, t.opts.sizes[i], round))
                fb_tp_die(&t, "size %zu failed", t.opts.sizes[i]);
    if (k->teardown)
        k->teardown(&t);
    t.boot.barrier(&t.boot);
    if (t.index == 0) {
        fb_json_begin(&t.json, "end");
        fb_json_str(&t.json, "kernel", k->name);
        fb_json_double(&t.json, "elapsed_s", (fb_now_us() - t.t_start_us) * 1e-6, 3);
        fb_json_end(&t.json, stdout);
    }
    t.boot.finalize(&t.boot);
    fb_json_free(&t.json);
    fb_opts_free(&t.opts);
    return 0;
}
