/* sock.h - the socket kernels' shared state and helpers, split by family as iperf3 splits
 * iperf_tcp.c / iperf_udp.c: sock.c (set-up, buffers, --validate, counters, the kernel table),
 * sock_tcp.c (tcp.latency, tcp.bw, tcp.bibw, tcp.streams), sock_udp.c (udp.latency,
 * udp.stream), sock_reorder.c (udp.reorder). Built once per kernel with FB_KERNEL naming which
 * one.
 *
 * The data path is separate from the bootstrap: the server opens a data listener (or UDP
 * socket) on its bind address and announces its port through the bootstrap, so the same code
 * runs under the TCP rendezvous and under mpirun.
 */
#ifndef SOCK_H
#define SOCK_H

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

bool is_udp(const struct fb_tp *t);

/* Shared across the family files. */
void echo_until_peer_moves_on(struct fb_tp *t, struct sockst *sk, size_t size, double timeout_ms);
int log_seq(struct sockst *sk, uint32_t seq);
int multiplex(struct fb_tp *t, struct sockst *sk, size_t size, size_t *spend, size_t *rpend,
    bool acks, double *stamp);
/* A non-blocking read of what connection k has now: bytes read, 0 when nothing is there yet
 * (EAGAIN, EINTR), -1 with a message when the peer closed it or it failed. */
ssize_t recv_ready(int fd, void *buf, size_t len, int k);
int recv_all_qa(const struct fb_tp *t, int fd, void *buf, size_t len);
int reorder_begin(struct fb_tp *t, size_t size);
void reorder_end(struct fb_tp *t, size_t size, struct fb_tp_side *me);
void reorder_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
    const struct fb_tp_side *c, const struct fb_tp_side *s);
int send_msg(struct fb_tp *t, struct sockst *sk, int fd, const char *buf, size_t len);
void sock_teardown(struct fb_tp *t);
int streams_run_for(struct fb_tp *t, size_t size, struct fb_tp_timed *tm, struct fb_tp_side *me);
int tcp_bibw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
int tcp_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
int tcp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
int tcp_streams(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
int udp_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
void udp_latency_check(struct fb_tp *t, size_t size, long iter);
int udp_latency_sync(struct fb_tp *t, size_t size);
int udp_stream(struct fb_tp *t, size_t size, long iter, bool timed, double *sample);
int udp_stream_begin(struct fb_tp *t, size_t size);
void udp_stream_end(struct fb_tp *t, size_t size, struct fb_tp_side *me);
void udp_stream_receive(struct fb_tp *t, struct sockst *sk, size_t size, struct fb_tp_side *me);
void udp_stream_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
    const struct fb_tp_side *c, const struct fb_tp_side *s);
void zc_reap(struct sockst *sk, int fd, bool block);

#endif
