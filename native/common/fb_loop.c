/* fb_loop.c - the loop shapes (see fb_loop.h). */
#include "fb_loop.h"

#include <stdlib.h>

#include "fb_timer.h"

int fb_pingpong(const struct fb_xfer *x, bool initiator, void *sbuf, void *rbuf, size_t size,
                long batch, double *sample)
{
    double t0 = fb_now_us();
    for (long b = 0; b < batch; b++) {
        if (initiator) {
            if (x->prepost) {
                if (x->post_recv(x->c, rbuf, size, FB_TAG_DATA) ||
                    x->post_send(x->c, sbuf, size, FB_TAG_DATA) || x->wait(x->c))
                    return -1;
            } else if (x->post_send(x->c, sbuf, size, FB_TAG_DATA) || x->wait(x->c) ||
                       x->post_recv(x->c, rbuf, size, FB_TAG_DATA) || x->wait(x->c)) {
                return -1;
            }
        } else if (x->post_recv(x->c, rbuf, size, FB_TAG_DATA) || x->wait(x->c) ||
                   x->post_send(x->c, sbuf, size, FB_TAG_DATA) || x->wait(x->c)) {
            return -1;
        }
    }
    if (initiator)
        *sample = (fb_now_us() - t0) / (2.0 * (double)batch);
    return 0;
}

static int post_window_recvs(const struct fb_xfer *x, char *rbuf, size_t stride, size_t size,
                             int window)
{
    for (int k = 0; k < window; k++)
        if (x->post_recv(x->c, rbuf + (size_t)k * stride, size, FB_TAG_DATA))
            return -1;
    return 0;
}

int fb_window(const struct fb_xfer *x, bool sender, void *sbuf, void *rbuf, size_t stride,
              size_t size, int window, double *sample)
{
    char ack = 'a';
    if (!sender) {
        if (post_window_recvs(x, rbuf, stride, size, window) || x->wait(x->c) ||
            x->post_send(x->c, &ack, 1, FB_TAG_ACK) || x->wait(x->c))
            return -1;
        return 0;
    }
    double t0 = fb_now_us();
    if (x->prepost && x->post_recv(x->c, &ack, 1, FB_TAG_ACK))
        return -1;
    for (int k = 0; k < window; k++)
        if (x->post_send(x->c, sbuf, size, FB_TAG_DATA))
            return -1;
    if (x->wait(x->c))
        return -1;
    if (!x->prepost && (x->post_recv(x->c, &ack, 1, FB_TAG_ACK) || x->wait(x->c)))
        return -1;
    *sample = fb_now_us() - t0;
    return 0;
}

int fb_window_bidir(const struct fb_xfer *x, void *sbuf, void *rbuf, size_t stride, size_t size,
                    int window, double *sample)
{
    double t0 = fb_now_us();
    if (post_window_recvs(x, rbuf, stride, size, window))
        return -1;
    for (int k = 0; k < window; k++)
        if (x->post_send(x->c, sbuf, size, FB_TAG_DATA))
            return -1;
    if (x->wait(x->c))
        return -1;
    *sample = fb_now_us() - t0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
    qsort(d, (size_t)n, sizeof(d[0]), cmp_double);
    double m = d[n / 2];
    free(d);
    return m;
}
