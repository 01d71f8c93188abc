/* sock.c - TCP and UDP socket kernels: tcp.latency, tcp.bw, tcp.streams, tcp.bibw,
 * udp.latency, udp.stream. Built once per kernel with FB_KERNEL naming which one.
 *
 * The data path is separate from the bootstrap: the server opens a data listener (or UDP
 * socket) on its bind address and announces its port through the bootstrap, so the same code
 * runs under the TCP rendezvous and under mpirun.
 */
#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which uses struct timespec */
#include <linux/errqueue.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fb_buf.h"
#include "fb_reorder.h"
#include "fb_sock.h"
#include "fb_timer.h"
#include "fb_tp.h"

#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define MAX_STREAMS 256
#define UDP_HDR 8

struct udp_hdr {
    uint32_t seq;
    uint32_t timed; /* 0: warm-up datagram, not counted */
};

struct sockst {
    int fd[MAX_STREAMS];
    int nfd;
    int ufd; /* UDP */
    char *sbuf, *rbuf;
    size_t scap, rcap;
    size_t window_bytes; /* one window of one stream: size * --window */
    bool slots;          /* --validate: every received byte of a window kept until checked */
    bool wwr;            /* tcp.latency --pattern wwr */
    ssize_t got;         /* udp.latency server: length of the ping it answered */
    /* TCP_INFO at the start of the size, per connection */
    unsigned long retrans0[MAX_STREAMS];
    /* MSG_ZEROCOPY bookkeeping */
    unsigned long zc_sends, zc_done, zc_copied;
    /* tcp.streams: per-stream times of the timed windows, [i * nfd + k] */
    double *stimes;
    size_t nst, capst;
    double timed_total, timed_us; /* time mode: bytes received over the sampled intervals */
    /* udp.reorder: the receiver's arrival log; the figures from it (on the client: received) */
    uint32_t *log;
    size_t nlog, caplog;
    struct fb_reorder ro;
    double *rblob; /* client: the receiver's figures (see reorder_blob) */
    size_t rblob_len;
    /* UDP */
    uint32_t seq;
    double lost_rt, stale;          /* udp.latency, client */
    double sent, send_err;           /* udp.stream, client */
    long timed_windows;              /* udp.stream: timed windows sent/expected */
    long warm_iters;
};

static bool is_udp(const struct fb_tp *t) { return t->k->family == FB_FAM_UDP; }

/* ---- set-up ------------------------------------------------------------------------------ */

static struct fb_sockopts sockopts(const struct fb_tp *t)
{
    struct fb_sockopts o = {.sndbuf = t->cfg.sndbuf, .rcvbuf = t->cfg.rcvbuf,
                            .nodelay = t->cfg.nodelay, .zerocopy = t->cfg.zerocopy};
    return o;
}

/* "host port": host empty when the client should use the address it reached us at. */
static void announce(struct fb_tp *t, int port, char *peer_host, size_t cap, int *peer_port)
{
    char blob[320] = "", got[320] = "";
    if (t->index == 1) {
        char host[256] = "";
        if (t->cfg.bind && *t->cfg.bind && strcmp(t->cfg.bind, "0.0.0.0") &&
            strcmp(t->cfg.bind, "::"))
            snprintf(host, sizeof(host), "%s", t->cfg.bind);
        else if (fb_boot_is_mpi())
            snprintf(host, sizeof(host), "%s", t->host[1]);
        snprintf(blob, sizeof(blob), "%s %d", host, port);
    }
    size_t n = 0;
    fb_tp_exchange(t, blob, strlen(blob) + 1, got, sizeof(got) - 1, &n);
    if (t->index == 0) {
        char h[256] = "";
        int p = 0;
        if (sscanf(got, "%255s %d", h, &p) == 2) {
            snprintf(peer_host, cap, "%s", h);
        } else if (sscanf(got, " %d", &p) == 1) {
            snprintf(peer_host, cap, "%s", t->cfg.peer ? t->cfg.peer : "localhost");
        } else {
            fb_tp_die(t, "bad data-port announcement '%s'", got);
        }
        *peer_port = p;
    }
}

static int tcp_setup(struct fb_tp *t, struct sockst *sk)
{
    struct fb_sockopts o = sockopts(t);
    sk->nfd = t->k->opts & FB_OPT_STREAMS ? t->cfg.streams : 1;
    sk->wwr = !strcmp(t->cfg.pattern, "wwr");
    char host[256] = "";
    int port = 0;
    if (t->index == 1) {
        int lfd = fb_listen(t->cfg.bind, &port, &o);
        if (lfd < 0)
            return -1;
        announce(t, port, NULL, 0, NULL);
        for (int k = 0; k < sk->nfd; k++) {
            sk->fd[k] = fb_accept_timeout(lfd, t->cfg.connect_timeout_s);
            if (sk->fd[k] < 0)
                fb_tp_die(t, "data connection %d was not made", k);
            if (fb_sock_apply(sk->fd[k], &(struct fb_sockopts){.nodelay = o.nodelay,
                                                              .zerocopy = o.zerocopy}))
                return -1;
        }
        close(lfd);
    } else {
        announce(t, 0, host, sizeof(host), &port);
        for (int k = 0; k < sk->nfd; k++) {
            sk->fd[k] = fb_connect_retry(host, port, t->cfg.connect_timeout_s, &o);
            if (sk->fd[k] < 0)
                return -1;
        }
    }
    return 0;
}

