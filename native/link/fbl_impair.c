/* fbl_impair.c - what one rule does to a frame: loss, duplication, the rate's drop-tail queue
 * with CE marking, delay with jitter, netem's reorder model, multipath.
 *
 * Order, as netem's: loss and duplication first; then the rate's queue (where a frame waits
 * for the frames ahead of it, may be dropped when the queue is full, and is CE-marked above
 * K); then the delay, jitter, reorder and path, which only move the time a frame leaves.
 * Frames leave in time order, so jitter and multipath reorder them (netem's tfifo does too).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fbl.h"

/* ---- xoshiro256** seeded through splitmix64 (public-domain algorithms by Vigna) -------- */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fbl_rng_seed(struct fbl_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t fbl_rng_next(struct fbl_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

int fbl_rng_chance(struct fbl_rng *r, uint32_t ppb)
{
    if (ppb == 0)
        return 0;
    return (fbl_rng_next(r) % 1000000000ULL) < ppb;
}

double fbl_rng_unit(struct fbl_rng *r)
{
    return (double)(fbl_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- parameters ----------------------------------------------------------------------- */
#define PPB 1000000000U
/* Bounds against typing slips, not physics: a minute of delay, 1 Tbit/s. */
#define MAX_NS 60000000000ULL
#define MAX_RATE 1000000000000ULL

int fbl_params_check(const struct fbl_params *p, char *err, size_t n)
{
    if (p->delay_ns > MAX_NS || p->jitter_ns > MAX_NS || p->path_step_ns > MAX_NS ||
        p->hold_ns > MAX_NS) {
        snprintf(err, n, "a delay above 60 s");
        return -1;
    }
    if (p->loss_ppb > PPB || p->dup_ppb > PPB || p->reorder_ppb > PPB) {
        snprintf(err, n, "a probability above 100%% (%" PRIu32 ", %" PRIu32 ", %" PRIu32
                 " ppb)", p->loss_ppb, p->dup_ppb, p->reorder_ppb);
        return -1;
    }
    if (p->reorder_ppb && p->delay_ns == 0) {
        snprintf(err, n, "netem's reorder model sends some frames without the delay: it "
                 "needs a delay");
        return -1;
    }
    if (p->gap > 1000000 || p->paths > 64) {
        snprintf(err, n, "gap at most 10^6, paths at most 64");
        return -1;
    }
    if (p->paths > 1 && p->path_step_ns == 0) {
        snprintf(err, n, "multipath needs a delay step between paths");
        return -1;
    }
    if (p->rate_bps > MAX_RATE) {
        snprintf(err, n, "a rate above 1 Tbit/s");
        return -1;
    }
    if ((p->queue_pkts || p->queue_bytes || p->ecn_k) && p->rate_bps == 0) {
        snprintf(err, n, "a queue or an ECN threshold needs a rate (no rate, no queue)");
        return -1;
    }
    if (p->queue_pkts > 10000000 || p->queue_bytes > (1ULL << 34)) {
        snprintf(err, n, "a queue above 10^7 frames or 16 GiB");
        return -1;
    }
    if (p->ecn_k && p->queue_pkts && p->ecn_k >= p->queue_pkts) {
        snprintf(err, n, "ECN threshold K=%" PRIu32 " must be below the queue (%" PRIu32
                 " frames)", p->ecn_k, p->queue_pkts);
        return -1;
    }
    if (p->window > FBL_WINDOW_MAX) {
        snprintf(err, n, "reorder window W=%" PRIu32 " above %u", p->window, FBL_WINDOW_MAX);
        return -1;
    }
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int fbl_params_parse(struct fbl_params *p, const char *text, char *err, size_t n)
{
    *p = (struct fbl_params){.gap = 1, .paths = 1};
    char buf[1024];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, n, "rule too long");
        return -1;
    }
    strcpy(buf, text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, n, "'%s': expected key=value", tok);
            return -1;
        }
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        if (strcmp(key, "peer") == 0) {
            struct in_addr a;
            if (inet_pton(AF_INET, val, &a) != 1) {
                snprintf(err, n, "peer '%s': not an IPv4 address", val);
                return -1;
            }
            p->peer = a.s_addr;
            continue;
        }
        struct { const char *k; uint64_t *u64; uint32_t *u32; } keys[] = {
            {"delay_ns", &p->delay_ns, NULL},     {"jitter_ns", &p->jitter_ns, NULL},
            {"loss_ppb", NULL, &p->loss_ppb},     {"dup_ppb", NULL, &p->dup_ppb},
            {"reorder_ppb", NULL, &p->reorder_ppb}, {"gap", NULL, &p->gap},
            {"paths", NULL, &p->paths},           {"path_step_ns", &p->path_step_ns, NULL},
            {"rate_bps", &p->rate_bps, NULL},     {"queue_pkts", NULL, &p->queue_pkts},
            {"queue_bytes", &p->queue_bytes, NULL}, {"ecn_k", NULL, &p->ecn_k},
            {"window", NULL, &p->window},         {"hold_ns", &p->hold_ns, NULL},
        };
        size_t i;
        for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            if (strcmp(key, keys[i].k) != 0)
                continue;
            uint64_t v;
            if (parse_u64(val, &v) != 0) {
                snprintf(err, n, "%s='%s': not a non-negative integer", key, val);
                return -1;
            }
            if (keys[i].u64) {
                *keys[i].u64 = v;
            } else {
                if (v > UINT32_MAX) {
                    snprintf(err, n, "%s=%" PRIu64 ": too large", key, v);
                    return -1;
                }
                *keys[i].u32 = (uint32_t)v;
            }
            break;
        }
        if (i == sizeof keys / sizeof keys[0]) {
            snprintf(err, n, "unknown key '%s'", key);
            return -1;
        }
    }
    if (p->gap == 0)
        p->gap = 1;
    if (p->paths == 0)
        p->paths = 1;
    return fbl_params_check(p, err, n);
}

