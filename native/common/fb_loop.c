/* fb_loop.c - the loop shapes (see fb_loop.h). */
#include "fb_loop.h"

#include <stdlib.h>

#include "fb_order.h"
#include "fb_timer.h"

size_t fb_ring_at(const struct fb_ring *r, long k)
{
    if (!r || !r->n)
        return 0;
    return (size_t)((r->first + k) % (long)r->n) * r->step;
}

/* Post `n` data messages one way, message k placed by `ring`: every shape's window. */
static int post_n(const struct fb_xfer *x, bool send, void *buf, const struct fb_ring *ring,
                  size_t size, int n)
{
    for (int k = 0; k < n; k++) {
        char *b = (char *)buf + fb_ring_at(ring, k);
        if (send ? x->post_send(x->c, b, size, FB_TAG_DATA)
                 : x->post_recv(x->c, b, size, FB_TAG_DATA))
            return -1;
    }
    return 0;
}

/* One message, completed before anything else starts (OSU's MPI_Send / MPI_Recv): 0, -1, or
 * the hook's FB_XFER_LOST. */
static int one(const struct fb_xfer *x, bool send, void *buf, size_t size, int tag)
{
    int rc = send ? x->post_send(x->c, buf, size, tag) : x->post_recv(x->c, buf, size, tag);
    return rc ? rc : x->wait(x->c);
}

static int start(const struct fb_xfer *x)
{
    return x->start ? x->start(x->c) : 0;
}

/* One round trip: 0, -1, or FB_XFER_LOST from the initiator's side. */
static int round_trip(const struct fb_xfer *x, bool initiator, void *sbuf, void *rbuf,
                      size_t size)
{
    if (!initiator)
        return one(x, false, rbuf, size, FB_TAG_DATA) || one(x, true, sbuf, size, FB_TAG_DATA)
                   ? -1
                   : 0;
    if (x->prepost) { /* the pong's receive before the ping: it can never be early */
        if (post_n(x, false, rbuf, NULL, size, 1) || post_n(x, true, sbuf, NULL, size, 1))
            return -1;
        return x->wait(x->c);
    }
    if (one(x, true, sbuf, size, FB_TAG_DATA))
        return -1;
    return one(x, false, rbuf, size, FB_TAG_DATA);
}

int fb_pingpong(const struct fb_xfer *x, bool initiator, void *sbuf, void *rbuf, size_t size,
                long batch, double *sample)
{
    double t0 = fb_now_us();
    for (long b = 0; b < batch; b++) {
        int rc = round_trip(x, initiator, sbuf, rbuf, size);
        if (rc == FB_XFER_LOST && initiator) { /* send again, time the new attempt */
            t0 = fb_now_us();
            b = -1;
            continue;
        }
        if (rc)
            return -1;
    }
    if (initiator)
        *sample = (fb_now_us() - t0) / (2.0 * (double)batch);
    return 0;
}

int fb_window_post(struct fb_xfer *x, void *rbuf, const struct fb_ring *ring, size_t size,
                   int window)
{
    if (post_n(x, false, rbuf, ring, size, window) || start(x))
        return -1;
    x->ahead = true;
    return 0;
}

/* The receiver's side of a window: its receives (posted now, or ahead by the last call),
 * the next window's receives when one follows, then the ack. With a next window the ack is
 * left in flight: the next call's wait completes it with that window's receives, so the
 * receiver never waits on a 1-byte send between windows. */
static int window_receive(struct fb_xfer *x, void *rbuf, void *next, const struct fb_ring *ring,
                          size_t size, int window)
{
    if (!x->ahead && post_n(x, false, rbuf, ring, size, window))
        return -1;
    x->ahead = false;
    if (x->wait(x->c))
        return -1;
    struct fb_ring after = ring ? *ring : (struct fb_ring){0};
    after.first += window; /* the next window goes on around the ring */
    if (next && fb_window_post(x, next, ring ? &after : NULL, size, window))
        return -1;
    x->ack = 'a';
    if (x->post_send(x->c, &x->ack, 1, FB_TAG_ACK))
        return -1;
    return next ? start(x) : x->wait(x->c);
}

int fb_window(struct fb_xfer *x, bool sender, void *sbuf, void *rbuf, void *next,
              const struct fb_ring *ring, size_t size, int window, double *sample)
{
    if (!sender)
        return window_receive(x, rbuf, next, ring, size, window);
    double t0 = fb_now_us();
    if (x->prepost && x->post_recv(x->c, &x->ack, 1, FB_TAG_ACK))
        return -1;
    if (post_n(x, true, sbuf, ring, size, window) || x->wait(x->c))
        return -1;
    if (!x->prepost && one(x, false, &x->ack, 1, FB_TAG_ACK))
        return -1;
    *sample = fb_now_us() - t0;
    return 0;
}

int fb_window_bidir(const struct fb_xfer *x, void *sbuf, void *rbuf, const struct fb_ring *ring,
                    size_t size, int window, double *sample)
{
    double t0 = fb_now_us();
    if (post_n(x, false, rbuf, ring, size, window) || post_n(x, true, sbuf, ring, size, window) ||
        x->wait(x->c))
        return -1;
    *sample = fb_now_us() - t0;
    return 0;
}

double fb_timer_overhead_us(int n)
{
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!d)
        return 0;
    for (int i = 0; i < n; i++) {
        double t0 = fb_now_us();
        double t1 = fb_now_us();
        d[i] = t1 - t0;
    }
    fb_sort_doubles(d, n);
    double m = n > 0 ? fb_median_sorted(d, n) : 0;
    free(d);
    return m;
}