static int udp_setup(struct fb_tp *t, struct sockst *sk)
{
    struct fb_sockopts o = {.sndbuf = t->cfg.sndbuf, .rcvbuf = t->cfg.rcvbuf};
    char host[256] = "";
    int port = 0;
    if (t->index == 1) {
        sk->ufd = fb_bind_socket(SOCK_DGRAM, t->cfg.bind, &port, &o);
        if (sk->ufd < 0)
            return -1;
        announce(t, port, NULL, 0, NULL);
    } else {
        announce(t, 0, host, sizeof(host), &port);
        int lport = 0;
        /* Bind to the family of the peer by resolving the peer first; "any" of AF_UNSPEC
         * gives the first family getaddrinfo returns, which matches for numeric peers. */
        sk->ufd = fb_bind_socket(SOCK_DGRAM, strchr(host, ':') ? "::" : "0.0.0.0", &lport, &o);
        if (sk->ufd < 0 || fb_udp_connect(sk->ufd, host, port))
            return -1;
    }
    return 0;
}

static int sock_setup(struct fb_tp *t)
{
    struct sockst *sk = calloc(1, sizeof(*sk));
    if (!sk)
        return -1;
    t->priv = sk;
    return is_udp(t) ? udp_setup(t, sk) : tcp_setup(t, sk);
}

static void sock_meta(struct fb_tp *t, struct fb_json *j)
{
    const struct sockst *sk = t->priv;
    struct utsname u;
    char lib[320] = "Linux sockets";
    if (uname(&u) == 0)
        snprintf(lib, sizeof(lib), "Linux %s sockets", u.release);
    fb_json_str(j, "library", lib);
    fb_json_str(j, "selected_transport", is_udp(t) ? "udp" : "tcp");
    int fd = is_udp(t) ? sk->ufd : sk->fd[0];
    int v = 0;
    socklen_t l = sizeof(v);
    /* What the kernel granted (Linux doubles the request and caps it at [rw]mem_max). */
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &l) == 0)
        fb_json_int(j, "sndbuf_actual", v);
    l = sizeof(v);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l) == 0)
        fb_json_int(j, "rcvbuf_actual", v);
    char addr[128];
    fb_sock_local_addr(fd, addr, sizeof(addr));
    fb_json_str(j, "local_address", addr);
    if (!is_udp(t)) {
        int mss = 0;
        l = sizeof(mss);
        if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) == 0)
            fb_json_int(j, "mss", mss);
    }
}

/* ---- helpers ----------------------------------------------------------------------------- */

static int tcp_info(int fd, struct tcp_info *ti)
{
    socklen_t l = sizeof(*ti);
    memset(ti, 0, sizeof(*ti));
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &l);
}

static void quickack(const struct fb_tp *t, int fd)
{
    /* Linux clears TCP_QUICKACK on its own after some ACKs: set it after every receive. */
    if (t->cfg.quickack) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
    }
}

/* fb_recv_all with tcp.latency's receive options: TCP_QUICKACK re-armed before every recv()
 * (a delayed ACK is decided when a segment arrives, so arming it only after the whole message
 * is too late for a request that comes in two segments), and --poll: non-blocking reads in a
 * spin, as MPI libraries poll, instead of sleeping in recv() until data arrives. */
static int recv_all_qa(const struct fb_tp *t, int fd, void *buf, size_t len)
{
    if (!t->cfg.quickack && !t->cfg.poll)
        return fb_recv_all(fd, buf, len);
    int flags = t->cfg.poll ? MSG_DONTWAIT : 0;
    char *p = buf;
    while (len) {
        quickack(t, fd);
        ssize_t n = recv(fd, p, len, flags);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0) {
            fprintf(stderr, "recv: %s\n", n ? strerror(errno) : "the peer closed the connection");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    quickack(t, fd);
    return 0;
}

/* Completions of MSG_ZEROCOPY sends from the error queue; wait for at least one if `block`. */
static void zc_reap(struct sockst *sk, int fd, bool block)
{
    for (;;) {
        char ctrl[128];
        struct msghdr msg = {.msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
        ssize_t n = recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN && block) {
                struct pollfd p = {.fd = fd, .events = 0};
                poll(&p, 1, 100);
                block = false; /* one wait, then take what came */
                continue;
            }
            return;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(c);
            if (ee->ee_errno != 0 || ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            unsigned long cnt = (unsigned long)(ee->ee_data - ee->ee_info) + 1;
            sk->zc_done += cnt;
            if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                sk->zc_copied += cnt;
        }
        block = false;
    }
}

static int send_msg(struct fb_tp *t, struct sockst *sk, int fd, const char *buf, size_t len)
{
    if (!t->cfg.zerocopy)
        return fb_send_all(fd, buf, len);
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_ZEROCOPY);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS) { /* optmem full of pending notifications: reap, retry */
                zc_reap(sk, fd, true);
                continue;
            }
            perror("send(MSG_ZEROCOPY)");
            return -1;
        }
        sk->zc_sends++;
        buf += n;
        len -= (size_t)n;
    }
    if (sk->zc_sends - sk->zc_done > 1024)
        zc_reap(sk, fd, false);
    return 0;
}

