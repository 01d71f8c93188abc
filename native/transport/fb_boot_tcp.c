/* fb_boot_tcp.c - the TCP rendezvous: one control connection, length-prefixed blobs. */
#include "fb_boot.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fb_json.h"
#include "fb_timer.h"
#include "fb_sock.h"

static int boot_exchange(struct fb_boot *b, const void *in, size_t len, void *out, size_t cap,
                         size_t *got)
{
    uint32_t n = (uint32_t)len, peer_n = 0;
    /* Both sides write first: blobs are small (far below any socket buffer), so this cannot
     * deadlock and saves a round trip over a send/recv ordering by index. */
    if (fb_send_all(b->fd, &n, sizeof(n)) || (len && fb_send_all(b->fd, in, len)))
        return -1;
    if (fb_recv_all(b->fd, &peer_n, sizeof(peer_n)))
        return -1;
    if (peer_n > cap) {
        fprintf(stderr, "bootstrap: peer blob of %u bytes exceeds %zu\n", peer_n, cap);
        return -1;
    }
    if (peer_n && fb_recv_all(b->fd, out, peer_n))
        return -1;
    if (got)
        *got = peer_n;
    return 0;
}

static int boot_barrier(struct fb_boot *b)
{
    char dummy;
    size_t got;
    return boot_exchange(b, "", 0, &dummy, sizeof(dummy), &got);
}

/* How long boot_spin_barrier polls before it sleeps in poll(): covers a peer that arrives
 * within a few wake-ups, without burning a core through a peer's long --validate check. */
#define SPIN_US 200.0

/* One byte each way on the control connection, read without blocking in a spin, then (after
 * SPIN_US) waiting in poll(). */
static int boot_spin_barrier(struct fb_boot *b)
{
    char c = 'b';
    if (fb_send_all(b->fd, &c, 1))
        return -1;
    double until = fb_now_us() + SPIN_US;
    for (;;) {
        ssize_t n = recv(b->fd, &c, 1, MSG_DONTWAIT);
        if (n == 1)
            return 0;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            fprintf(stderr, "bootstrap: %s\n", n ? strerror(errno) : "the peer closed");
            return -1;
        }
        if (fb_now_us() > until) {
            struct pollfd p = {.fd = b->fd, .events = POLLIN};
            poll(&p, 1, -1);
        }
    }
}

static void boot_finalize(struct fb_boot *b)
{
    if (b->fd >= 0)
        close(b->fd);
    b->fd = -1;
}

int fb_boot_tcp_init(struct fb_boot *b, const struct fb_boot_cfg *cfg)
{
    memset(b, 0, sizeof(*b));
    b->size = 2;
    b->index = cfg->server ? 1 : 0;
    b->name = "tcp";
    b->barrier = boot_barrier;
    b->spin_barrier = boot_spin_barrier;
    b->exchange = boot_exchange;
    b->finalize = boot_finalize;
    b->fd = -1;

    if (cfg->server) {
        int port = cfg->port;
        int lfd = fb_listen(cfg->bind, &port, NULL);
        if (lfd < 0)
            return -1;
        b->port = port;
        struct fb_json j = {0};
        fb_json_begin(&j, "listen");
        fb_json_str(&j, "kernel", cfg->kernel);
        fb_json_str(&j, "address", cfg->bind ? cfg->bind : "");
        fb_json_int(&j, "port", port);
        fb_json_end(&j, stdout);
        fb_json_free(&j);
        b->fd = fb_accept_timeout(lfd, cfg->timeout_s);
        close(lfd);
        if (b->fd < 0) {
            fprintf(stderr, "%s: no client connected to port %d within %.0f s\n", cfg->kernel,
                    port, cfg->timeout_s);
            return -1;
        }
    } else {
        if (!cfg->peer || !cfg->port) {
            fprintf(stderr, "%s: the client needs --peer ADDRESS and --port PORT\n", cfg->kernel);
            return -1;
        }
        b->port = cfg->port;
        b->fd = fb_connect_retry(cfg->peer, cfg->port, cfg->timeout_s, NULL);
        if (b->fd < 0)
            return -1;
    }
    int one = 1;
    setsockopt(b->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A first exchange proves both ends speak this protocol before any kernel starts. */
    char hello[8];
    size_t got = 0;
    if (boot_exchange(b, "fabench", 8, hello, sizeof(hello), &got) || got != 8 ||
        memcmp(hello, "fabench", 8) != 0) {
        fprintf(stderr, "%s: the peer on the rendezvous port is not a fabench kernel\n",
                cfg->kernel);
        boot_finalize(b);
        return -1;
    }
    return 0;
}
