/* sock_tcp.c - tcp.latency, tcp.bw, tcp.bibw and tcp.streams (sock.h). */
#include "sock.h"

#include "fb_loop.h"

/* ---- TCP kernels ------------------------------------------------------------------------- */

/* The engine's hooks over the one connection: a blocking socket moves the bytes as they are
 * posted, so there is nothing to start or wait for. */
static int tcp_post_send(void *c, void *buf, size_t len, int tag)
{
    struct fb_tp *t = c;
    struct sockst *sk = t->priv;
    (void)tag;
    return send_msg(t, sk, sk->fd[0], buf, len);
}

static int tcp_post_recv(void *c, void *buf, size_t len, int tag)
{
    struct fb_tp *t = c;
    (void)tag;
    return recv_all_qa(t, ((struct sockst *)t->priv)->fd[0], buf, len);
}

static int tcp_done(void *c)
{
    (void)c;
    return 0;
}

/* --pattern wwr: a request written as header + body, the reply (8 B) read at once: Nagle
 * holds the second write until the first is ACKed, and the server delays that ACK. The sample
 * is the full round trip (of --batch round trips, their mean). */
static int tcp_wwr(struct fb_tp *t, struct sockst *sk, size_t size, double *sample)
{
    int fd = sk->fd[0];
    size_t half = size / 2;
    double t0 = fb_now_us();
    for (long b = 0; b < t->opts.batch; b++) {
        if (t->index == 1) {
            if (recv_all_qa(t, fd, sk->rbuf, size) || send_msg(t, sk, fd, sk->sbuf, 8))
                return -1;
        } else if ((half && send_msg(t, sk, fd, sk->sbuf, half)) ||
                   send_msg(t, sk, fd, sk->sbuf + half, size - half) ||
                   recv_all_qa(t, fd, sk->rbuf, 8)) {
            return -1;
        }
    }
    if (t->index == 0)
        *sample = (fb_now_us() - t0) / (double)t->opts.batch;
    return 0;
}

/* The ping-pong is the engine's (fb_pingpong), --batch included: a sample is the half round
 * trip of --batch round trips timed together, as mpi.latency's and ucx.latency's. */
int tcp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    if (sk->wwr)
        return tcp_wwr(t, sk, size, sample);
    struct fb_xfer x = {.post_recv = tcp_post_recv, .post_send = tcp_post_send,
                        .wait = tcp_done, .c = t};
    return fb_pingpong(&x, t->index == 0, sk->sbuf, sk->rbuf, size, t->opts.batch, sample);
}

/* tcp.bw's hooks (a stream transport: a message is one write of the size, the window's
 * completion the receiver's 1-byte ack): data written by send_msg (--zerocopy applies), the
 * ack by a plain write, every read a blocking fb_recv_all, nothing left to wait for. */
static int bw_post_send(void *c, void *buf, size_t len, int tag)
{
    struct fb_tp *t = c;
    struct sockst *sk = t->priv;
    return tag == FB_TAG_ACK ? fb_send_all(sk->fd[0], buf, len)
                             : send_msg(t, sk, sk->fd[0], buf, len);
}

static int bw_post_recv(void *c, void *buf, size_t len, int tag)
{
    (void)tag;
    return fb_recv_all(((struct sockst *)((struct fb_tp *)c)->priv)->fd[0], buf, len);
}

/* The window is the engine's (fb_window): the sender writes --window messages and reads the
 * ack; the receiver reads them all into one message-sized buffer (validating too: sock.c's
 * check_window) and writes the ack. */
int tcp_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    struct fb_xfer x = {.post_recv = bw_post_recv, .post_send = bw_post_send,
                        .wait = tcp_done, .c = t};
    return fb_window(&x, t->index == 0, sk->sbuf, sk->rbuf, NULL, NULL, size, t->opts.window,
                     sample);
}

/* tcp.bibw's hooks: both directions must move at once (blocking writes of a window each way
 * would fill both socket buffers and stop), so posting only counts bytes and wait() moves
 * them all through multiplex(), which polls the connection for either direction. multiplex
 * lays the window out itself (every message read into the one message-sized rbuf, every write
 * from sbuf): the posts are checked against that layout. */
struct bidir {
    struct fb_tp *t;
    struct sockst *sk;
    size_t size, spend, rpend;
};

static int bidir_post_send(void *c, void *buf, size_t len, int tag)
{
    struct bidir *b = c;
    (void)tag;
    if (buf != b->sk->sbuf)
        return -1;
    b->size = len;
    b->spend += len;
    return 0;
}

