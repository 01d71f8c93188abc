/* fb_loop.h - the timing engine: one implementation of each loop shape, parameterised by the
 * transport's hooks, used by every point-to-point kernel (mpi/pt2pt.c, mpi/matrix.c,
 * transport/ucx.c), so a change to the timing policy is made once.
 *
 * A transport starts operations (post_recv, post_send) and completes all it started (wait).
 * `prepost` says whether the transport wants the reply's receive posted before the send that
 * provokes it (UCX: an unexpected tag costs a copy); without it, a shape completes each
 * message in turn, so an MPI transport whose wait() runs a lone operation as the blocking call
 * (fb_mpi_xfer) keeps OSU's MPI_Send / MPI_Recv ping-pong and its Isend/Waitall + Recv window.
 */
#ifndef FB_LOOP_H
#define FB_LOOP_H

#include <stdbool.h>
#include <stddef.h>

struct fb_xfer {
    int (*post_recv)(void *c, void *buf, size_t len, int tag);
    int (*post_send)(void *c, void *buf, size_t len, int tag);
    int (*wait)(void *c); /* every operation started since the last wait; 0 or -1 */
    void *c;
    bool prepost;
};

#define FB_TAG_DATA 100
#define FB_TAG_ACK 101

/* `batch` ping-pongs of `size` bytes (the initiator sends first). Initiator: *sample is the
 * half round trip in us, the elapsed time over 2 * batch (one timer pair per sample: with
 * batch > 1 the timer's own cost is spread, as IMB times its whole loop). 0 or -1. */
int fb_pingpong(const struct fb_xfer *x, bool initiator, void *sbuf, void *rbuf, size_t size,
                long batch, double *sample);

/* One window of `window` messages from the sender, acknowledged by one byte. Sender: *sample
 * is the window's time in us. The receiver puts message k at rbuf + k * stride (stride 0: one
 * slot for all, as OSU). 0 or -1. */
int fb_window(const struct fb_xfer *x, bool sender, void *sbuf, void *rbuf, size_t stride,
              size_t size, int window, double *sample);

/* Windows both ways at once (bibw): each side receives `window` messages (at rbuf + k * stride)
 * while it sends as many. *sample: the time until both directions completed. */
int fb_window_bidir(const struct fb_xfer *x, void *sbuf, void *rbuf, size_t stride, size_t size,
                    int window, double *sample);

/* The median of `n` back-to-back pairs of timer reads (us): what the two reads around one
 * sample add to it. */
double fb_timer_overhead_us(int n);

#endif
