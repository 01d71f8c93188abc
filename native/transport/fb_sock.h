/* fb_sock.h - socket plumbing shared by the rendezvous and the TCP/UDP kernels. */
#ifndef FB_SOCK_H
#define FB_SOCK_H

#include <stdbool.h>
#include <stddef.h>

/* Options that must be set before listen/connect (buffer sizes fix the window scale at the
 * handshake) or right after. Zero/false leaves the kernel default. */
struct fb_sockopts {
    long sndbuf, rcvbuf;
    bool nodelay;
    bool zerocopy; /* SO_ZEROCOPY (the sends then pass MSG_ZEROCOPY) */
};

/* Apply *o to fd; -1 with a message if the kernel refuses one. */
int fb_sock_apply(int fd, const struct fb_sockopts *o);

/* Listening socket (type SOCK_STREAM or SOCK_DGRAM) on host (NULL/"": any address) and *port
 * (0: an ephemeral port, written back). -1 with a message on failure. */
int fb_bind_socket(int type, const char *host, int *port, const struct fb_sockopts *o);
int fb_listen(const char *host, int *port, const struct fb_sockopts *o);

/* Accept one connection, waiting at most timeout_s; -1 on timeout or error. */
int fb_accept_timeout(int lfd, double timeout_s);

/* Connect to host:port, retrying while nobody listens yet (the server may start a little
 * later), for at most timeout_s. */
int fb_connect_retry(const char *host, int port, double timeout_s, const struct fb_sockopts *o);

/* UDP socket connected to host:port (the peer's address). */
int fb_udp_connect(int fd, const char *host, int port);

/* Whole-buffer send/recv on a blocking socket; -1 on error or EOF (message on stderr). */
int fb_send_all(int fd, const void *buf, size_t len);
int fb_recv_all(int fd, void *buf, size_t len);

/* The numeric address of the local end of fd ("" if unknown). */
void fb_sock_local_addr(int fd, char *out, size_t cap);

#endif