static int bidir_post_recv(void *c, void *buf, size_t len, int tag)
{
    struct bidir *b = c;
    (void)tag;
    if (buf != b->sk->rbuf)
        return -1;
    b->size = len;
    b->rpend += len;
    return 0;
}

static int bidir_wait(void *c)
{
    struct bidir *b = c;
    size_t spend[MAX_STREAMS], rpend[MAX_STREAMS];
    for (int k = 0; k < b->sk->nfd; k++) {
        spend[k] = b->spend;
        rpend[k] = b->rpend;
    }
    b->spend = b->rpend = 0;
    return multiplex(b->t, b->sk, b->size, spend, rpend, false, NULL);
}

/* tcp.bibw: both sides send and receive a window at once (fb_window_bidir). */
int tcp_bibw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    struct bidir b = {.t = t, .sk = sk};
    struct fb_xfer x = {.post_recv = bidir_post_recv, .post_send = bidir_post_send,
                        .wait = bidir_wait, .c = &b};
    return fb_window_bidir(&x, sk->sbuf, sk->rbuf, NULL, size, t->opts.window, sample);
}

int tcp_streams(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter;
    struct sockst *sk = t->priv;
    size_t spend[MAX_STREAMS], rpend[MAX_STREAMS];
    double stamp[MAX_STREAMS];
    for (int k = 0; k < sk->nfd; k++) {
        spend[k] = t->index == 0 ? sk->window_bytes : 0;
        rpend[k] = t->index == 1 ? sk->window_bytes : 0;
    }
    double t0 = fb_now_us();
    if (multiplex(t, sk, size, spend, rpend, true, stamp))
        return -1;
    *sample = fb_now_us() - t0;
    if (timed && t->index == 0) {
        if (sk->nst + (size_t)sk->nfd > sk->capst) {
            size_t cap = sk->capst ? sk->capst * 2 : 4096;
            while (cap < sk->nst + (size_t)sk->nfd)
                cap *= 2;
            double *n = realloc(sk->stimes, cap * sizeof(*n));
            if (!n)
                return -1;
            sk->stimes = n;
            sk->capst = cap;
        }
        for (int k = 0; k < sk->nfd; k++)
            sk->stimes[sk->nst++] = stamp[k] - t0;
    }
    return 0;
}

/* ---- tcp.streams, time mode (iperf3's way: stream for a duration, sample intervals) ------- */

#define BURST 16 /* most writes (reads) on one ready stream per poll() */

/* The sender: every stream writes `size` bytes whenever it can, with no acknowledgement, for
 * omit + duration by its clock; then it tells the receiver how much each stream sent. */