/* Send `total` bytes (window of messages from sbuf) on fds with pending[k] > 0 and receive
 * on fds with rpending[k] > 0, all at once, without blocking on any one of them. stamp[k] gets
 * the time the stream finished (its 1-byte ack when `acks`, else its last byte in either
 * direction). */
static int multiplex(struct fb_tp *t, struct sockst *sk, size_t size, size_t *spend,
                     size_t *rpend, bool acks, double *stamp)
{
    struct pollfd p[MAX_STREAMS];
    size_t soff[MAX_STREAMS] = {0}, roff[MAX_STREAMS] = {0};
    bool ackwait[MAX_STREAMS] = {0};
    int left = 0;
    for (int k = 0; k < sk->nfd; k++) {
        ackwait[k] = acks && spend[k] > 0;
        if (spend[k] || rpend[k] || ackwait[k])
            left++;
    }
    while (left) {
        for (int k = 0; k < sk->nfd; k++) {
            p[k].fd = sk->fd[k];
            p[k].events = (short)((spend[k] ? POLLOUT : 0) |
                                  ((rpend[k] || (ackwait[k] && !spend[k])) ? POLLIN : 0));
            p[k].revents = 0;
        }
        if (poll(p, (nfds_t)sk->nfd, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("poll");
            return -1;
        }
        for (int k = 0; k < sk->nfd; k++) {
            bool busy_before = spend[k] || rpend[k] || ackwait[k];
            if ((p[k].revents & POLLOUT) && spend[k]) {
                size_t in_msg = soff[k] % size;
                size_t chunk = size - in_msg;
                if (chunk > spend[k])
                    chunk = spend[k];
                ssize_t n = send(sk->fd[k], sk->sbuf + in_msg, chunk,
                                 MSG_DONTWAIT | MSG_NOSIGNAL | (t->cfg.zerocopy ? MSG_ZEROCOPY : 0));
                if (n < 0 && errno == ENOBUFS && t->cfg.zerocopy) {
                    zc_reap(sk, sk->fd[k], true);
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    perror("send");
                    return -1;
                } else if (n > 0) {
                    if (t->cfg.zerocopy)
                        sk->zc_sends++;
                    soff[k] += (size_t)n;
                    spend[k] -= (size_t)n;
                }
            }
            if (p[k].revents & (POLLIN | POLLERR | POLLHUP)) {
                if (rpend[k]) {
                    /* validating: stream k's window kept whole at its own offset, checked
                     * after the timed region; else one message-sized buffer reused */
                    char *dst;
                    size_t chunk;
                    if (sk->slots) {
                        dst = sk->rbuf + (size_t)k * sk->window_bytes + roff[k];
                        chunk = rpend[k];
                    } else {
                        dst = sk->rbuf + roff[k] % size;
                        chunk = size - roff[k] % size;
                        if (chunk > rpend[k])
                            chunk = rpend[k];
                    }
                    ssize_t n = recv(sk->fd[k], dst, chunk, MSG_DONTWAIT);
                    if (n == 0) {
                        fprintf(stderr, "recv: the peer closed connection %d\n", k);
                        return -1;
                    }
                    if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        perror("recv");
                        return -1;
                    }
                    if (n > 0) {
                        roff[k] += (size_t)n;
                        rpend[k] -= (size_t)n;
                        if (!rpend[k] && acks) /* the receiver's ack for this stream */
                            if (fb_send_all(sk->fd[k], "a", 1))
                                return -1;
                    }
                } else if (ackwait[k] && !spend[k]) {
                    char a;
                    ssize_t n = recv(sk->fd[k], &a, 1, MSG_DONTWAIT);
                    if (n == 0) {
                        fprintf(stderr, "recv: the peer closed connection %d\n", k);
                        return -1;
                    }
                    if (n == 1)
                        ackwait[k] = false;
                }
            }
            if (busy_before && !spend[k] && !rpend[k] && !ackwait[k]) {
                left--;
                if (stamp)
                    stamp[k] = fb_now_us();
            }
        }
    }
    return 0;
}

/* ---- per-size set-up (each kernel's begin_size) ------------------------------------------ */

/* Buffers for `size`: one message to send; to receive, `rmsgs` messages side by side when
 * validating (each checked after the timed region), else one message reused. */
