/* t_reorder_window: Algorithm 1 of document 001 on hand-made msg_id sequences: in order, a hole
 * filled late, late packets, the slide past a lost packet, duplicates, the hold flush, and
 * the 16-bit wrap. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fbl.h"

#define T_NAME "t_reorder_window"
#include "t_expect.h"

/* Packets are their own msg_ids (stored in an array, so they have addresses). */
struct out {
    unsigned ids[256];
    int n;
};

static void record(void *ctx, void *pkt)
{
    struct out *o = ctx;
    if (o->n < 256)
        o->ids[o->n++] = *(uint16_t *)pkt;
}

static void count_cb(void *ctx, void *pkt)
{
    unsigned char *seen = ctx;
    seen[*(uint16_t *)pkt]++;
}

struct run {
    struct fbl_rwin rw;
    struct fbl_rwin_stats st;
    struct out out;
    uint16_t store[256];
    int used;
};

static void feed(struct run *r, const unsigned *ids, int n)
{
    for (int i = 0; i < n; i++) {
        uint16_t *p = &r->store[r->used++];
        *p = (uint16_t)ids[i];
        fbl_rwin_input(&r->rw, *p, p, (uint64_t)i, record, &r->out, &r->st);
    }
}

static int same(const struct out *o, const unsigned *want, int n)
{
    if (o->n != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (o->ids[i] != want[i])
            return 0;
    return 1;
}

static void show(const char *what, const struct out *o)
{
    fprintf(stderr, "  %s delivered:", what);
    for (int i = 0; i < o->n; i++)
        fprintf(stderr, " %u", o->ids[i]);
    fputc('\n', stderr);
}

#define CASE(name, w, in, want)                                                                \
    do {                                                                                       \
        static const unsigned in_[] = in, want_[] = want;                                      \
        struct run r;                                                                          \
        memset(&r, 0, sizeof r);                                                               \
        EXPECT(fbl_rwin_init(&r.rw, w) == 0, "init");                                          \
        feed(&r, in_, (int)(sizeof in_ / sizeof in_[0]));                                      \
        int ok = same(&r.out, want_, (int)(sizeof want_ / sizeof want_[0]));                   \
        EXPECT(ok, "%s", name);                                                                \
        if (!ok)                                                                               \
            show(name, &r.out);                                                                \
        last = r.st;                                                                           \
        last_held = r.rw.held;                                                                 \
        last_next = r.rw.next_id;                                                              \
        fbl_rwin_free(&r.rw);                                                                  \
    } while (0)
#define L(...) {__VA_ARGS__}

int main(void)
{
    struct fbl_rwin_stats last;
    unsigned last_held;
    uint16_t last_next;

    CASE("in order", 4, L(0, 1, 2, 3), L(0, 1, 2, 3));
    EXPECT(last.in_order == 4 && last.buffered == 0, "in_order %llu",
           (unsigned long long)last.in_order);

    /* 2 overtakes 1: held until 1 comes, then both go, in order */
    CASE("swap", 4, L(0, 2, 1, 3), L(0, 1, 2, 3));
    EXPECT(last.buffered == 1 && last.released == 1, "buffered %llu released %llu",
           (unsigned long long)last.buffered, (unsigned long long)last.released);

    /* a whole burst reversed inside the window comes out sorted */
    CASE("reversed burst", 8, L(0, 5, 4, 3, 2, 1, 6), L(0, 1, 2, 3, 4, 5, 6));

    /* the first packet of a flow sets next_id, whatever its value */
    CASE("starts anywhere", 4, L(100, 102, 101), L(100, 101, 102));

    /* 1 is lost; 2..4 fill the window (W=3); 5 is beyond next_id + W = 4: the window
     * slides past 1, delivering 2, 3, 4, and then 5 itself is next */
    CASE("slide past a loss", 3, L(0, 2, 3, 4, 5), L(0, 2, 3, 4, 5));
    EXPECT(last.slides == 1 && last.slid == 3 && last.in_order == 2 && last_held == 0 &&
               last_next == 6,
           "slides %llu slid %llu next %u held %u", (unsigned long long)last.slides,
           (unsigned long long)last.slid, last_next, last_held);

    /* the slide stops at the next hole: 1 and 3 lost; 2 is delivered by the slide, 4 and 5
     * stay held behind 3 (next_id + W = 3 + 2 = 5 now covers 5) */
    CASE("slide stops at the next hole", 2, L(0, 2, 4, 5), L(0, 2));
    EXPECT(last_held == 2 && last_next == 3, "held %u next %u", last_held, last_next);

    /* 1 arrives after the slide gave it up: late, delivered at once */
    CASE("late after slide", 2, L(0, 2, 3, 4, 1, 5), L(0, 2, 3, 4, 1, 5));
    EXPECT(last.late == 1, "late %llu", (unsigned long long)last.late);

    /* a packet far ahead slides the window over several holes at once */
    CASE("long slide", 4, L(0, 2, 4, 20), L(0, 2, 4));
    EXPECT(last_next == 16 && last_held == 1, "next %u held %u", last_next, last_held);

    /* a duplicate of a held packet goes straight through; the held one stays */
    CASE("duplicate of a held packet", 4, L(0, 2, 2, 1), L(0, 2, 1, 2));
    EXPECT(last.dup == 1, "dup %llu", (unsigned long long)last.dup);

    /* a duplicate of a delivered packet is late */
    CASE("duplicate of a delivered packet", 4, L(0, 1, 1, 2), L(0, 1, 1, 2));

    /* across the 16-bit wrap: 65535 -> 0 is one step */
    CASE("wrap", 4, L(65533, 65535, 65534, 1, 0, 2), L(65533, 65534, 65535, 0, 1, 2));
    CASE("slide across the wrap", 2, L(65534, 0, 1, 2), L(65534, 0, 1, 2));
    EXPECT(last_next == 3, "next %u", last_next);

    /* W = 1: only the very next-but-one may wait */
    CASE("W=1", 1, L(0, 2, 1, 4, 5), L(0, 1, 2, 4, 5));

    /* the hold flush: a hole never filled; flush delivers the held ones in order and moves
     * next_id past them, so the lost packet arriving after all is late */
    {
        struct run r;
        memset(&r, 0, sizeof r);
        EXPECT(fbl_rwin_init(&r.rw, 8) == 0, "init");
        static const unsigned in[] = {0, 3, 2, 5};
        feed(&r, in, 4);
        EXPECT(r.out.n == 1 && r.rw.held == 3, "before flush: %d out, %u held", r.out.n,
               r.rw.held);
        fbl_rwin_flush(&r.rw, record, &r.out, &r.st);
        static const unsigned want[] = {0, 2, 3, 5};
        EXPECT(same(&r.out, want, 4), "flush order");
        EXPECT(r.rw.held == 0 && r.rw.next_id == 6 && r.st.flushed == 3 && r.st.flushes == 1,
               "after flush: held %u next %u flushed %llu", r.rw.held, r.rw.next_id,
               (unsigned long long)r.st.flushed);
        static const unsigned more[] = {1, 6};
        feed(&r, more, 2);
        static const unsigned want2[] = {0, 2, 3, 5, 1, 6};
        EXPECT(same(&r.out, want2, 6) && r.st.late == 1, "after flush: late then in order");
        fbl_rwin_flush(&r.rw, record, &r.out, &r.st);
        EXPECT(r.st.flushes == 1, "a flush with nothing held is no flush");
        fbl_rwin_free(&r.rw);
    }

    /* every packet comes out exactly once, whatever the order: a shuffled stream of 2000
     * ids across the wrap, with holes, through W = 32 and a final flush */
    {
        static uint16_t ids[2000];
        static uint16_t pkts[2000];
        struct fbl_rng rng;
        fbl_rng_seed(&rng, 7);
        for (int i = 0; i < 2000; i++)
            ids[i] = (uint16_t)(65000 + i);
        for (int i = 0; i + 1 < 2000; i++) { /* local shuffles: displacement up to 40 */
            int j = i + (int)(fbl_rng_next(&rng) % 40);
            if (j < 2000) {
                uint16_t t = ids[i];
                ids[i] = ids[j];
                ids[j] = t;
            }
        }
        struct fbl_rwin rw;
        struct fbl_rwin_stats st;
        memset(&st, 0, sizeof st);
        EXPECT(fbl_rwin_init(&rw, 32) == 0, "init");
        static unsigned char seen[65536];
        int kept = 0;
        for (int i = 0; i < 2000; i++) {
            if (ids[i] % 97 == 0)
                continue; /* lost */
            pkts[kept] = ids[i];
            fbl_rwin_input(&rw, pkts[kept], &pkts[kept], 0, count_cb, seen, &st);
            kept++;
        }
        fbl_rwin_flush(&rw, count_cb, seen, &st);
        int once = 0, wrong = 0;
        for (int i = 0; i < 2000; i++) {
            uint16_t id = (uint16_t)(65000 + i);
            if (id % 97 == 0)
                wrong += seen[id] != 0;
            else if (seen[id] == 1)
                once++;
            else
                wrong++;
        }
        EXPECT(once == kept && wrong == 0, "%d of %d delivered once, %d wrong", once, kept,
               wrong);
        uint64_t out = st.in_order + st.released + st.late + st.slid + st.flushed + st.dup;
        EXPECT(out == (uint64_t)kept, "counted %llu of %d", (unsigned long long)out, kept);
        EXPECT(rw.held == 0, "held %u", rw.held);
        fbl_rwin_free(&rw);
    }

    struct fbl_rwin bad;
    EXPECT(fbl_rwin_init(&bad, 0) != 0, "W=0 is the window off, not a window");
    EXPECT(fbl_rwin_init(&bad, FBL_WINDOW_MAX + 1) != 0, "W above the maximum");
    return t_verdict();
}