static int stream_send_for(struct fb_tp *t, struct sockst *sk, size_t size,
                           const struct fb_tp_timed *tm, struct fb_tp_side *me)
{
    struct pollfd p[MAX_STREAMS];
    double sent[MAX_STREAMS] = {0};
    size_t off[MAX_STREAMS] = {0};
    double t0 = fb_now_us(), omit_end = t0 + tm->omit_s * 1e6;
    double end = omit_end + tm->duration_s * 1e6, mark = 0;
    struct rusage r0;
    bool sampling = false;
    getrusage(RUSAGE_SELF, &r0);
    for (;;) {
        double now = fb_now_us();
        if (!sampling && now >= omit_end) {
            getrusage(RUSAGE_SELF, &r0);
            mark = now;
            sampling = true;
        }
        if (now >= end)
            break;
        for (int k = 0; k < sk->nfd; k++)
            p[k] = (struct pollfd){.fd = sk->fd[k], .events = POLLOUT};
        int ms = (int)((end - now) / 1e3) + 1;
        if (poll(p, (nfds_t)sk->nfd, ms) < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        /* a writable stream writes until its socket is full (at most BURST writes, so the
         * clock is read often enough), not once per poll: iperf3 also writes several
         * blocks per select() */
        for (int k = 0; k < sk->nfd; k++) {
            if (!(p[k].revents & POLLOUT))
                continue;
            for (int b = 0; b < BURST; b++) {
                ssize_t n = send(sk->fd[k], sk->sbuf + off[k], size - off[k],
                                 MSG_DONTWAIT | MSG_NOSIGNAL |
                                     (t->cfg.zerocopy ? MSG_ZEROCOPY : 0));
                if (n < 0 && errno == ENOBUFS && t->cfg.zerocopy) {
                    zc_reap(sk, sk->fd[k], true);
                    break;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    perror("send");
                    return -1;
                }
                if (n <= 0)
                    break;
                if (t->cfg.zerocopy && ++sk->zc_sends - sk->zc_done > 1024)
                    zc_reap(sk, sk->fd[k], false);
                sent[k] += (double)n;
                off[k] = (off[k] + (size_t)n) % size;
            }
        }
    }
    fb_tp_usage_since(me, &r0, mark);
    double peer = 0;
    fb_tp_exchange(t, sent, sizeof(sent[0]) * (size_t)sk->nfd, &peer, sizeof(peer), NULL);
    return 0;
}

/* Samples of the receiver: per interval its length and the bytes of each stream. */
struct intervals {
    double *v; /* per interval: us, total bytes, then nfd stream bytes */
    long n, cap;
    int width;
};

static int intervals_add(struct intervals *iv, double us, const double *bytes, int nfd)
{
    if (iv->n == iv->cap) {
        long cap = iv->cap ? iv->cap * 2 : 256;
        double *v = realloc(iv->v, (size_t)cap * (size_t)iv->width * sizeof(*v));
        if (!v)
            return -1;
        iv->v = v;
        iv->cap = cap;
    }
    double *row = iv->v + (size_t)iv->n * (size_t)iv->width, total = 0;
    for (int k = 0; k < nfd; k++) {
        row[2 + k] = bytes[k];
        total += bytes[k];
    }
    row[0] = us;
    row[1] = total;
    iv->n++;
    return 0;
}

/* The receiver: reads every stream as data comes, closes an interval each interval_s after
 * the omitted start (its length as measured, not as planned), and stops at the sender's
 * word on the control connection (the interval then open is dropped); then it drains what
 * is still in flight and sends the intervals over. */
static int stream_receive_for(struct fb_tp *t, struct sockst *sk, size_t size,
                              const struct fb_tp_timed *tm, struct fb_tp_side *me)
{
    struct pollfd p[MAX_STREAMS + 1];
    double got[MAX_STREAMS] = {0}, cur[MAX_STREAMS] = {0};
    struct intervals iv = {.width = 2 + sk->nfd};
    double start = fb_now_us(), t0 = start, next = t0 + tm->omit_s * 1e6, last = t0;
    bool sampling = false;
    struct rusage r0;
    getrusage(RUSAGE_SELF, &r0);
    for (;;) {
        for (int k = 0; k < sk->nfd; k++)
            p[k] = (struct pollfd){.fd = sk->fd[k], .events = POLLIN};
        p[sk->nfd] = (struct pollfd){.fd = t->boot.fd, .events = POLLIN};
        double now = fb_now_us();
        int ms = now < next ? (int)((next - now) / 1e3) + 1 : 0;
        if (poll(p, (nfds_t)sk->nfd + (t->boot.fd >= 0), ms) < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        for (int k = 0; k < sk->nfd; k++) {
            if (!(p[k].revents & (POLLIN | POLLERR | POLLHUP)))
                continue;
            for (int b = 0; b < BURST; b++) { /* until the socket is empty, as the sender */
                ssize_t n = recv_ready(sk->fd[k], sk->rbuf, size, k);
                if (n < 0)
                    return -1;
                if (n == 0)
                    break;
                got[k] += (double)n;
                cur[k] += (double)n;
            }
        }
        now = fb_now_us();
        if (now >= next) {
            if (sampling) {
                if (intervals_add(&iv, now - last, cur, sk->nfd))
                    fb_tp_die(t, "out of memory for intervals");
            } else {
                getrusage(RUSAGE_SELF, &r0);
                t0 = now;
                sampling = true;
            }
            memset(cur, 0, sizeof(cur));
            last = now;
            next += tm->interval_s * 1e6;
            if (next <= now) /* a stall longer than an interval: start afresh from now */
                next = now + tm->interval_s * 1e6;
        }
        if (t->boot.fd >= 0 && (p[sk->nfd].revents & POLLIN))
            break;
        if (t->boot.fd < 0 && now > start + (tm->omit_s + tm->duration_s) * 1e6)
            break; /* MPI bootstrap: no control connection to watch, the same clock instead */
    }
    fb_tp_usage_since(me, &r0, t0);
    double sent[MAX_STREAMS] = {0}, none = 0;
    size_t n = 0;
    fb_tp_exchange(t, &none, sizeof(none), sent, sizeof(sent), &n);
    if (n != sizeof(sent[0]) * (size_t)sk->nfd)
        fb_tp_die(t, "the sender's byte counts did not come");
    for (int k = 0; k < sk->nfd; k++)
        while (got[k] < sent[k]) {
            size_t want = sent[k] - got[k] < (double)size ? (size_t)(sent[k] - got[k]) : size;
            ssize_t r = recv(sk->fd[k], sk->rbuf, want, 0);
            if (r <= 0) {
                fprintf(stderr, "recv: %s\n", r ? strerror(errno) : "the peer closed");
                return -1;
            }
            got[k] += (double)r;
        }
    double head[2] = {(double)iv.n, (double)iv.width};
    size_t len = sizeof(head) + (size_t)iv.n * (size_t)iv.width * sizeof(double);
    char *blob = malloc(len);
    if (!blob)
        fb_tp_die(t, "out of memory");
    memcpy(blob, head, sizeof(head));
    if (iv.n)
        memcpy(blob + sizeof(head), iv.v, len - sizeof(head));
    fb_tp_exchange(t, blob, len, &none, sizeof(none), NULL);
    free(blob);
    free(iv.v);
    return 0;
}

/* The client's samples from the receiver's intervals: bytes_per_sample is the mean bytes of
 * an interval, and each interval's time is scaled to it (bytes_per_sample / time = that
 * interval's rate); each stream likewise, for stream_times. */
static int streams_series(struct fb_tp *t, struct sockst *sk, size_t size, const double *rows,
                          long n, struct fb_tp_timed *tm)
{
    int width = 2 + sk->nfd;
    double total = 0;
    for (long i = 0; i < n; i++)
        total += rows[(size_t)i * (size_t)width + 1];
    double per = n ? total / (double)n : 0;
    tm->times = calloc((size_t)n + 1, sizeof(double));
    if (!tm->times)
        return -1;
    sk->nst = 0;
    if (sk->capst < (size_t)n * (size_t)sk->nfd) {
        double *v = realloc(sk->stimes, ((size_t)n * (size_t)sk->nfd + 1) * sizeof(*v));
        if (!v)
            return -1;
        sk->stimes = v;
        sk->capst = (size_t)n * (size_t)sk->nfd;
    }
    for (long i = 0; i < n; i++) {
        const double *row = rows + (size_t)i * (size_t)width;
        /* an interval (or a stream) that moved nothing counts as one byte: a rate near zero,
         * not a division by zero */
        tm->times[i] = row[0] * per / (row[1] > 1 ? row[1] : 1);
        for (int k = 0; k < sk->nfd; k++)
            sk->stimes[sk->nst++] = row[0] * (per / sk->nfd) / (row[2 + k] > 1 ? row[2 + k] : 1);
    }
    tm->n = n;
    sk->timed_total = total;
    sk->timed_us = 0;
    for (long i = 0; i < n; i++)
        sk->timed_us += rows[(size_t)i * (size_t)width];
    t->bytes_per_sample = per;
    t->messages_per_sample = per / (double)size;
    t->bytes_per_iteration = per;
    return 0;
}

int streams_run_for(struct fb_tp *t, size_t size, struct fb_tp_timed *tm,
                           struct fb_tp_side *me)
{
    struct sockst *sk = t->priv;
    if (t->index == 1)
        return stream_receive_for(t, sk, size, tm, me);
    if (stream_send_for(t, sk, size, tm, me))
        return -1;
    size_t cap = sizeof(double) * 2 +
                 (size_t)(tm->duration_s / tm->interval_s + 16) * (size_t)(2 + sk->nfd) *
                 sizeof(double) * 2;
    char *blob = malloc(cap);
    double none = 0, head[2];
    size_t n = 0;
    if (!blob)
        return -1;
    fb_tp_exchange(t, &none, sizeof(none), blob, cap, &n);
    memcpy(head, blob, sizeof(head));
    long rows = (long)head[0];
    if (n < sizeof(head) || (int)head[1] != 2 + sk->nfd ||
        n != sizeof(head) + (size_t)rows * (size_t)(2 + sk->nfd) * sizeof(double))
        fb_tp_die(t, "bad interval table from the receiver (%zu bytes)", n);
    int rc = streams_series(t, sk, size, (const double *)(const void *)(blob + sizeof(head)),
                            rows, tm);
    free(blob);
    return rc;
}