static int sock_buffers(struct fb_tp *t, struct sockst *sk, size_t size, size_t rmsgs)
{
    size_t s = size < 64 ? 64 : size;
    size_t r = t->opts.validate ? s * rmsgs : s;
    if (s > sk->scap) {
        fb_buf_free(sk->sbuf);
        if (!(sk->sbuf = fb_buf_alloc_pages(s, t->opts.hugepages)))
            return -1;
        sk->scap = s;
    }
    if (r > sk->rcap) {
        fb_buf_free(sk->rbuf);
        if (!(sk->rbuf = fb_buf_alloc_pages(r, t->opts.hugepages))) {
            fprintf(stderr, "%s: cannot allocate %zu bytes to keep a window for --validate "
                    "(a smaller --window or size needs less)\n", t->k->name, r);
            return -1;
        }
        sk->rcap = r;
    }
    memset(sk->sbuf, 'x', size);
    sk->window_bytes = size * (size_t)t->opts.window;
    sk->slots = t->opts.validate && rmsgs > 1;
    for (int k = 0; k < sk->nfd; k++) {
        struct tcp_info ti;
        sk->retrans0[k] = tcp_info(sk->fd[k], &ti) == 0 ? ti.tcpi_total_retrans : 0;
    }
    sk->zc_sends = sk->zc_done = sk->zc_copied = 0;
    sk->nst = 0;
    sk->seq = 0;
    sk->lost_rt = sk->stale = sk->sent = sk->send_err = 0;
    sk->timed_windows = 0;
    sk->warm_iters = 0;
    return 0;
}

static int pingpong_begin(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    t->bytes_per_sample = (double)size;
    t->messages_per_sample = 1;
    t->bytes_per_iteration = sk->wwr ? (double)size + 8 : 2.0 * (double)size;
    return sock_buffers(t, sk, size, 1);
}

/* One window of `streams` streams in one direction, or both with `both`. */
static int window_begin(struct fb_tp *t, size_t size, int streams, bool both)
{
    struct sockst *sk = t->priv;
    double w = (double)t->opts.window * streams * (both ? 2 : 1);
    t->bytes_per_sample = (double)size * w;
    t->messages_per_sample = w;
    t->bytes_per_iteration = t->bytes_per_sample;
    return sock_buffers(t, sk, size, (size_t)t->opts.window * (size_t)streams);
}

static int bw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 1, false); }
static int bibw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 1, true); }

static int streams_begin(struct fb_tp *t, size_t size)
{
    return window_begin(t, size, ((struct sockst *)t->priv)->nfd, false);
}

/* udp.stream: the receiver keeps nothing (it checks as datagrams arrive, untimed). */
static int udp_stream_begin(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    t->bytes_per_sample = (double)size * t->opts.window;
    t->messages_per_sample = t->opts.window;
    t->bytes_per_iteration = t->bytes_per_sample;
    return sock_buffers(t, sk, size, 1);
}

/* ---- --validate: fill before, check after the timed region ------------------------------- */

/* What this side sends each iteration: the whole message (a latency server: its reply). */
static void fill_message(struct fb_tp *t, size_t size, long iter)
{
    struct sockst *sk = t->priv;
    size_t len = t->index == 1 && sk->wwr ? 8 : size;
    fb_tp_fill(t, sk->sbuf, len, 0, len, iter);
}

static void fill_sender(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 0)
        fill_message(t, size, iter);
}

static void check_pingpong(struct fb_tp *t, size_t size, long iter)
{
    struct sockst *sk = t->priv;
    if (t->index == 1 || !sk->wwr) /* the client checks no wwr reply (8 B of status) */
        fb_tp_check(t, sk->rbuf, size, 0, size, iter);
}

/* Every message of the window on every stream this side received. */
static void check_windows(struct fb_tp *t, size_t size, long iter)
{
    struct sockst *sk = t->priv;
    size_t n = sk->window_bytes / (size ? size : 1) * (size_t)sk->nfd;
    for (size_t m = 0; m < n; m++)
        fb_tp_check(t, sk->rbuf + m * size, size, 0, size, iter);
}

static void check_receiver(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 1)
        check_windows(t, size, iter);
}

/* ---- TCP kernels ------------------------------------------------------------------------- */

static int tcp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    int fd = sk->fd[0];
    size_t reply = sk->wwr ? 8 : size;
    if (t->index == 0) {
        double t0 = fb_now_us();
        if (sk->wwr) {
            /* a request written as header + body, the reply read at once: Nagle holds the
             * second write until the first is ACKed, and the server delays that ACK */
            size_t half = size / 2;
            if ((half && send_msg(t, sk, fd, sk->sbuf, half)) ||
                send_msg(t, sk, fd, sk->sbuf + half, size - half))
                return -1;
            if (recv_all_qa(t, fd, sk->rbuf, reply))
                return -1;
        } else {
            if (send_msg(t, sk, fd, sk->sbuf, size) || recv_all_qa(t, fd, sk->rbuf, reply))
                return -1;
        }
        double t1 = fb_now_us();
        *sample = sk->wwr ? t1 - t0 : (t1 - t0) / 2.0;
        return 0;
    }
    if (recv_all_qa(t, fd, sk->rbuf, size))
        return -1;
    return send_msg(t, sk, fd, sk->sbuf, reply);
}

