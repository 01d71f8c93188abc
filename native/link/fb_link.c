/* fb_link.c - fb-link: an impaired link between a testbed host and its switch, in user space.
 *
 *   fb-link --host-ns PATH --host-if eth0 --switch-ns PATH --switch-if p2 [--mtu N]
 *           [--rule out:KEY=V,...] [--rule in:KEY=V,...] [--status FILE] [--seed N]
 *           [--limit FRAMES] [--spin-us N]
 *
 * Attaches to two existing TAP devices, one in each network namespace (PATH: a file such as
 * /run/netns/NAME), and forwards frames between them: "out" is host -> switch, "in" is
 * switch -> host. A rule applies to the frames of its direction whose peer address (the
 * destination going out, the source coming in) is `peer`, or to all without one; the first
 * rule that matches wins, and frames no rule matches pass untouched. Rule keys are those of
 * struct fbl_params (integers: ns, parts per 10^9, bit/s, frames, bytes), e.g.
 *   --rule in:delay_ns=200000,paths=4,path_step_ns=50000,window=32,hold_ns=200000000
 *
 * The link stays in the switch's namespace. It writes its counters as one JSON object to
 * --status when it is ready, on SIGUSR1, and at exit (SIGTERM, SIGINT, SIGHUP), and at exit
 * to stdout too. Exit 2: bad arguments; 1: the devices could not be attached.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "fbl.h"

#define MAX_RULES 64
#define BATCH 64
#define FLOWS 4096
/* How often the windows are looked at for holes held too long: the hold time's resolution,
 * kept small against the default holds (twice a link's path spread, tens of us and up). */
#define HOLD_CHECK_NS 20000ULL
enum { OUT = 0, IN = 1 };
static const char *const DIR_NAME[2] = {"out", "in"};

/* The signal handlers' only business: flags the loop reads. */
static volatile sig_atomic_t want_status, want_stop;

struct pkt {
    struct pkt *next_free;
    uint64_t release_ns;
    uint64_t seq;           /* ties in release time keep arrival order */
    uint32_t len;           /* the frame, without the link header */
    int16_t rule;           /* -1: no rule matched */
    uint8_t has_key;
    struct fbl_flow_key key;
    uint8_t buf[];          /* link header, then the frame */
};

struct dir {
    int from, to;           /* fds: read from, write to */
    struct fbl_rule rules[MAX_RULES];
    int nrules;
    struct pkt **heap;
    uint32_t heap_n, heap_cap;
    struct fbl_flows tx_flows, rx_flows;
    struct fbl_rwin_stats rw;
    uint64_t held;          /* frames held by windows now */
    uint64_t hold_check_ns; /* when the windows are next looked at for expired holes */
    uint32_t *holding;      /* rx_flows slots whose window may hold frames (duplicates and
                               slots that stopped holding are dropped at the next scan) */
    uint32_t nholding, epoch;
    uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
    uint64_t unmatched, limit_drops, write_drops;
    uint64_t reordered_in, reordered_out; /* frames below their flow's highest msg_id so
                                             far, before and after the window */
};

