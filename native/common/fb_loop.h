/* fb_loop.h - the timing engine: one implementation of each loop shape, parameterised by the
 * transport's hooks, used by every point-to-point kernel (mpi/pt2pt.c, mpi/matrix.c,
 * transport/ucx.c, transport/sock_tcp.c, transport/sock_udp.c, transport/ofi.c,
 * transport/verbs.c), so a change to the timing policy is made once.
 *
 * A transport posts operations (post_recv, post_send), may start what it holds back (start),
 * and completes every operation posted since its last wait (wait). `prepost` says whether the
 * transport wants the reply's receive posted before the send that provokes it (UCX: an
 * unexpected tag costs a copy); without it, a shape completes each message in turn, so an MPI
 * transport whose wait() runs a lone operation as the blocking call (fb_mpi_xfer) keeps OSU's
 * MPI_Send / MPI_Recv ping-pong and its Isend/Waitall + Recv window.
 */
#ifndef FB_LOOP_H
#define FB_LOOP_H

#include <stdbool.h>
#include <stddef.h>

struct fb_xfer {
    int (*post_recv)(void *c, void *buf, size_t len, int tag);
    int (*post_send)(void *c, void *buf, size_t len, int tag);
    /* Start the operations posted and not yet started, without waiting for them; NULL where
     * posting starts an operation (UCX, blocking sockets). 0 or -1. */
    int (*start)(void *c);
    int (*wait)(void *c); /* every operation posted since the last wait; 0 or -1 */
    void *c;
    bool prepost;
    /* The engine's own, per transfer: the receiver's next window already has its receives
     * posted (fb_window_post), and the window's 1-byte ack, which may still be in flight
     * when fb_window returns (so it cannot live on fb_window's stack). */
    bool ahead;
    char ack;
};

/* Where the messages of a window sit in their buffer. NULL: every message at the buffer's
 * start (one slot, as OSU's loops). Otherwise message k at buf + ((first + k) % n) * step:
 * consecutive messages take consecutive slots around a ring of n, and the next window goes on
 * at first + window, so with n * step well above the last-level cache no message finds in
 * cache what an earlier one left (--cache-cold: fb_cold_ring, fb_buf.h; IMB -off_cache puts
 * a window's messages in slots ws % n the same way, but starts every window at slot 0). */
struct fb_ring {
    size_t step, n;
    long first;
};

/* Message k's offset in its buffer under `r` (0 for NULL or an empty ring). */
size_t fb_ring_at(const struct fb_ring *r, long k);

#define FB_TAG_DATA 100
#define FB_TAG_ACK 101

/* What a hook returns (the initiator's post_recv or wait in fb_pingpong) when the reply did not
 * come within the transport's own receive timeout: a datagram transport lost the ping or the
 * pong. fb_pingpong then sends the ping again and starts the sample afresh, so a sample only
 * times round trips that were not lost; the transport counts the losses and gives up (-1)
 * where it must. The other shapes take it as a failure. */
#define FB_XFER_LOST 1

/* `batch` ping-pongs of `size` bytes (the initiator sends first). Initiator: *sample is the
 * half round trip in us, the elapsed time over 2 * batch (one timer pair per sample: with
 * batch > 1 the timer's own cost is spread, as IMB times its whole loop). A round trip lost
 * (FB_XFER_LOST) restarts the sample. 0 or -1. */
int fb_pingpong(const struct fb_xfer *x, bool initiator, void *sbuf, void *rbuf, size_t size,
                long batch, double *sample);

/* One window of `window` messages from the sender, acknowledged by one byte. Sender: *sample
 * is the window's time in us. Both sides place message k by `ring` (NULL: one slot for all,
 * as OSU). With `next` (receiver; NULL on the sender), another window of the same size
 * follows into `next`, placed by the ring going on at first + window: its receives are
 * posted before this window's ack, so none of its messages can arrive before its receive
 * (osu_bw posts them after the ack, and a fast sender's first messages then land
 * unexpected). The call that follows must be the window
 * into `next`. The kernels give `next` for large messages only: posting W small receives
 * before the ack puts them on the sender's path (8 B windows 0.64x), while a large message
 * arriving unexpected costs a rendezvous round or a copy. 0 or -1. */
int fb_window(struct fb_xfer *x, bool sender, void *sbuf, void *rbuf, void *next,
              const struct fb_ring *ring, size_t size, int window, double *sample);

/* Receiver: post the coming window's receives now, where fb_window's `next` could not be given
 * (an MPI receive buffer may not be read while a receive into it is pending: a validating
 * kernel checks the last window first, then posts the next one's). */
int fb_window_post(struct fb_xfer *x, void *rbuf, const struct fb_ring *ring, size_t size,
                   int window);

/* Windows both ways at once (bibw): each side receives `window` messages while it sends as
 * many, both placed by `ring`. *sample: the time until both directions completed. */
int fb_window_bidir(const struct fb_xfer *x, void *sbuf, void *rbuf, const struct fb_ring *ring,
                    size_t size, int window, double *sample);

/* The median of `n` back-to-back pairs of timer reads (us): what the two reads around one
 * sample add to it. */
double fb_timer_overhead_us(int n);

#endif