static int tcp_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    int fd = sk->fd[0];
    int w = t->opts.window;
    if (t->index == 0) {
        char ack;
        double t0 = fb_now_us();
        for (int k = 0; k < w; k++)
            if (send_msg(t, sk, fd, sk->sbuf, size))
                return -1;
        if (fb_recv_all(fd, &ack, 1))
            return -1;
        *sample = fb_now_us() - t0;
        return 0;
    }
    size_t stride = sk->slots ? size : 0;
    for (int k = 0; k < w; k++)
        if (fb_recv_all(fd, sk->rbuf + (size_t)k * stride, size))
            return -1;
    return fb_send_all(fd, "a", 1);
}

/* tcp.bibw: both sides send and receive a window at once. */
static int tcp_bibw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct sockst *sk = t->priv;
    size_t spend[MAX_STREAMS], rpend[MAX_STREAMS];
    for (int k = 0; k < sk->nfd; k++)
        spend[k] = rpend[k] = sk->window_bytes;
    double t0 = fb_now_us();
    if (multiplex(t, sk, size, spend, rpend, false, NULL))
        return -1;
    *sample = fb_now_us() - t0;
    return 0;
}

static int tcp_streams(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
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
                ssize_t n = recv(sk->fd[k], sk->rbuf, size, MSG_DONTWAIT);
                if (n == 0) {
                    fprintf(stderr, "recv: the peer closed connection %d\n", k);
                    return -1;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    perror("recv");
                    return -1;
                }
                if (n <= 0)
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

static int streams_run_for(struct fb_tp *t, size_t size, struct fb_tp_timed *tm,
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

static int udp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)timed;
    struct sockst *sk = t->priv;
    uint32_t seq = (uint32_t)iter + 1;
    if (t->index == 0) {
        put_hdr(sk->sbuf, seq, true);
        for (int attempt = 0;; attempt++) {
            if (attempt > 100)
                fb_tp_die(t, "UDP: 100 round trips in a row were lost");
            double t0 = fb_now_us();
            if (send(sk->ufd, sk->sbuf, size, 0) < 0 && errno != ECONNREFUSED) {
                perror("send");
                return -1;
            }
            for (;;) {
                if (!wait_readable(sk->ufd, -1, t->cfg.udp_timeout_ms)) {
                    sk->lost_rt++; /* no reply: send again and time the new attempt */
                    break;
                }
                ssize_t n = recv(sk->ufd, sk->rbuf, size, 0);
                if (n < 0)
                    break;
                if ((size_t)n != size || get_hdr(sk->rbuf).seq != seq) {
                    sk->stale++;
                    continue;
                }
                double t1 = fb_now_us();
                *sample = (t1 - t0) / 2.0;
                return 0;
            }
        }
    }
    /* Server: echo every ping; an old one (its reply was lost) is echoed again. */
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(sk->ufd, sk->rbuf, size, 0, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("recvfrom");
            return -1;
        }
        if ((size_t)n < UDP_HDR)
            continue;
        uint32_t got = get_hdr(sk->rbuf).seq;
        put_hdr(sk->sbuf, got, true);
        sendto(sk->ufd, sk->sbuf, (size_t)n, 0, (struct sockaddr *)&from, fl);
        if (got == seq) {
            sk->got = n;
            return 0;
        }
    }
}

/* Both sides' payload after the sequence header: the client's reply, the server's ping. */
static void udp_latency_check(struct fb_tp *t, size_t size, long iter)
{
    struct sockst *sk = t->priv;
    size_t n = t->index == 0 ? size : (size_t)sk->got;
    fb_tp_check(t, sk->rbuf + UDP_HDR, n - UDP_HDR, UDP_HDR, size, iter);
}

/* Echo late pings (sent again after a lost reply) until the client reaches the barrier:
 * a plain barrier would leave it waiting for an echo that never comes. */