/* The queue's ring starts small and doubles: a limit of 10^7 frames costs nothing unless the
 * queue ever holds that many. */
#define Q_INIT 256

int fbl_rule_init(struct fbl_rule *r, const struct fbl_params *p)
{
    *r = (struct fbl_rule){.p = *p};
    if (p->rate_bps == 0)
        return 0;
    r->q_cap = Q_INIT;
    r->q_depart = malloc(r->q_cap * sizeof *r->q_depart);
    r->q_len = malloc(r->q_cap * sizeof *r->q_len);
    return (r->q_depart && r->q_len) ? 0 : -1;
}

void fbl_rule_free(struct fbl_rule *r)
{
    free(r->q_depart);
    free(r->q_len);
    r->q_depart = NULL;
    r->q_len = NULL;
}

int fbl_rule_copies(struct fbl_rule *r, struct fbl_rng *rng)
{
    if (fbl_rng_chance(rng, r->p.loss_ppb)) {
        r->c.lost++;
        return 0;
    }
    if (fbl_rng_chance(rng, r->p.dup_ppb)) {
        r->c.duplicated++;
        return 2;
    }
    return 1;
}

static int q_grow(struct fbl_rule *r)
{
    uint32_t cap = r->q_cap * 2;
    uint64_t *d = malloc(cap * sizeof *d);
    uint32_t *l = malloc(cap * sizeof *l);
    if (!d || !l) {
        free(d);
        free(l);
        return -1;
    }
    for (uint32_t i = 0; i < r->q_count; i++) {
        d[i] = r->q_depart[(r->q_head + i) % r->q_cap];
        l[i] = r->q_len[(r->q_head + i) % r->q_cap];
    }
    free(r->q_depart);
    free(r->q_len);
    r->q_depart = d;
    r->q_len = l;
    r->q_head = 0;
    r->q_cap = cap;
    return 0;
}

/* The rate's queue: frames that have not finished leaving by now are still in it. */
static int enqueue(struct fbl_rule *r, uint64_t now, uint32_t len, int ecn, uint64_t *depart,
                   int *mark_ce)
{
    while (r->q_count && r->q_depart[r->q_head] <= now) {
        r->q_bytes -= r->q_len[r->q_head];
        r->q_head = (r->q_head + 1) % r->q_cap;
        r->q_count--;
    }
    const struct fbl_params *p = &r->p;
    if ((p->queue_pkts && r->q_count >= p->queue_pkts) ||
        (p->queue_bytes && r->q_bytes + len > p->queue_bytes)) {
        r->c.queue_drops++;
        return 0;
    }
    if (r->q_count == r->q_cap && q_grow(r) != 0) {
        r->c.queue_drops++;
        return 0;
    }
    if (ecn > 0)
        r->c.ect_seen++;
    if (p->ecn_k && r->q_count >= p->ecn_k) {
        /* DCTCP's marking: the instantaneous queue above K, ECN-capable frames only */
        if (ecn == 1 || ecn == 2) {
            *mark_ce = 1;
            r->c.ce_marked++;
        } else if (ecn == 0) {
            r->c.not_ect_over_k++;
        }
    }
    uint64_t start = r->free_at_ns > now ? r->free_at_ns : now;
    /* rounded up: a link never sends faster than its rate */
    uint64_t tx = ((uint64_t)len * 8ULL * 1000000000ULL + p->rate_bps - 1) / p->rate_bps;
    *depart = start + tx;
    r->free_at_ns = *depart;
    uint32_t tail = (r->q_head + r->q_count) % r->q_cap;
    r->q_depart[tail] = *depart;
    r->q_len[tail] = len;
    r->q_count++;
    r->q_bytes += len;
    if (r->q_count > r->c.queue_hwm_pkts)
        r->c.queue_hwm_pkts = r->q_count;
    if (r->q_bytes > r->c.queue_hwm_bytes)
        r->c.queue_hwm_bytes = r->q_bytes;
    return 1;
}

int fbl_rule_schedule(struct fbl_rule *r, struct fbl_rng *rng, uint64_t now_ns, uint32_t len,
                      int ecn, uint64_t *release_ns, int *mark_ce)
{
    const struct fbl_params *p = &r->p;
    *mark_ce = 0;
    r->c.frames++;
    r->c.bytes += len;
    uint64_t t = now_ns;
    if (p->rate_bps && !enqueue(r, now_ns, len, ecn, &t, mark_ce))
        return 0;
    int64_t d = (int64_t)p->delay_ns;
    if (p->jitter_ns)
        d += (int64_t)((2.0 * fbl_rng_unit(rng) - 1.0) * (double)p->jitter_ns);
    if (p->reorder_ppb) {
        /* netem: frames count up to gap - 1 on the normal delay; from then each goes out
         * at once with the reorder probability, which restarts the count */
        if (r->netem_counter + 1 >= p->gap && fbl_rng_chance(rng, p->reorder_ppb)) {
            r->netem_counter = 0;
            r->c.netem_reordered++;
            d = 0;
        } else {
            r->netem_counter++;
        }
    }
    if (p->paths > 1) {
        d += (int64_t)(r->next_path * p->path_step_ns);
        r->next_path = (r->next_path + 1) % p->paths;
    }
    *release_ns = t + (uint64_t)(d > 0 ? d : 0);
    return 1;
}
