/* sock.c - the socket kernels' set-up, buffers, --validate, counters and kernel table
 * (sock.h). */
#include "sock.h"

bool is_udp(const struct fb_tp *t) { return t->k->family == FB_FAM_UDP; }

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
int recv_all_qa(const struct fb_tp *t, int fd, void *buf, size_t len)
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

ssize_t recv_ready(int fd, void *buf, size_t len, int k)
{
    ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
    if (n == 0) {
        fprintf(stderr, "recv: the peer closed connection %d\n", k);
        return -1;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        perror("recv");
        return -1;
    }
    return n < 0 ? 0 : n;
}

/* Completions of MSG_ZEROCOPY sends from the error queue; wait for at least one if `block`. */
void zc_reap(struct sockst *sk, int fd, bool block)
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

int send_msg(struct fb_tp *t, struct sockst *sk, int fd, const char *buf, size_t len)
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
int multiplex(struct fb_tp *t, struct sockst *sk, size_t size, size_t *spend,
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
                    /* one message-sized buffer for every stream, validating or not: every
                     * message carries the same bytes, so it ends holding a whole one */
                    size_t chunk = size - roff[k] % size;
                    if (chunk > rpend[k])
                        chunk = rpend[k];
                    ssize_t n = recv_ready(sk->fd[k], sk->rbuf + roff[k] % size, chunk, k);
                    if (n < 0)
                        return -1;
                    if (n > 0) {
                        roff[k] += (size_t)n;
                        rpend[k] -= (size_t)n;
                        if (!rpend[k] && acks) /* the receiver's ack for this stream */
                            if (fb_send_all(sk->fd[k], "a", 1))
                                return -1;
                    }
                } else if (ackwait[k] && !spend[k]) {
                    char a;
                    ssize_t n = recv_ready(sk->fd[k], &a, 1, k);
                    if (n < 0)
                        return -1;
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

/* Buffers for `size`: one message to send, one to receive into, validating or not (see
 * check_window), so a validated run has a plain run's cache footprint. */
static int sock_buffers(struct fb_tp *t, struct sockst *sk, size_t size)
{
    size_t s = size < 64 ? 64 : size;
    if (s > sk->scap) {
        fb_buf_free(sk->sbuf);
        if (!(sk->sbuf = fb_buf_alloc_pages(s, t->opts.hugepages)))
            return -1;
        sk->scap = s;
    }
    if (s > sk->rcap) {
        fb_buf_free(sk->rbuf);
        if (!(sk->rbuf = fb_buf_alloc_pages(s, t->opts.hugepages)))
            return -1;
        sk->rcap = s;
    }
    memset(sk->sbuf, 'x', size);
    sk->window_bytes = size * (size_t)t->opts.window;
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
    /* an iteration is --batch round trips (tcp.latency; 1 for udp.latency) */
    t->bytes_per_iteration = (sk->wwr ? (double)size + 8 : 2.0 * (double)size) *
                             (double)t->opts.batch;
    return sock_buffers(t, sk, size);
}

/* One window of `streams` streams in one direction, or both with `both`. */
static int window_begin(struct fb_tp *t, size_t size, int streams, bool both)
{
    struct sockst *sk = t->priv;
    double w = (double)t->opts.window * streams * (both ? 2 : 1);
    t->bytes_per_sample = (double)size * w;
    t->messages_per_sample = w;
    t->bytes_per_iteration = t->bytes_per_sample;
    return sock_buffers(t, sk, size);
}

static int bw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 1, false); }
static int bibw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 1, true); }

static int streams_begin(struct fb_tp *t, size_t size)
{
    return window_begin(t, size, ((struct sockst *)t->priv)->nfd, false);
}

/* udp.stream: the receiver keeps nothing (it checks as datagrams arrive, untimed). */
int udp_stream_begin(struct fb_tp *t, size_t size)
{
    struct sockst *sk = t->priv;
    t->bytes_per_sample = (double)size * t->opts.window;
    t->messages_per_sample = t->opts.window;
    t->bytes_per_iteration = t->bytes_per_sample;
    return sock_buffers(t, sk, size);
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

/* The window's messages on every stream this side received, all read into the one receive
 * buffer, which holds the last of them whole: every message of an iteration carries the same
 * bytes (the sender writes its one filled buffer --window times), so a byte damaged in the
 * last message, a byte lost or duplicated anywhere in the window (the stream's later bytes all
 * shift), or a stale or foreign iteration shows in it; a byte damaged in place in an earlier
 * message is overwritten unseen. Checking each message as it completes would catch that too,
 * but inside the timed region: the
 * pattern check of a 4 MiB message took 5.6-6.0 ms on the 2-core development host, 7-8x its
 * memcpy (5 runs), so a validated window would time mostly the checker. The slot is checked
 * after the window instead, as the MPI kernels, ucx.bw and ofi.bw check theirs. */
static void check_window(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_check(t, ((struct sockst *)t->priv)->rbuf, size, 0, size, iter);
}

static void check_receiver(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 1)
        check_window(t, size, iter);
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

void udp_stream_end(struct fb_tp *t, size_t size, struct fb_tp_side *me)
{
    struct sockst *sk = t->priv;
    if (t->index == 1) {
        udp_stream_receive(t, sk, size, me);
    } else {
        me->c[0] = sk->sent;
        me->c[1] = sk->send_err;
    }
}

void udp_stream_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
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

#define TCP_OPTS (FB_OPT_NODELAY | FB_OPT_BUFS | FB_OPT_ZEROCOPY)
#define UDP_OPTS (FB_OPT_BUFS | FB_OPT_UDP_TIMEOUT)
#define SOCK_COMMON .setup = sock_setup, .meta = sock_meta, .teardown = sock_teardown
#define TCP_COMMON SOCK_COMMON, .family = FB_FAM_TCP, .size_floor = 1, .end_size = tcp_end_size
#define UDP_COMMON SOCK_COMMON, .family = FB_FAM_UDP, .size_floor = UDP_HDR, .size_ceil = 65507

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "tcp.latency", .cls = FB_CLASS_LATENCY,
     .opts = TCP_OPTS | FB_OPT_QUICKACK | FB_OPT_PATTERN | FB_OPT_POLL | FB_SC_BATCH,
     TCP_COMMON,
     .begin_size = pingpong_begin, .iterate = tcp_latency, .fill = fill_message,
     .check = check_pingpong, .result = tcp_result},
    {.name = "tcp.bw", .cls = FB_CLASS_BANDWIDTH, .opts = TCP_OPTS, TCP_COMMON,
     .begin_size = bw_begin, .iterate = tcp_bw, .fill = fill_sender, .check = check_receiver,
     .result = tcp_result},
    {.name = "tcp.bibw", .cls = FB_CLASS_BANDWIDTH, .opts = TCP_OPTS, TCP_COMMON,
     .begin_size = bibw_begin, .iterate = tcp_bibw, .fill = fill_message,
     .check = check_window, .result = tcp_result},
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