static void echo_until_peer_moves_on(struct fb_tp *t, struct sockst *sk, size_t size,
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

static int udp_latency_sync(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    if (t->index == 1 && t->boot.fd >= 0)
        echo_until_peer_moves_on(t, sk, size, t->cfg.connect_timeout_s * 1e3);
    return t->boot.barrier(&t->boot);
}

static int udp_stream(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
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
static int log_seq(struct sockst *sk, uint32_t seq)
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
static void udp_stream_receive(struct fb_tp *t, struct sockst *sk, size_t size,
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

/* ---- after each size: counters and record fields ----------------------------------------- */

static void tcp_end_size(struct fb_tp *t, size_t size, struct fb_tp_side *me)
{
    (void)size;
    struct sockst *sk = t->priv;
    if (t->cfg.zerocopy)
        for (int k = 0; k < sk->nfd && sk->zc_done < sk->zc_sends; k++)
            for (int tries = 0; tries < 50 && sk->zc_done < sk->zc_sends; tries++)
                zc_reap(sk, sk->fd[k], true);
    double retrans = 0;
    for (int k = 0; k < sk->nfd; k++) {
        struct tcp_info ti;
        if (tcp_info(sk->fd[k], &ti) == 0) {
            retrans += (double)(ti.tcpi_total_retrans - sk->retrans0[k]);
            if (k == 0) {
                me->c[2] = ti.tcpi_rtt;
                me->c[3] = ti.tcpi_snd_cwnd;
            }
        }
    }
    me->retrans = retrans;
    me->c[0] = (double)sk->zc_sends;
    me->c[1] = (double)sk->zc_copied;
}

static void tcp_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                       const struct fb_tp_side *c, const struct fb_tp_side *s)
{
    (void)size, (void)iters;
    fb_json_double(j, "client_retransmits", c->retrans, 0);
    fb_json_double(j, "server_retransmits", s->retrans, 0);
    fb_json_double(j, "client_rtt_us", c->c[2], 0);
    fb_json_double(j, "client_snd_cwnd", c->c[3], 0);
    if (t->cfg.zerocopy) {
        fb_json_double(j, "client_zerocopy_sends", c->c[0], 0);
        fb_json_double(j, "client_zerocopy_copied", c->c[1], 0);
        fb_json_double(j, "server_zerocopy_sends", s->c[0], 0);
        fb_json_double(j, "server_zerocopy_copied", s->c[1], 0);
    }
}

static void streams_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                           const struct fb_tp_side *c, const struct fb_tp_side *s)
{
    const struct sockst *sk = t->priv;
    tcp_result(t, j, size, iters, c, s);
    fb_json_int(j, "streams", sk->nfd);
    if (t->time_mode) {
        /* iperf3's receiver total: all bytes of the sampled intervals over their time */
        fb_json_double(j, "stream_bytes_per_sample", t->bytes_per_sample / sk->nfd, 1);
        fb_json_double(j, "received_bytes", sk->timed_total, 0);
        fb_json_double(j, "sampled_s", sk->timed_us * 1e-6, 6);
        fb_json_double(j, "received_mb_per_s",
                       sk->timed_us > 0 ? sk->timed_total / sk->timed_us : NAN, 3);
    } else {
        fb_json_double(j, "stream_bytes_per_sample", (double)size * (double)t->opts.window, 1);
    }
    /* row-major: stream k's samples are stream_times[k*iterations .. (k+1)*iterations) */
    double *rows = malloc(sk->nst * sizeof(*rows) + 1);
    if (!rows)
        fb_tp_die(t, "out of memory");
    size_t n = sk->nst / (size_t)sk->nfd;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < sk->nfd; k++)
            rows[(size_t)k * n + i] = sk->stimes[i * (size_t)sk->nfd + (size_t)k];
    fb_json_double_array(j, "stream_times", rows, sk->nst, 4);
    free(rows);
}

static void udp_latency_end(struct fb_tp *t, size_t size, struct fb_tp_side *me)
{
    struct sockst *sk = t->priv;
    /* Echo late retries until the client has moved on to the bootstrap exchange (its last
     * reply may have been lost and it may still be asking). */
    if (t->index == 1)
        echo_until_peer_moves_on(t, sk, size, t->cfg.udp_timeout_ms * 2);
    me->c[0] = sk->lost_rt;
    me->c[1] = sk->stale;
}

static void udp_latency_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                               const struct fb_tp_side *c, const struct fb_tp_side *s)
{
    (void)t, (void)size, (void)iters, (void)s;
    fb_json_double(j, "lost_round_trips", c->c[0], 0);
    fb_json_double(j, "stale_replies", c->c[1], 0);
}

static void udp_stream_end(struct fb_tp *t, size_t size, struct fb_tp_side *me)
{
    struct sockst *sk = t->priv;
    if (t->index == 1) {
        udp_stream_receive(t, sk, size, me);
    } else {
        me->c[0] = sk->sent;
        me->c[1] = sk->send_err;
    }
}

static void udp_stream_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                              const struct fb_tp_side *c, const struct fb_tp_side *s)
{
    (void)size;
    double expect = (double)iters * t->opts.window;
    fb_json_str(j, "sample_side", "sender");
    fb_json_double(j, "datagrams_sent", c->c[0], 0);
    fb_json_double(j, "send_errors", c->c[1], 0);
    fb_json_double(j, "datagrams_expected", expect, 0);
    fb_json_double(j, "datagrams_received", s->c[0], 0);
    fb_json_double(j, "lost", s->c[1], 0);
    fb_json_double(j, "reordered", s->c[2], 0);
    fb_json_double(j, "duplicates", s->c[3], 0);
    fb_json_double(j, "loss_ratio", expect > 0 ? s->c[1] / expect : NAN, 6);
    fb_json_double(j, "received_bytes", s->c[4], 0);
    fb_json_double(j, "receiver_span_us", s->c[5], 1);
    fb_json_double(j, "received_mb_per_s", s->c[5] > 0 ? s->c[4] / s->c[5] : NAN, 3);
}

/* ---- udp.reorder ---------------------------------------------------------------------------- */

static int reorder_begin(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    if (!sk->log && log_seq(sk, 0)) /* a log, so the receiver keeps one */
        return -1;
    sk->nlog = 0;
    fb_reorder_free(&sk->ro);
    return udp_stream_begin(t, size);
}

/* The figures travel from the receiver as doubles: the counts, then (extent, count),
 * (displacement, count) and (offset, count) pairs of the bins that are not empty; head[8],
 * head[9] and head[10] say how many pairs of each. */
