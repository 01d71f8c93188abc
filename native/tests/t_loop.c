/* t_loop.c - the order in which the loop engine (fb_loop.c) posts, starts and completes a
 * window receiver's operations: the next window's receives go out before the ack, and a
 * window whose receives went out ahead does not post them again; a ping-pong whose reply was
 * lost (FB_XFER_LOST) sends the ping again and times only the round trip that came back. The
 * transport here only
 * writes down each call; the kernels' runs under mpirun (tests/native) move the bytes. */
#define T_NAME "t_loop"
#include "t_expect.h"

#include <string.h>

#include "fb_buf.h"
#include "fb_loop.h"
#include "fb_timer.h"

struct log {
    char text[512];
    char *rbuf; /* the first window's buffer: receives are named by their window, a or b */
};

static void add(struct log *l, const char *word)
{
    strncat(l->text, word, sizeof(l->text) - strlen(l->text) - 1);
}

static int recv_hook(void *c, void *buf, size_t len, int tag)
{
    struct log *l = c;
    (void)len;
    add(l, tag == FB_TAG_ACK ? "r! " : (char *)buf == l->rbuf ? "ra " : "rb ");
    return 0;
}

static int send_hook(void *c, void *buf, size_t len, int tag)
{
    (void)buf, (void)len;
    add(c, tag == FB_TAG_ACK ? "s! " : "s ");
    return 0;
}

static int start_hook(void *c)
{
    add(c, "start ");
    return 0;
}

static int wait_hook(void *c)
{
    add(c, "wait ");
    return 0;
}

/* A datagram transport that loses the first `lose` replies, each after a timeout of
 * `timeout_us` busy-waited on the clock, as a receive timeout would pass. */
struct lossy {
    struct log l;
    int lose;
    double timeout_us;
};

static int lossy_recv(void *c, void *buf, size_t len, int tag)
{
    struct lossy *y = c;
    recv_hook(&y->l, buf, len, tag);
    if (y->lose <= 0)
        return 0;
    y->lose--;
    for (double t0 = fb_now_us(); fb_now_us() - t0 < y->timeout_us;)
        ;
    add(&y->l, "lost ");
    return FB_XFER_LOST;
}

static int lossy_send(void *c, void *buf, size_t len, int tag)
{
    return send_hook(&((struct lossy *)c)->l, buf, len, tag);
}

static int lossy_wait(void *c)
{
    return wait_hook(&((struct lossy *)c)->l);
}

static void lost_round_trips(void)
{
    char a[8], s[8];
    struct lossy y = {.l = {.rbuf = a}, .lose = 2, .timeout_us = 20000};
    struct fb_xfer x = {.post_recv = lossy_recv, .post_send = lossy_send, .wait = lossy_wait,
                        .c = &y};
    double t = -1;
    EXPECT(!fb_pingpong(&x, true, s, a, 1, 1, &t), "ping-pong with two lost replies");
    const char *want = "s wait ra lost s wait ra lost s wait ra wait ";
    EXPECT(!strcmp(y.l.text, want), "lossy: got '%s', want '%s'", y.l.text, want);
    /* the sample is the last attempt's: the two 20 ms timeouts before it are not in it */
    EXPECT(t >= 0 && t < 10000, "lossy: sample %.1f us includes a lost attempt", t);

    /* a responder that sees the hook's loss (it has no timeout of its own) fails */
    y = (struct lossy){.l = {.rbuf = a}, .lose = 1, .timeout_us = 0};
    EXPECT(fb_pingpong(&x, false, s, a, 1, 1, &t) == -1, "responder: a loss is a failure");
}

/* --cache-cold's placement: a transport that writes down where each data message sits. */
struct where {
    char *sbase, *rbase;
    size_t sent[256], recvd[256];
    int ns, nr;
};

static int where_send(void *c, void *buf, size_t len, int tag)
{
    struct where *w = c;
    (void)len;
    if (tag == FB_TAG_DATA && w->ns < 256)
        w->sent[w->ns++] = (size_t)((char *)buf - w->sbase);
    return 0;
}

static int where_recv(void *c, void *buf, size_t len, int tag)
{
    struct where *w = c;
    (void)len;
    if (tag == FB_TAG_DATA && w->nr < 256)
        w->recvd[w->nr++] = (size_t)((char *)buf - w->rbase);
    return 0;
}

static int where_wait(void *c)
{
    (void)c;
    return 0;
}

