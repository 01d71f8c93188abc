/* sock_udp.c - udp.latency and udp.stream (sock.h). */
#include "sock.h"

#include "fb_loop.h"

/* ---- UDP kernels ------------------------------------------------------------------------- */

static void put_hdr(char *buf, uint32_t seq, bool timed)
{
    struct udp_hdr h = {.seq = seq, .timed = timed};
    memcpy(buf, &h, sizeof(h));
}

static struct udp_hdr get_hdr(const char *buf)
{
    struct udp_hdr h;
    memcpy(&h, buf, sizeof(h));
    return h;
}

static int wait_readable(int fd, int extra_fd, double ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = extra_fd, .events = POLLIN}};
    int rc;
    do
        rc = poll(p, extra_fd >= 0 ? 2 : 1, (int)ms);
    while (rc < 0 && errno == EINTR);
    if (rc <= 0)
        return 0;
    if (p[0].revents & POLLIN)
        return 1;
    return 2; /* only the bootstrap connection: the peer has moved on */
}

/* udp.latency's hooks: one ping-pong of datagrams numbered by the iteration. */
struct udp_pp {
    struct fb_tp *t;
    struct sockst *sk;
    uint32_t seq;
    int lost; /* round trips lost in a row */
    struct sockaddr_storage from; /* server: where the ping came from */
    socklen_t fl;
};

static int pp_send(void *c, void *buf, size_t len, int tag)
{
    struct udp_pp *u = c;
    struct sockst *sk = u->sk;
    (void)tag;
    put_hdr(buf, u->seq, true);
    if (u->t->index == 1) { /* the echo: as long as the ping, back where it came from */
        sendto(sk->ufd, buf, (size_t)sk->got, 0, (struct sockaddr *)&u->from, u->fl);
        return 0;
    }
    if (u->lost > 100)
        fb_tp_die(u->t, "UDP: 100 round trips in a row were lost");
    if (send(sk->ufd, buf, len, 0) < 0 && errno != ECONNREFUSED) {
        perror("send");
        return -1;
    }
    return 0;
}

/* Client: the reply to this ping, skipping stale ones (replies to pings sent again);
 * FB_XFER_LOST when none comes within --udp-timeout (or the receive fails: send again). */
static int pp_reply(struct udp_pp *u, void *buf, size_t len)
{
    struct sockst *sk = u->sk;
    for (;;) {
        if (!wait_readable(sk->ufd, -1, u->t->cfg.udp_timeout_ms)) {
            sk->lost_rt++;
            u->lost++;
            return FB_XFER_LOST;
        }
        ssize_t n = recv(sk->ufd, buf, len, 0);
        if (n < 0) {
            u->lost++;
            return FB_XFER_LOST;
        }
        if ((size_t)n == len && get_hdr(buf).seq == u->seq) {
            u->lost = 0;
            return 0;
        }
        sk->stale++;
    }
}

/* Server: the ping of this iteration; an old one (its reply was lost) is echoed again. */
static int pp_ping(struct udp_pp *u, void *buf, size_t len)
{
    struct sockst *sk = u->sk;
    for (;;) {
        u->fl = sizeof(u->from);
        ssize_t n = recvfrom(sk->ufd, buf, len, 0, (struct sockaddr *)&u->from, &u->fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("recvfrom");
            return -1;
        }
        if ((size_t)n < UDP_HDR)
            continue;
        uint32_t got = get_hdr(buf).seq;
        if (got == u->seq) {
            sk->got = n;
            return 0;
        }
        put_hdr(sk->sbuf, got, true);
        sendto(sk->ufd, sk->sbuf, (size_t)n, 0, (struct sockaddr *)&u->from, u->fl);
    }
}

static int pp_recv(void *c, void *buf, size_t len, int tag)
{
    struct udp_pp *u = c;
    (void)tag;
    return u->t->index == 1 ? pp_ping(u, buf, len) : pp_reply(u, buf, len);
}

static int pp_done(void *c)
{
    (void)c;
    return 0;
}

/* The ping-pong is the engine's (fb_pingpong); a lost round trip is sent again and timed
 * afresh (FB_XFER_LOST). One round trip per sample: a batch would share one sequence number
 * among its round trips, and a late echo could then pass for the next one's. */
int udp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)timed;
    struct udp_pp u = {.t = t, .sk = t->priv, .seq = (uint32_t)iter + 1};
    struct fb_xfer x = {.post_recv = pp_recv, .post_send = pp_send, .wait = pp_done, .c = &u};
    return fb_pingpong(&x, t->index == 0, u.sk->sbuf, u.sk->rbuf, size, 1, sample);
}

/* Both sides' payload after the sequence header: the client's reply, the server's ping. */
void udp_latency_check(struct fb_tp *t, size_t size, long iter)
{
    struct sockst *sk = t->priv;
    size_t n = t->index == 0 ? size : (size_t)sk->got;
    fb_tp_check(t, sk->rbuf + UDP_HDR, n - UDP_HDR, UDP_HDR, size, iter);
}

/* Echo late pings (sent again after a lost reply) until the client reaches the barrier:
 * a plain barrier would leave it waiting for an echo that never comes. */