enum { RO_HEAD = 11 };

static double *reorder_blob(const struct fb_reorder *r, size_t *len)
{
    size_t n = RO_HEAD + 2 * (size_t)(r->max_extent + 1) + 2 * (size_t)(2 * r->dt + 1) +
               2 * (size_t)(r->max_offset + 1);
    double *b = calloc(n, sizeof(*b)), *p;
    if (!b)
        return NULL;
    double head[RO_HEAD] = {(double)r->sent, (double)r->arrivals, (double)r->received,
                            (double)r->duplicates, (double)r->lost, (double)r->out_of_range,
                            (double)r->reordered, (double)r->rd_beyond, 0, 0, 0};
    p = b + RO_HEAD;
    for (long e = 1; e <= r->max_extent; e++)
        if (r->extent_count[e]) {
            *p++ = (double)e, *p++ = (double)r->extent_count[e];
            head[8]++;
        }
    for (int k = -r->dt; k <= r->dt; k++)
        if (r->rd_count[r->dt + k]) {
            *p++ = k, *p++ = (double)r->rd_count[r->dt + k];
            head[9]++;
        }
    for (long o = 1; o <= r->max_offset; o++)
        if (r->offset_count[o]) {
            *p++ = (double)o, *p++ = (double)r->offset_count[o];
            head[10]++;
        }
    memcpy(b, head, sizeof(head));
    *len = (size_t)(p - b) * sizeof(*b);
    return b;
}

static void reorder_end(struct fb_tp *t, size_t size, struct fb_tp_side *me)
{
    struct sockst *sk = t->priv;
    udp_stream_end(t, size, me);
    double none = 0;
    size_t got = 0;
    if (t->index == 1) {
        long sent = sk->timed_windows * t->opts.window;
        if (fb_reorder_analyse(sk->log, sk->nlog, sent, t->cfg.displacement_dt, &sk->ro))
            fb_tp_die(t, "out of memory analysing %zu arrivals", sk->nlog);
        size_t len = 0;
        double *b = reorder_blob(&sk->ro, &len);
        if (!b)
            fb_tp_die(t, "out of memory");
        fb_tp_exchange(t, b, len, &none, sizeof(none), NULL);
        free(b);
        return;
    }
    size_t cap = (RO_HEAD + 4 * (size_t)sk->nlog + 4 * (size_t)t->cfg.displacement_dt + 64) *
                 sizeof(double);
    cap += 4 * sizeof(double) * (size_t)(sk->timed_windows * t->opts.window);
    double *b = malloc(cap);
    if (!b)
        fb_tp_die(t, "out of memory");
    fb_tp_exchange(t, &none, sizeof(none), b, cap, &got);
    free(sk->rblob);
    sk->rblob = b;
    sk->rblob_len = got / sizeof(double);
    if (got < RO_HEAD * sizeof(double) ||
        sk->rblob_len != RO_HEAD + 2 * (size_t)(b[8] + b[9] + b[10]))
        fb_tp_die(t, "bad reordering figures from the receiver (%zu bytes)", got);
}

static void reorder_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
                           const struct fb_tp_side *c, const struct fb_tp_side *s)
{
    struct sockst *sk = t->priv;
    udp_stream_result(t, j, size, iters, c, s);
    const double *b = sk->rblob;
    size_t ne = (size_t)b[8], nd = (size_t)b[9], no = (size_t)b[10];
    double received = b[2];
    fb_json_double(j, "reordered_ratio", received > 0 ? b[6] / received : 0, 6);
    fb_json_double(j, "reordered_rfc4737", b[6], 0);
    fb_json_double(j, "duplicates_rfc4737", b[3], 0);
    fb_json_double(j, "lost_rfc4737", b[4], 0);
    size_t nv = ne + nd + no + 1;
    double *v = malloc(nv * sizeof(*v)), *w = malloc(nv * sizeof(*w));
    if (!v || !w)
        fb_tp_die(t, "out of memory");
    double max_e = 0;
    for (size_t i = 0; i < ne; i++) {
        v[i] = b[RO_HEAD + 2 * i];
        w[i] = b[RO_HEAD + 2 * i + 1];
        max_e = v[i] > max_e ? v[i] : max_e;
    }
    fb_json_double(j, "reordering_extent_max", max_e, 0);
    fb_json_double_array(j, "reordering_extents", v, ne, 0);
    fb_json_double_array(j, "reordering_extent_counts", w, ne, 0);
    const double *d = b + RO_HEAD + 2 * ne;
    for (size_t i = 0; i < nd; i++) {
        v[i] = d[2 * i];
        w[i] = received > 0 ? d[2 * i + 1] / received : 0;
    }
    fb_json_int(j, "reorder_density_threshold", t->cfg.displacement_dt);
    fb_json_double_array(j, "reorder_density_displacements", v, nd, 0);
    fb_json_double_array(j, "reorder_density", w, nd, 6);
    fb_json_double(j, "reorder_density_beyond", b[7], 0);
    /* numbers below the highest received (what a resequencer's window must cover) */
    const double *o = d + 2 * nd;
    double max_o = 0;
    for (size_t i = 0; i < no; i++) {
        v[i] = o[2 * i];
        w[i] = o[2 * i + 1];
        max_o = v[i] > max_o ? v[i] : max_o;
    }
    fb_json_double(j, "reordering_offset_max", max_o, 0);
    fb_json_double_array(j, "reordering_offsets", v, no, 0);
    fb_json_double_array(j, "reordering_offset_counts", w, no, 0);
    free(v);
    free(w);
}

