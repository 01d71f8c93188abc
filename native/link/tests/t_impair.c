/* t_impair: one rule's arithmetic on hand-made arrival times: the rate's serialisation and
 * drop-tail queue, CE marking above K (ECT frames only), delay and jitter bounds, netem's
 * reorder count, multipath delays, loss and duplication rates, and the parameter checks. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fbl.h"

#define T_NAME "t_impair"
#include "t_expect.h"

static struct fbl_rule rule(const char *text)
{
    struct fbl_params p;
    char err[256] = "";
    struct fbl_rule r;
    memset(&r, 0, sizeof r);
    if (fbl_params_parse(&p, text, err, sizeof err) != 0 || fbl_rule_init(&r, &p) != 0)
        fprintf(stderr, "rule '%s': %s\n", text, err);
    return r;
}

static int parse_fails(const char *text, const char *why)
{
    struct fbl_params p;
    char err[256] = "";
    int rc = fbl_params_parse(&p, text, err, sizeof err);
    if (rc == 0 || !strstr(err, why)) {
        fprintf(stderr, "  '%s' -> rc %d, '%s' (wanted '%s')\n", text, rc, err, why);
        return 0;
    }
    return 1;
}

int main(void)
{
    struct fbl_rng rng;
    fbl_rng_seed(&rng, 42);
    uint64_t rel;
    int ce;

    /* 1000 bit/s... rather 8 Mbit/s: a 1000-byte frame takes exactly 1 ms to leave */
    struct fbl_rule r = rule("rate_bps=8000000,queue_pkts=3");
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce) && rel == 1000000, "first %llu",
           (unsigned long long)rel);
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce) && rel == 2000000,
           "queued behind the first: %llu", (unsigned long long)rel);
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce) && rel == 3000000, "third");
    EXPECT(!fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce) && r.c.queue_drops == 1,
           "a fourth finds the queue of 3 full");
    /* at 1.5 ms the first has left: room for one */
    EXPECT(fbl_rule_schedule(&r, &rng, 1500000, 1000, -1, &rel, &ce) && rel == 4000000,
           "after one left: %llu", (unsigned long long)rel);
    EXPECT(r.c.queue_hwm_pkts == 3 && r.c.queue_hwm_bytes == 3000, "hwm %llu",
           (unsigned long long)r.c.queue_hwm_pkts);
    /* an idle link sends at once */
    EXPECT(fbl_rule_schedule(&r, &rng, 10000000, 500, -1, &rel, &ce) && rel == 10500000,
           "idle: %llu", (unsigned long long)rel);
    fbl_rule_free(&r);

    /* a byte limit */
    r = rule("rate_bps=8000000,queue_bytes=2500");
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce), "1000 of 2500");
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce), "2000 of 2500");
    EXPECT(!fbl_rule_schedule(&r, &rng, 0, 1000, -1, &rel, &ce), "3000 > 2500 dropped");
    EXPECT(fbl_rule_schedule(&r, &rng, 0, 400, -1, &rel, &ce), "2400 fits");
    fbl_rule_free(&r);

    /* CE marking: with K = 2, frames arriving to 2 or more queued are marked when ECT(0)
     * or ECT(1); a not-ECT frame is counted, never marked; CE stays CE uncounted */
    r = rule("rate_bps=8000000,queue_pkts=10,ecn_k=2");
    int marks[6];
    int ecn[6] = {2, 2, 2, 1, 0, 3};
    for (int i = 0; i < 6; i++) {
        fbl_rule_schedule(&r, &rng, 0, 1000, ecn[i], &rel, &ce);
        marks[i] = ce;
    }
    EXPECT(!marks[0] && !marks[1] && marks[2] && marks[3] && !marks[4] && !marks[5],
           "marks %d%d%d%d%d%d", marks[0], marks[1], marks[2], marks[3], marks[4], marks[5]);
    EXPECT(r.c.ce_marked == 2 && r.c.not_ect_over_k == 1 && r.c.ect_seen == 5,
           "ce %llu not-ect %llu ect %llu", (unsigned long long)r.c.ce_marked,
           (unsigned long long)r.c.not_ect_over_k, (unsigned long long)r.c.ect_seen);
    fbl_rule_free(&r);

    /* delay and jitter: always within delay +- jitter, and both halves used */
    r = rule("delay_ns=1000000,jitter_ns=200000");
    uint64_t lo = UINT64_MAX, hi = 0;
    double sum = 0;
    for (int i = 0; i < 20000; i++) {
        fbl_rule_schedule(&r, &rng, 0, 100, -1, &rel, &ce);
        lo = rel < lo ? rel : lo;
        hi = rel > hi ? rel : hi;
        sum += (double)rel;
    }
    EXPECT(lo >= 800000 && hi <= 1200000 && lo < 810000 && hi > 1190000, "range %llu..%llu",
           (unsigned long long)lo, (unsigned long long)hi);
    EXPECT(sum / 20000 > 995000 && sum / 20000 < 1005000, "mean %.0f", sum / 20000);
    fbl_rule_free(&r);

    /* multipath: round robin over 4 paths, path i adding i * 50 us */
    r = rule("delay_ns=100000,paths=4,path_step_ns=50000");
    uint64_t want[8] = {100000, 150000, 200000, 250000, 100000, 150000, 200000, 250000};
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        fbl_rule_schedule(&r, &rng, 0, 100, -1, &rel, &ce);
        ok &= rel == want[i];
    }
    EXPECT(ok, "multipath delays");
    fbl_rule_free(&r);

    /* netem's reorder model: with gap G and probability P, a fraction P / (1 + P (G - 1))
     * of the frames skip the delay (each cycle: G - 1 frames delayed, then a geometric wait
     * for the one sent at once) */
    struct { const char *text; double p; int gap; } nm[] = {
        {"delay_ns=1000,reorder_ppb=250000000", 0.25, 1},
        {"delay_ns=1000,reorder_ppb=500000000,gap=5", 0.5, 5},
        {"delay_ns=1000,reorder_ppb=1000000000,gap=10", 1.0, 10},
    };
    for (int k = 0; k < 3; k++) {
        r = rule(nm[k].text);
        int n = 100000, fast = 0;
        for (int i = 0; i < n; i++) {
            fbl_rule_schedule(&r, &rng, 0, 100, -1, &rel, &ce);
            fast += rel == 0;
        }
        double expect = nm[k].p / (1 + nm[k].p * (nm[k].gap - 1));
        double got = (double)fast / n;
        EXPECT(got > expect * 0.97 && got < expect * 1.03 && r.c.netem_reordered == (uint64_t)fast,
               "%s: %.4f of frames skipped the delay, model %.4f", nm[k].text, got, expect);
        fbl_rule_free(&r);
    }

    /* loss and duplication rates */
    r = rule("loss_ppb=100000000,dup_ppb=50000000");
    int n = 200000, lost = 0, dup = 0;
    for (int i = 0; i < n; i++) {
        int c = fbl_rule_copies(&r, &rng);
        lost += c == 0;
        dup += c == 2;
    }
    EXPECT(lost > n * 0.097 && lost < n * 0.103, "loss %.4f", (double)lost / n);
    /* duplication is drawn for the frames that were not lost */
    EXPECT(dup > n * 0.9 * 0.05 * 0.97 && dup < n * 0.9 * 0.05 * 1.03, "dup %.4f",
           (double)dup / n);
    fbl_rule_free(&r);
    r = rule("loss_ppb=1000000000");
    EXPECT(fbl_rule_copies(&r, &rng) == 0, "100%% loss");
    fbl_rule_free(&r);

    /* parameters: what is refused, and why */
    EXPECT(parse_fails("loss_ppb=1500000000", "above 100%"), "loss 150%%");
    EXPECT(parse_fails("delay_ns=-5", "non-negative"), "negative delay");
    EXPECT(parse_fails("window=2000", "reorder window"), "W too large");
    EXPECT(parse_fails("window=-1", "non-negative"), "W < 0");
    EXPECT(parse_fails("reorder_ppb=10", "needs a delay"), "reorder without delay");
    EXPECT(parse_fails("queue_pkts=10", "needs a rate"), "queue without rate");
    EXPECT(parse_fails("rate_bps=1000,queue_pkts=10,ecn_k=10", "below the queue"), "K >= q");
    EXPECT(parse_fails("paths=4", "delay step"), "paths without step");
    EXPECT(parse_fails("colour=red", "unknown key"), "unknown key");
    EXPECT(parse_fails("peer=10.0.0.300", "IPv4"), "bad peer");
    EXPECT(parse_fails("delay_ns", "key=value"), "no value");
    EXPECT(parse_fails("delay_ns=12abc", "non-negative"), "trailing junk");
    EXPECT(parse_fails("gap=99999999999", "too large"), "u32 overflow");
    struct fbl_params p;
    char err[256];
    EXPECT(fbl_params_parse(&p, "peer=10.77.3.5,delay_ns=200000,window=32", err, sizeof err) == 0 &&
               p.delay_ns == 200000 && p.window == 32 && p.gap == 1 && p.paths == 1,
           "a good rule: %s", err);
    return t_verdict();
}