void echo_until_peer_moves_on(struct fb_tp *t, struct sockst *sk, size_t size,
                                     double timeout_ms)
{
    for (;;) {
        int r = wait_readable(sk->ufd, t->boot.fd, timeout_ms);
        if (r != 1)
            break;
        struct sockaddr_storage from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(sk->ufd, sk->rbuf, size, 0, (struct sockaddr *)&from, &fl);
        if (n > 0)
            sendto(sk->ufd, sk->rbuf, (size_t)n, 0, (struct sockaddr *)&from, fl);
    }
}

int udp_latency_sync(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    if (t->index == 1 && t->boot.fd >= 0)
        echo_until_peer_moves_on(t, sk, size, t->cfg.connect_timeout_s * 1e3);
    return t->boot.barrier(&t->boot);
}

int udp_stream(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    struct sockst *sk = t->priv;
    if (t->index == 1) {
        if (!timed)
            sk->warm_iters++;
        else
            sk->timed_windows++;
        return 0; /* the server receives everything in end_size */
    }
    int w = t->opts.window;
    /* the receiver is not timed and checks as datagrams arrive: the fill stays here, before
     * the sender's timed window (a barrier per window would stall the draining receiver) */
    if (t->opts.validate)
        fb_tp_fill(t, sk->sbuf, size, 0, size, iter);
    double t0 = fb_now_us();
    for (int k = 0; k < w; k++) {
        put_hdr(sk->sbuf, timed ? sk->seq++ : 0, timed);
        if (send(sk->ufd, sk->sbuf, size, 0) < 0) {
            if (errno == EINTR) {
                k--;
                continue;
            }
            if (timed)
                sk->send_err++; /* ENOBUFS/ECONNREFUSED: a datagram that left no trace */
        } else if (timed) {
            sk->sent++;
        }
    }
    *sample = fb_now_us() - t0;
    if (timed)
        sk->timed_windows++;
    return 0;
}

/* udp.reorder: the numbers of timed datagrams in the order they arrived. */
int log_seq(struct sockst *sk, uint32_t seq)
{
    if (sk->nlog == sk->caplog) {
        size_t cap = sk->caplog ? sk->caplog * 2 : 4096;
        uint32_t *v = realloc(sk->log, cap * sizeof(*v));
        if (!v)
            return -1;
        sk->log = v;
        sk->caplog = cap;
    }
    sk->log[sk->nlog++] = seq;
    return 0;
}

/* Receive the timed datagrams of one size and count what arrived, late, twice or never
 * (udp.reorder: and log their numbers). */
void udp_stream_receive(struct fb_tp *t, struct sockst *sk, size_t size,
                               struct fb_tp_side *me)
{
    long expect = sk->timed_windows * t->opts.window;
    unsigned char *seen = calloc((size_t)expect / 8 + 1, 1);
    if (!seen)
        fb_tp_die(t, "out of memory");
    double received = 0, dup = 0, reordered = 0, bytes = 0, first = 0, last = 0;
    long max_seen = -1;
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double w0 = fb_now_us();
    bool peer_done = false;
    for (;;) {
        /* Once the client is in the bootstrap exchange it has sent everything: wait only
         * briefly for stragglers. */
        double ms = peer_done ? 5 : t->cfg.udp_timeout_ms;
        int r = wait_readable(sk->ufd, peer_done ? -1 : t->boot.fd, ms);
        if (r == 0)
            break;
        if (r == 2) {
            peer_done = true;
            continue;
        }
        ssize_t n = recv(sk->ufd, sk->rbuf, size, MSG_DONTWAIT);
        if (n < (ssize_t)UDP_HDR)
            continue;
        struct udp_hdr h = get_hdr(sk->rbuf);
        if (!h.timed)
            continue;
        double now = fb_now_us();
        if (received == 0 && dup == 0)
            first = now;
        last = now;
        if (sk->log && log_seq(sk, h.seq))
            fb_tp_die(t, "out of memory for the arrival log");
        if ((long)h.seq >= expect)
            continue;
        if (seen[h.seq / 8] & (1u << (h.seq % 8))) {
            dup++;
            continue;
        }
        seen[h.seq / 8] |= (unsigned char)(1u << (h.seq % 8));
        if ((long)h.seq < max_seen)
            reordered++;
        else
            max_seen = h.seq;
        if (t->opts.validate)
            fb_tp_check(t, sk->rbuf + UDP_HDR, (size_t)n - UDP_HDR, UDP_HDR, size,
                        sk->warm_iters + (long)h.seq / t->opts.window);
        received++;
        bytes += (double)n;
        if ((long)received == expect && !peer_done)
            break;
    }
    getrusage(RUSAGE_SELF, &r1);
    free(seen);
    me->user_s += (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                  (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
    me->sys_s += (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    me->wall_s += (fb_now_us() - w0) * 1e-6;
    me->c[0] = received;
    me->c[1] = (double)expect - received;
    me->c[2] = reordered;
    me->c[3] = dup;
    me->c[4] = bytes;
    me->c[5] = last - first;
}