/* Windows of W messages as mpi.bw --cache-cold runs them (pt2pt.c: iteration i's ring starts
 * at message i * W): every message, on both sides, takes the cycle's next slot, so within a
 * window no two of the last `slots` messages share a slot; the receiver's next window, posted
 * ahead, goes on where this one ended. With one slot per window (the method before) every
 * message of a window sat at one offset and this fails at the second message. */
static void cold_windows(void)
{
    enum { W = 8 };
    size_t size = 1000, step = fb_cold_step(size);
    EXPECT(step == 1024, "cache-line-aligned slot of %zu bytes: %zu", size, step);
    size_t regions[] = {20 * step + 5, 5 * step}; /* more slots than W, and fewer */
    for (int r = 0; r < 2; r++) {
        size_t region = regions[r], slots = fb_cold_slots(region, size);
        char sbuf[1], rbuf[1];
        struct where w = {.sbase = sbuf, .rbase = rbuf};
        struct fb_xfer x = {.post_recv = where_recv, .post_send = where_send,
                            .wait = where_wait, .c = &w};
        double t = 0;
        for (long i = 0; i < 3; i++) { /* three windows, each receiver posting the next */
            struct fb_ring ring = fb_cold_ring(region, size, i * W);
            EXPECT(!fb_window(&x, true, sbuf, rbuf, NULL, &ring, size, W, &t), "sender");
            EXPECT(!fb_window(&x, false, sbuf, rbuf, i < 2 ? rbuf : NULL, &ring, size, W, &t),
                   "receiver");
        }
        EXPECT(w.ns == 3 * W && w.nr == 3 * W, "region %zu: %d sends, %d receives", region,
               w.ns, w.nr);
        for (int g = 0; g < w.ns && g < w.nr; g++) {
            size_t want = fb_cold_offset(region, size, g);
            EXPECT(want == (size_t)g % slots * step, "offset of message %d: %zu", g, want);
            EXPECT(w.sent[g] == want && w.recvd[g] == want,
                   "region %zu, message %d (window %d): sent at %zu, received at %zu, want %zu",
                   region, g, g / W, w.sent[g], w.recvd[g], want);
            EXPECT(want + size <= region, "message %d past the region", g);
            /* cold: none of the messages since this slot's last use sat in it */
            for (int h = g - 1; h >= 0 && h > g - (int)slots; h--)
                EXPECT(w.recvd[h] != w.recvd[g] && w.sent[h] != w.sent[g],
                       "region %zu: messages %d and %d share a slot", region, h, g);
        }
    }
}

int main(void)
{
    lost_round_trips();
    cold_windows();
    char a[8], b[8], s[8];
    struct log l = {.rbuf = a};
    struct fb_xfer x = {.post_recv = recv_hook, .post_send = send_hook, .start = start_hook,
                        .wait = wait_hook, .c = &l};
    double t = 0;

    /* three windows of 2 into a, b, a: the ack of each but the last left in flight */
    EXPECT(!fb_window(&x, false, s, a, b, NULL, 1, 2, &t), "window 1");
    EXPECT(!fb_window(&x, false, s, b, a, NULL, 1, 2, &t), "window 2");
    EXPECT(!fb_window(&x, false, s, a, NULL, NULL, 1, 2, &t), "window 3");
    const char *want = "ra ra wait rb rb start s! start "
                       "wait ra ra start s! start "
                       "wait s! wait ";
    EXPECT(!strcmp(l.text, want), "receiver: got '%s', want '%s'", l.text, want);
    EXPECT(!x.ahead, "nothing posted ahead after the last window");

    /* posted ahead by the caller (a validating kernel, after its check) */
    l.text[0] = '\0';
    EXPECT(!fb_window_post(&x, a, NULL, 1, 2), "post");
    EXPECT(!fb_window(&x, false, s, a, NULL, NULL, 1, 2, &t), "window after post");
    want = "ra ra start wait s! wait ";
    EXPECT(!strcmp(l.text, want), "posted ahead: got '%s', want '%s'", l.text, want);

    /* the sender: OSU's window, then the ack's receive on its own (no prepost) */
    l.text[0] = '\0';
    EXPECT(!fb_window(&x, true, s, a, NULL, NULL, 1, 2, &t), "sender");
    want = "s s wait r! wait ";
    EXPECT(!strcmp(l.text, want), "sender: got '%s', want '%s'", l.text, want);
    return t_verdict();
}