static void sock_teardown(struct fb_tp *t)
{
    struct sockst *sk = t->priv;
    for (int k = 0; k < sk->nfd; k++)
        close(sk->fd[k]);
    if (sk->ufd > 0)
        close(sk->ufd);
    fb_buf_free(sk->sbuf);
    fb_buf_free(sk->rbuf);
    free(sk->stimes);
    free(sk->log);
    free(sk->rblob);
    fb_reorder_free(&sk->ro);
    free(sk);
    t->priv = NULL;
}

#define TCP_OPTS (FB_OPT_NODELAY | FB_OPT_BUFS | FB_OPT_ZEROCOPY)
#define UDP_OPTS (FB_OPT_BUFS | FB_OPT_UDP_TIMEOUT)
#define SOCK_COMMON .setup = sock_setup, .meta = sock_meta, .teardown = sock_teardown
#define TCP_COMMON SOCK_COMMON, .family = FB_FAM_TCP, .size_floor = 1, .end_size = tcp_end_size
#define UDP_COMMON SOCK_COMMON, .family = FB_FAM_UDP, .size_floor = UDP_HDR, .size_ceil = 65507

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "tcp.latency", .cls = FB_CLASS_LATENCY,
     .opts = TCP_OPTS | FB_OPT_QUICKACK | FB_OPT_PATTERN | FB_OPT_POLL, TCP_COMMON,
     .begin_size = pingpong_begin, .iterate = tcp_latency, .fill = fill_message,
     .check = check_pingpong, .result = tcp_result},
    {.name = "tcp.bw", .cls = FB_CLASS_BANDWIDTH, .opts = TCP_OPTS, TCP_COMMON,
     .begin_size = bw_begin, .iterate = tcp_bw, .fill = fill_sender, .check = check_receiver,
     .result = tcp_result},
    {.name = "tcp.bibw", .cls = FB_CLASS_BANDWIDTH, .opts = TCP_OPTS, TCP_COMMON,
     .begin_size = bibw_begin, .iterate = tcp_bibw, .fill = fill_message,
     .check = check_windows, .result = tcp_result},
    {.name = "tcp.streams", .cls = FB_CLASS_BANDWIDTH,
     .opts = TCP_OPTS | FB_OPT_STREAMS | FB_OPT_TIMED, TCP_COMMON, .begin_size = streams_begin,
     .iterate = tcp_streams, .run_for = streams_run_for, .fill = fill_sender,
     .check = check_receiver, .result = streams_result,
     .help = "  Time mode (default, as iperf3): every stream writes --sizes bytes at a time with\n"
             "  no acknowledgement for --omit + --duration seconds; a sample is one --interval\n"
             "  of the receiver (its bytes over its measured length, all streams together).\n"
             "  Count mode (--iterations N): a sample is a window of --window writes on every\n"
             "  stream, each stream acknowledged. Each stream's own samples are in\n"
             "  stream_times (row-major, one row per stream).\n"},
    {.name = "udp.latency", .cls = FB_CLASS_LATENCY, .opts = UDP_OPTS, UDP_COMMON,
     .begin_size = pingpong_begin, .iterate = udp_latency, .fill = fill_message,
     .check = udp_latency_check, .sync = udp_latency_sync, .end_size = udp_latency_end,
     .result = udp_latency_result,
     .help = "  Datagrams carry an 8-byte sequence header, so sizes start at 8. A ping with no\n"
             "  reply within --udp-timeout is sent again (counted in lost_round_trips).\n"},
    {.name = "udp.stream", .cls = FB_CLASS_BANDWIDTH, .opts = UDP_OPTS, UDP_COMMON,
     .begin_size = udp_stream_begin, .iterate = udp_stream, .end_size = udp_stream_end,
     .result = udp_stream_result,
     .help = "  Samples are the sender's window times (UDP has no acks); the receiver's counts\n"
             "  (received, lost, reordered, duplicates) and delivered rate are in the record.\n"},
    {.name = "udp.reorder", .cls = FB_CLASS_BANDWIDTH, .opts = UDP_OPTS | FB_OPT_REORDER,
     UDP_COMMON, .begin_size = reorder_begin, .iterate = udp_stream, .end_size = reorder_end,
     .result = reorder_result,
     .help = "  A probe of numbered datagrams sent as udp.stream does; the receiver logs the\n"
             "  numbers as they arrive and reports RFC 4737's reordered ratio and extent\n"
             "  distribution, RFC 5236's reorder density (displacements up to\n"
             "  --displacement-threshold), loss and duplicates.\n"},
};

FB_TP_MAIN(KERNELS)
