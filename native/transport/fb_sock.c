#include "fb_sock.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fb_timer.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif

int fb_sock_apply(int fd, const struct fb_sockopts *o)
{
    if (!o)
        return 0;
    int one = 1;
    if (o->sndbuf > 0) {
        int v = (int)o->sndbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v))) {
            perror("setsockopt(SO_SNDBUF)");
            return -1;
        }
    }
    if (o->rcvbuf > 0) {
        int v = (int)o->rcvbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v))) {
            perror("setsockopt(SO_RCVBUF)");
            return -1;
        }
    }
    if (o->nodelay && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
        perror("setsockopt(TCP_NODELAY)");
        return -1;
    }
    if (o->zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
        perror("setsockopt(SO_ZEROCOPY)");
        return -1;
    }
    return 0;
}

static struct addrinfo *resolve(const char *host, int port, int type, bool passive)
{
    struct addrinfo hints, *res = NULL;
    char service[16];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = type;
    hints.ai_flags = (passive ? AI_PASSIVE : 0) | AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
    if (rc) {
        fprintf(stderr, "cannot resolve %s: %s\n", host && *host ? host : "(any)",
                gai_strerror(rc));
        return NULL;
    }
    return res;
}

int fb_bind_socket(int type, const char *host, int *port, const struct fb_sockopts *o)
{
    struct addrinfo *res = resolve(host, *port, type, true);
    if (!res)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (fb_sock_apply(fd, o) == 0 && bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "cannot bind %s port %d: %s\n", host && *host ? host : "(any)", *port,
                strerror(errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int fb_listen(const char *host, int *port, const struct fb_sockopts *o)
{
    int fd = fb_bind_socket(SOCK_STREAM, host, port, o);
    if (fd >= 0 && listen(fd, 64)) {
        perror("listen");
        close(fd);
        return -1;
    }
    return fd;
}

int fb_accept_timeout(int lfd, double timeout_s)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int ms = timeout_s > 0 ? (int)(timeout_s * 1000) : -1;
    int rc;
    do
        rc = poll(&p, 1, ms);
    while (rc < 0 && errno == EINTR);
    if (rc <= 0)
        return -1;
    return accept(lfd, NULL, NULL);
}

int fb_connect_retry(const char *host, int port, double timeout_s, const struct fb_sockopts *o)
{
    double deadline = fb_now_us() + timeout_s * 1e6;
    int last_err = 0;
    for (;;) {
        struct addrinfo *res = resolve(host, port, SOCK_STREAM, false);
        if (!res)
            return -1;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
            if (fd < 0)
                continue;
            if (fb_sock_apply(fd, o)) {
                close(fd);
                freeaddrinfo(res);
                return -1;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                freeaddrinfo(res);
                return fd;
            }
            last_err = errno;
            close(fd);
        }
        freeaddrinfo(res);
        if (fb_now_us() > deadline)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "cannot connect to %s port %d within %.0f s: %s\n", host, port, timeout_s,
            strerror(last_err));
    return -1;
}

int fb_udp_connect(int fd, const char *host, int port)
{
    struct addrinfo *res = resolve(host, port, SOCK_DGRAM, false);
    if (!res)
        return -1;
    int rc = -1;
    for (struct addrinfo *ai = res; ai && rc; ai = ai->ai_next)
        rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc)
        fprintf(stderr, "cannot connect UDP socket to %s port %d: %s\n", host, port,
                strerror(errno));
    freeaddrinfo(res);
    return rc;
}

int fb_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("send");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fb_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("recv");
            return -1;
        }
        if (n == 0) {
            fprintf(stderr, "recv: the peer closed the connection\n");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void fb_sock_local_addr(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    out[0] = '\0';
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, out, (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
}