struct link {
    struct dir d[2];
    struct fbl_rng rng;
    struct pkt *free_list;
    size_t frame_max;
    uint64_t seq;
    uint32_t limit;
    uint64_t spin_ns;
    uint64_t start_ns;
    uint64_t status_writes;
    const char *status_path;
    const char *host_if, *switch_if;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- frames in flight --------------------------------------------------------------------- */
static struct pkt *pkt_get(struct link *L)
{
    struct pkt *p = L->free_list;
    if (p) {
        L->free_list = p->next_free;
        return p;
    }
    return malloc(sizeof *p + FBL_HDR_LEN + L->frame_max);
}

static void pkt_put(struct link *L, struct pkt *p)
{
    p->next_free = L->free_list;
    L->free_list = p;
}

static int earlier(const struct pkt *a, const struct pkt *b)
{
    return a->release_ns < b->release_ns ||
           (a->release_ns == b->release_ns && a->seq < b->seq);
}

static int heap_push(struct dir *d, struct pkt *p)
{
    if (d->heap_n == d->heap_cap) {
        uint32_t cap = d->heap_cap ? d->heap_cap * 2 : 256;
        struct pkt **h = realloc(d->heap, cap * sizeof *h);
        if (!h)
            return -1;
        d->heap = h;
        d->heap_cap = cap;
    }
    uint32_t i = d->heap_n++;
    while (i > 0 && earlier(p, d->heap[(i - 1) / 2])) {
        d->heap[i] = d->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    d->heap[i] = p;
    return 0;
}

static struct pkt *heap_pop(struct dir *d)
{
    struct pkt *top = d->heap[0], *last = d->heap[--d->heap_n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= d->heap_n)
            break;
        if (c + 1 < d->heap_n && earlier(d->heap[c + 1], d->heap[c]))
            c++;
        if (!earlier(d->heap[c], last))
            break;
        d->heap[i] = d->heap[c];
        i = c;
    }
    if (d->heap_n)
        d->heap[i] = last;
    return top;
}

/* ---- the receiving half ------------------------------------------------------------------- */
struct deliver_ctx {
    struct link *L;
    struct dir *d;
};

static void count_order(struct fbl_flow *f, uint16_t id, int after, uint64_t *reordered)
{
    uint16_t *max = after ? &f->max_out : &f->max_in;
    uint8_t *seen = after ? &f->seen_out : &f->seen_in;
    if (*seen && (int16_t)(uint16_t)(id - *max) < 0) {
        (*reordered)++;
        return;
    }
    *max = id;
    *seen = 1;
}

static void deliver(void *ctx, void *pkt)
{
    struct deliver_ctx *c = ctx;
    struct pkt *p = pkt;
    struct dir *d = c->d;
    uint16_t id;
    if (p->has_key && fbl_hdr_get(p->buf, &id)) {
        struct fbl_flow *f = fbl_flows_get(&d->rx_flows, &p->key, p->release_ns, NULL, NULL);
        count_order(f, id, 1, &d->reordered_out);
    }
    ssize_t n = write(d->to, p->buf + FBL_HDR_LEN, p->len);
    if (n == (ssize_t)p->len) {
        d->tx_frames++;
        d->tx_bytes += p->len;
    } else {
        d->write_drops++;
    }
    pkt_put(c->L, p);
}

static void evict_flow(void *ctx, struct fbl_flow *f)
{
    struct deliver_ctx *c = ctx;
    if (f->rw.slot) {
        c->d->held -= f->rw.held;
        fbl_rwin_flush(&f->rw, deliver, ctx, &c->d->rw);
    }
}

static void note_holding(struct link *L, struct dir *d, struct fbl_flow *f, uint64_t now);

static void receive(struct link *L, struct dir *d, struct pkt *p, uint64_t now)
{
    struct deliver_ctx ctx = {L, d};
    uint16_t id;
    if (!p->has_key || !fbl_hdr_get(p->buf, &id)) {
        deliver(&ctx, p);
        return;
    }
    struct fbl_flow *f = fbl_flows_get(&d->rx_flows, &p->key, now, evict_flow, &ctx);
    count_order(f, id, 0, &d->reordered_in);
    const struct fbl_params *rp = p->rule >= 0 ? &d->rules[p->rule].p : NULL;
    unsigned w = rp ? rp->window : 0;
    if (w == 0 || p->key.proto != 6) { /* Algorithm 1 is for TCP connections */
        deliver(&ctx, p);
        return;
    }
    if (!f->rw.slot) {
        if (fbl_rwin_init(&f->rw, w) != 0) {
            deliver(&ctx, p);
            return;
        }
        f->hold_ns = rp->hold_ns; /* the flow keeps its first frame's rule's window */
    }
    unsigned before = f->rw.held;
    fbl_rwin_input(&f->rw, id, p, now, deliver, &ctx, &d->rw);
    d->held += f->rw.held;
    d->held -= before;
    note_holding(L, d, f, now);
}

/* Windows whose oldest hole has outlived its rule's hold time give it up; the list of
 * holding flows is compacted on the way. */
static void hold_check(struct link *L, struct dir *d, uint64_t now)
{
    struct deliver_ctx ctx = {L, d};
    uint32_t keep = 0;
    d->epoch++;
    for (uint32_t i = 0; i < d->nholding; i++) {
        uint32_t idx = d->holding[i];
        struct fbl_flow *f = &d->rx_flows.e[idx];
        if (!f->used || f->epoch == d->epoch)
            continue; /* a slot since emptied, or a flow this scan has already seen */
        if (!f->rw.held) {
            f->in_holding = 0; /* it holds nothing: off the list until it holds again */
            continue;
        }
        f->epoch = d->epoch;
        if (f->hold_ns && now - f->rw.held_since_ns >= f->hold_ns) {
            d->held -= f->rw.held;
            fbl_rwin_flush(&f->rw, deliver, &ctx, &d->rw);
        }
        if (f->rw.held)
            d->holding[keep++] = idx;
        else
            f->in_holding = 0;
    }
    d->nholding = keep;
}

static void note_holding(struct link *L, struct dir *d, struct fbl_flow *f, uint64_t now)
{
    if (f->in_holding || !f->rw.held)
        return;
    if (d->nholding == 2 * d->rx_flows.cap)
        hold_check(L, d, now); /* compacts: at most one entry per holding flow remains */
    d->holding[d->nholding++] = (uint32_t)(f - d->rx_flows.e);
    f->in_holding = 1;
}

/* ---- the sending half --------------------------------------------------------------------- */
static int match(const struct dir *d, int dir, const struct fbl_frame_info *fi)
{
    for (int r = 0; r < d->nrules; r++) {
        uint32_t peer = d->rules[r].p.peer;
        if (peer == 0 || (fi->is_ip && peer == (dir == OUT ? fi->key.dst : fi->key.src)))
            return r;
    }
    return -1;
}

/* One copy of a frame through its rule, into the heap of frames waiting to leave. */
static void schedule(struct link *L, struct dir *d, struct fbl_rule *r, struct pkt *p,
                     const struct fbl_frame_info *fi, uint64_t now)
{
    int ce = 0;
    if (d->heap_n >= L->limit) {
        d->limit_drops++;
    } else if (fbl_rule_schedule(r, &L->rng, now, p->len, fi->ecn, &p->release_ns, &ce)) {
        if (ce)
            fbl_frame_mark_ce(p->buf + FBL_HDR_LEN, fi->ip_off);
        p->seq = L->seq++;
        if (heap_push(d, p) == 0)
            return;
        d->limit_drops++;
    }
    pkt_put(L, p);
}

static void enter(struct link *L, int dir, struct pkt *p, uint64_t now)
{
    struct dir *d = &L->d[dir];
    struct fbl_frame_info fi;
    uint8_t *frame = p->buf + FBL_HDR_LEN;
    fbl_frame_parse(frame, p->len, &fi);
    p->has_key = (uint8_t)fi.is_ip;
    p->key = fi.key;
    if (fi.is_ip) {
        struct fbl_flow *f = fbl_flows_get(&d->tx_flows, &fi.key, now, NULL, NULL);
        fbl_hdr_put(p->buf, 1, f->next_msg++);
    } else {
        fbl_hdr_put(p->buf, 0, 0);
    }
    p->rule = (int16_t)match(d, dir, &fi);
    if (p->rule < 0) {
        d->unmatched++;
        p->release_ns = now;
        p->seq = L->seq++;
        if (heap_push(d, p) != 0)
            pkt_put(L, p);
        return;
    }
    struct fbl_rule *r = &d->rules[p->rule];
    int copies = fbl_rule_copies(r, &L->rng);
    if (copies == 0) {
        pkt_put(L, p);
        return;
    }
    struct pkt *dup = copies == 2 ? pkt_get(L) : NULL;
    if (dup)
        memcpy(dup, p, sizeof *p + FBL_HDR_LEN + p->len);
    schedule(L, d, r, p, &fi, now);
    if (dup)
        schedule(L, d, r, dup, &fi, now);
}

static void read_side(struct link *L, int dir, uint64_t now)
{
    struct dir *d = &L->d[dir];
    for (int i = 0; i < BATCH; i++) {
        struct pkt *p = pkt_get(L);
        if (!p)
            return;
        ssize_t n = read(d->from, p->buf + FBL_HDR_LEN, L->frame_max);
        if (n <= 0) {
            pkt_put(L, p);
            return;
        }
        p->len = (uint32_t)n;
        d->rx_frames++;
        d->rx_bytes += (uint64_t)n;
        enter(L, dir, p, now);
    }
}

/* ---- status ------------------------------------------------------------------------------- */
static void ip_text(uint32_t a, char *out)
{
    if (a == 0)
        strcpy(out, "any");
    else
        inet_ntop(AF_INET, &a, out, INET_ADDRSTRLEN);
}

static void write_status(struct link *L, FILE *f, const char *state)
{
    uint64_t now = now_ns();
    fprintf(f, "{\"type\":\"link\",\"impl\":\"fb-link\",\"state\":\"%s\",\"pid\":%ld,"
            "\"host_if\":\"%s\",\"switch_if\":\"%s\",\"uptime_s\":%.3f,\"status_seq\":%" PRIu64
            ",\"dirs\":{", state, (long)getpid(), L->host_if, L->switch_if,
            (double)(now - L->start_ns) / 1e9, L->status_writes);
    for (int k = 0; k < 2; k++) {
        struct dir *d = &L->d[k];
        fprintf(f, "%s\"%s\":{\"rx_frames\":%" PRIu64 ",\"rx_bytes\":%" PRIu64
                ",\"tx_frames\":%" PRIu64 ",\"tx_bytes\":%" PRIu64 ",\"unmatched\":%" PRIu64
                ",\"limit_drops\":%" PRIu64 ",\"write_drops\":%" PRIu64
                ",\"in_flight\":%" PRIu32 ",\"reordered_in\":%" PRIu64
                ",\"reordered_out\":%" PRIu64 ",\"flows\":%" PRIu32 ",\"flows_evicted\":%" PRIu64
                ",\"window\":{\"in_order\":%" PRIu64 ",\"buffered\":%" PRIu64
                ",\"released\":%" PRIu64 ",\"late\":%" PRIu64 ",\"slides\":%" PRIu64
                ",\"slid\":%" PRIu64 ",\"flushes\":%" PRIu64 ",\"flushed\":%" PRIu64
                ",\"dup\":%" PRIu64 ",\"held\":%" PRIu64 "},\"rules\":[",
                k ? "," : "", DIR_NAME[k], d->rx_frames, d->rx_bytes, d->tx_frames,
                d->tx_bytes, d->unmatched, d->limit_drops, d->write_drops, d->heap_n,
                d->reordered_in, d->reordered_out, d->rx_flows.count, d->rx_flows.evicted,
                d->rw.in_order, d->rw.buffered, d->rw.released, d->rw.late, d->rw.slides,
                d->rw.slid, d->rw.flushes, d->rw.flushed, d->rw.dup, d->held);
        for (int r = 0; r < d->nrules; r++) {
            const struct fbl_rule *ru = &d->rules[r];
            char peer[INET_ADDRSTRLEN];
            ip_text(ru->p.peer, peer);
            fprintf(f, "%s{\"peer\":\"%s\",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
                    ",\"lost\":%" PRIu64 ",\"duplicated\":%" PRIu64 ",\"queue_drops\":%" PRIu64
                    ",\"ce_marked\":%" PRIu64 ",\"ect_seen\":%" PRIu64
                    ",\"not_ect_over_k\":%" PRIu64 ",\"netem_reordered\":%" PRIu64
                    ",\"queue_hwm_frames\":%" PRIu64 ",\"queue_hwm_bytes\":%" PRIu64
                    ",\"params\":{\"delay_ns\":%" PRIu64 ",\"jitter_ns\":%" PRIu64
                    ",\"loss_ppb\":%" PRIu32 ",\"dup_ppb\":%" PRIu32 ",\"reorder_ppb\":%" PRIu32
                    ",\"gap\":%" PRIu32 ",\"paths\":%" PRIu32 ",\"path_step_ns\":%" PRIu64
                    ",\"rate_bps\":%" PRIu64 ",\"queue_pkts\":%" PRIu32 ",\"queue_bytes\":%" PRIu64
                    ",\"ecn_k\":%" PRIu32 ",\"window\":%" PRIu32 ",\"hold_ns\":%" PRIu64 "}}",
                    r ? "," : "", peer, ru->c.frames, ru->c.bytes, ru->c.lost,
                    ru->c.duplicated, ru->c.queue_drops, ru->c.ce_marked, ru->c.ect_seen,
                    ru->c.not_ect_over_k, ru->c.netem_reordered, ru->c.queue_hwm_pkts,
                    ru->c.queue_hwm_bytes, ru->p.delay_ns, ru->p.jitter_ns, ru->p.loss_ppb,
                    ru->p.dup_ppb, ru->p.reorder_ppb, ru->p.gap, ru->p.paths,
                    ru->p.path_step_ns, ru->p.rate_bps, ru->p.queue_pkts, ru->p.queue_bytes,
                    ru->p.ecn_k, ru->p.window, ru->p.hold_ns);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "}}\n");
}

static void save_status(struct link *L, const char *state)
{
    L->status_writes++;
    if (!L->status_path)
        return;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", L->status_path) >= (int)sizeof tmp)
        return;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    write_status(L, f, state);
    if (fclose(f) == 0)
        rename(tmp, L->status_path);
}

/* ---- setup ------------------------------------------------------------------------------ */
static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        want_status = 1;
    else
        want_stop = 1;
}

static int tap_attach(const char *ns_path, const char *ifname)
{
    int nsfd = open(ns_path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "fb-link: entering %s: %s\n", ns_path, strerror(errno));
        if (nsfd >= 0)
            close(nsfd);
        return -1;
    }
    close(nsfd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "fb-link: /dev/net/tun: %s\n", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
        fprintf(stderr, "fb-link: attaching to TAP %s in %s: %s\n", ifname, ns_path,
                strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void usage(void)
{
    fprintf(stderr, "usage: fb-link --host-ns PATH --host-if IF --switch-ns PATH --switch-if IF"
                    " [--mtu N] [--rule out|in:KEY=V,...]... [--status FILE] [--seed N]"
                    " [--limit FRAMES] [--spin-us N]\n");
}

static int parse_uint(const char *s, const char *what, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = (*s >= '0' && *s <= '9') ? strtoull(s, &end, 10) : 0;
    if (!(*s >= '0' && *s <= '9') || errno || *end || v > max) {
        fprintf(stderr, "fb-link: %s '%s': an integer 0..%" PRIu64 "\n", what, s, max);
        return -1;
    }
    *out = v;
    return 0;
}

static int add_rule(struct link *L, const char *arg)
{
    int dir;
    if (strncmp(arg, "out:", 4) == 0)
        dir = OUT;
    else if (strncmp(arg, "in:", 3) == 0)
        dir = IN;
    else {
        fprintf(stderr, "fb-link: --rule '%s': starts with out: or in:\n", arg);
        return -1;
    }
    struct dir *d = &L->d[dir];
    if (d->nrules == MAX_RULES) {
        fprintf(stderr, "fb-link: more than %d rules in one direction\n", MAX_RULES);
        return -1;
    }
    struct fbl_params p;
    char err[256];
    if (fbl_params_parse(&p, arg + (dir == OUT ? 4 : 3), err, sizeof err) != 0) {
        fprintf(stderr, "fb-link: --rule '%s': %s\n", arg, err);
        return -1;
    }
    if (fbl_rule_init(&d->rules[d->nrules], &p) != 0)
        return -1;
    d->nrules++;
    return 0;
}

int main(int argc, char **argv)
{
    static struct link L;
    const char *host_ns = NULL, *switch_ns = NULL;
    uint64_t mtu = 1500, seed = 1, limit = 10000, spin_us = 0;
    static const struct option opts[] = {
        {"host-ns", required_argument, 0, 'H'}, {"host-if", required_argument, 0, 'h'},
        {"switch-ns", required_argument, 0, 'S'}, {"switch-if", required_argument, 0, 's'},
        {"mtu", required_argument, 0, 'm'},      {"rule", required_argument, 0, 'r'},
        {"status", required_argument, 0, 'o'},   {"seed", required_argument, 0, 'e'},
        {"limit", required_argument, 0, 'l'},    {"spin-us", required_argument, 0, 'p'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'H': host_ns = optarg; break;
        case 'h': L.host_if = optarg; break;
        case 'S': switch_ns = optarg; break;
        case 's': L.switch_if = optarg; break;
        case 'm': bad = parse_uint(optarg, "--mtu", 65535, &mtu); break;
        case 'r': bad = add_rule(&L, optarg); break;
        case 'o': L.status_path = optarg; break;
        case 'e': bad = parse_uint(optarg, "--seed", UINT64_MAX, &seed); break;
        case 'l': bad = parse_uint(optarg, "--limit", 10000000, &limit); break;
        case 'p': bad = parse_uint(optarg, "--spin-us", 1000, &spin_us); break;
        default: bad = -1;
        }
        if (bad) {
            usage();
            return 2;
        }
    }
    if (optind != argc || !host_ns || !switch_ns || !L.host_if || !L.switch_if || mtu < 68 ||
        limit == 0 || strlen(L.host_if) >= IFNAMSIZ || strlen(L.switch_if) >= IFNAMSIZ) {
        usage();
        return 2;
    }
    L.frame_max = (size_t)mtu + 18; /* Ethernet header and one VLAN tag */
    L.limit = (uint32_t)limit;
    L.spin_ns = spin_us * 1000;
    fbl_rng_seed(&L.rng, seed);
    for (int k = 0; k < 2; k++) {
        if (fbl_flows_init(&L.d[k].tx_flows, FLOWS) || fbl_flows_init(&L.d[k].rx_flows, FLOWS))
            return 1;
        L.d[k].holding = malloc(2 * FLOWS * sizeof *L.d[k].holding);
        if (!L.d[k].holding)
            return 1;
    }

    int host_fd = tap_attach(host_ns, L.host_if);
    int sw_fd = host_fd < 0 ? -1 : tap_attach(switch_ns, L.switch_if);
    if (sw_fd < 0)
        return 1;
    L.d[OUT].from = host_fd;
    L.d[OUT].to = sw_fd;
    L.d[IN].from = sw_fd;
    L.d[IN].to = host_fd;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s = 0, sigs[] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP}; s < 4; s++)
        sigaction(sigs[s], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Delays are microseconds: the default 50 us timer slack would be most of them. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    L.start_ns = now_ns();
    save_status(&L, "running");
    struct pollfd pfd[2] = {{.fd = host_fd, .events = POLLIN}, {.fd = sw_fd, .events = POLLIN}};
    sigset_t none;
    sigemptyset(&none);
    while (!want_stop) {
        uint64_t now = now_ns();
        uint64_t next = UINT64_MAX;
        for (int k = 0; k < 2; k++) {
            struct dir *d = &L.d[k];
            while (d->heap_n && d->heap[0]->release_ns <= now)
                receive(&L, d, heap_pop(d), now);
            if (d->heap_n && d->heap[0]->release_ns < next)
                next = d->heap[0]->release_ns;
            if (d->held) {
                if (now >= d->hold_check_ns) {
                    hold_check(&L, d, now);
                    d->hold_check_ns = now + HOLD_CHECK_NS;
                }
                if (d->held && d->hold_check_ns < next)
                    next = d->hold_check_ns;
            }
        }
        if (want_status) {
            want_status = 0;
            save_status(&L, "running");
        }
        struct timespec ts, *tsp = NULL;
        if (next != UINT64_MAX) {
            uint64_t wait = next > now ? next - now : 0;
            /* wake early by the spin time and poll without sleeping from there: a sleeping
             * process wakes late by its scheduler's wake-up latency */
            wait = wait > L.spin_ns ? wait - L.spin_ns : 0;
            ts.tv_sec = (time_t)(wait / 1000000000ULL);
            ts.tv_nsec = (long)(wait % 1000000000ULL);
            tsp = &ts;
        }
        int n = ppoll(pfd, 2, tsp, &none);
        if (n < 0 && errno != EINTR)
            break;
        now = now_ns();
        if (n > 0) {
            if (pfd[0].revents & POLLIN)
                read_side(&L, OUT, now);
            if (pfd[1].revents & POLLIN)
                read_side(&L, IN, now);
            if ((pfd[0].revents | pfd[1].revents) & (POLLERR | POLLHUP | POLLNVAL))
                break;
        }
    }
    save_status(&L, "stopped");
    write_status(&L, stdout, "stopped");
    return 0;
}
