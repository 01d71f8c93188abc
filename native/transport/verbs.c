/* verbs.c - RDMA verbs kernels over RC queue pairs connected with rdma-cm: verbs.latency,
 * verbs.bw; --op send (send/recv) or write (RDMA write with immediate, so the target learns of
 * each arrival from a receive completion, as a ping-pong needs).
 *
 * Without an RDMA device (no HCA, no Soft-RoCE) the kernel prints a skip record and exits 77
 * before it waits for any peer, on either side.
 */
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_loop.h"
#include "fb_timer.h"
#include "fb_tp.h"

struct remote_buf {
    uint64_t addr;
    uint32_t rkey;
};

struct verbsst {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *listen_id, *id;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_mr *smr, *rmr;
    char *sbuf, *rbuf;
    size_t cap;
    struct remote_buf remote;
    long tx_done, rx_done;
    long tx_posted, rx_posted; /* the engine's wait() completes up to these */
    bool write;
    char devname[64];
    struct fb_xfer x; /* the loop engine's hooks (fb_loop.h) */
    struct fb_tp *t;
};

/* Before any peer: is there a device at all (and the one asked for)? */
static int verbs_precheck(struct fb_tp *t)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        if (list)
            ibv_free_device_list(list);
        fb_tp_skip(t, "no RDMA device");
    }
    bool found = !t->cfg.device;
    for (int i = 0; i < n && !found; i++)
        found = !strcmp(ibv_get_device_name(list[i]), t->cfg.device);
    ibv_free_device_list(list);
    if (!found) {
        char why[160];
        snprintf(why, sizeof(why), "RDMA device %s not found", t->cfg.device);
        fb_tp_skip(t, why);
    }
    return 0;
}

static struct rdma_cm_event *expect_event(struct fb_tp *t, struct verbsst *v,
                                          enum rdma_cm_event_type want)
{
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(v->ch, &ev))
        fb_tp_die(t, "rdma_get_cm_event: %m");
    if (ev->event != want)
        fb_tp_die(t, "rdma-cm: got %s, expected %s", rdma_event_str(ev->event),
                  rdma_event_str(want));
    return ev;
}

static void make_qp(struct fb_tp *t, struct verbsst *v, struct rdma_cm_id *id)
{
    int depth = t->opts.window + 8;
    v->pd = ibv_alloc_pd(id->verbs);
    v->cq = v->pd ? ibv_create_cq(id->verbs, 2 * depth, NULL, NULL, 0) : NULL;
    if (!v->cq)
        fb_tp_die(t, "cannot allocate a protection domain / completion queue: %m");
    struct ibv_qp_init_attr qa = {
        .send_cq = v->cq, .recv_cq = v->cq, .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth,
                .max_send_sge = 1, .max_recv_sge = 1},
    };
    if (rdma_create_qp(id, v->pd, &qa))
        fb_tp_die(t, "rdma_create_qp: %m");
    /* one message each way, validating or not (see check_receiver) */
    v->cap = fb_opts_max_size(&t->opts, 64);
    v->sbuf = fb_buf_alloc(v->cap);
    v->rbuf = fb_buf_alloc(v->cap);
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    v->smr = v->sbuf ? ibv_reg_mr(v->pd, v->sbuf, v->cap, IBV_ACCESS_LOCAL_WRITE) : NULL;
    v->rmr = v->rbuf ? ibv_reg_mr(v->pd, v->rbuf, v->cap, acc) : NULL;
    if (!v->smr || !v->rmr)
        fb_tp_die(t, "ibv_reg_mr: %m");
}

static int verbs_setup(struct fb_tp *t)
{
    struct verbsst *v = calloc(1, sizeof(*v));
    if (!v)
        return -1;
    t->priv = v;
    v->write = !strcmp(t->cfg.op, "write");
    v->ch = rdma_create_event_channel();
    if (!v->ch)
        fb_tp_die(t, "rdma_create_event_channel: %m");
    char blob[320] = "", got[320] = "";
    if (t->index == 1) {
        if (rdma_create_id(v->ch, &v->listen_id, NULL, RDMA_PS_TCP))
            fb_tp_die(t, "rdma_create_id: %m");
        struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *ai;
        if (getaddrinfo(t->cfg.bind, "0", &hints, &ai))
            fb_tp_die(t, "cannot resolve %s", t->cfg.bind ? t->cfg.bind : "(any)");
        if (rdma_bind_addr(v->listen_id, ai->ai_addr) || rdma_listen(v->listen_id, 1))
            fb_tp_die(t, "rdma_bind_addr/listen: %m");
        freeaddrinfo(ai);
        snprintf(blob, sizeof(blob), "%s %u", t->cfg.bind ? t->cfg.bind : "",
                 (unsigned)ntohs(rdma_get_src_port(v->listen_id)));
        fb_tp_exchange(t, blob, strlen(blob) + 1, got, sizeof(got) - 1, NULL);
        struct rdma_cm_event *ev = expect_event(t, v, RDMA_CM_EVENT_CONNECT_REQUEST);
        v->id = ev->id;
        rdma_ack_cm_event(ev);
        make_qp(t, v, v->id);
        struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};
        if (rdma_accept(v->id, &cp))
            fb_tp_die(t, "rdma_accept: %m");
        rdma_ack_cm_event(expect_event(t, v, RDMA_CM_EVENT_ESTABLISHED));
    } else {
        fb_tp_exchange(t, blob, 1, got, sizeof(got) - 1, NULL);
        char host[256] = "", port[16] = "";
        if (sscanf(got, "%255s %15s", host, port) != 2) {
            snprintf(host, sizeof(host), "%s", t->cfg.peer ? t->cfg.peer : "localhost");
            if (sscanf(got, " %15s", port) != 1)
                fb_tp_die(t, "bad rdma-cm port announcement '%s'", got);
        }
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
        if (getaddrinfo(host, port, &hints, &ai))
            fb_tp_die(t, "cannot resolve %s", host);
        if (rdma_create_id(v->ch, &v->id, NULL, RDMA_PS_TCP) ||
            rdma_resolve_addr(v->id, NULL, ai->ai_addr, 2000))
            fb_tp_die(t, "rdma_resolve_addr: %m");
        freeaddrinfo(ai);
        rdma_ack_cm_event(expect_event(t, v, RDMA_CM_EVENT_ADDR_RESOLVED));
        if (rdma_resolve_route(v->id, 2000))
            fb_tp_die(t, "rdma_resolve_route: %m");
        rdma_ack_cm_event(expect_event(t, v, RDMA_CM_EVENT_ROUTE_RESOLVED));
        make_qp(t, v, v->id);
        struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
                                     .retry_count = 7, .rnr_retry_count = 7};
        if (rdma_connect(v->id, &cp))
            fb_tp_die(t, "rdma_connect: %m");
        rdma_ack_cm_event(expect_event(t, v, RDMA_CM_EVENT_ESTABLISHED));
    }
    struct remote_buf mine = {.addr = (uintptr_t)v->rbuf, .rkey = v->rmr->rkey};
    fb_tp_exchange(t, &mine, sizeof(mine), &v->remote, sizeof(v->remote), NULL);
    snprintf(v->devname, sizeof(v->devname), "%s", ibv_get_device_name(v->id->verbs->device));
    return 0;
}

static void verbs_meta(struct fb_tp *t, struct fb_json *j)
{
    struct verbsst *v = t->priv;
    char sel[96];
    snprintf(sel, sizeof(sel), "verbs:%s:rc-%s", v->devname, t->cfg.op);
    fb_json_str(j, "library", "rdma-core (libibverbs, librdmacm)");
    fb_json_str(j, "selected_transport", sel);
    fb_json_str(j, "verbs_device", v->devname);
    fb_json_str(j, "verbs_op", t->cfg.op);
    fb_json_uint(j, "verbs_port", v->id->port_num);
}

static int post_recv(struct verbsst *v, size_t off, size_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)(v->rbuf + off), .length = (uint32_t)len,
                          .lkey = v->rmr->lkey};
    struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;
    return ibv_post_recv(v->id->qp, &wr, &bad);
}

static int post_send(struct verbsst *v, size_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)v->sbuf, .length = (uint32_t)len,
                          .lkey = v->smr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    if (v->write) {
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.wr.rdma.remote_addr = v->remote.addr;
        wr.wr.rdma.rkey = v->remote.rkey;
    } else {
        wr.opcode = IBV_WR_SEND;
    }
    return ibv_post_send(v->id->qp, &wr, &bad);
}

static int wait_cq(struct fb_tp *t, struct verbsst *v, long tx, long rx)
{
    struct ibv_wc wc[16];
    while (v->tx_done < tx || v->rx_done < rx) {
        int n = ibv_poll_cq(v->cq, 16, wc);
        if (n < 0)
            return -1;
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                fprintf(stderr, "%s: work completion failed: %s\n", t->k->name,
                        ibv_wc_status_str(wc[i].status));
                return -1;
            }
            if (wc[i].opcode & IBV_WC_RECV)
                v->rx_done++;
            else
                v->tx_done++;
        }
    }
    return 0;
}

/* The engine's hooks. A receive is named by its offset in the registered rbuf; the 1-byte
 * ack is received at rbuf + 0 and sent from sbuf (the engine's own ack byte is not
 * registered). Every data message, --op write's too, lands at the receiver's rbuf + 0. */
static int hook_recv(void *c, void *buf, size_t len, int tag)
{
    struct verbsst *v = c;
    bool ack = tag == FB_TAG_ACK;
    if (post_recv(v, ack ? 0 : (size_t)((char *)buf - v->rbuf), ack ? 1 : len))
        return -1;
    v->rx_posted++;
    return 0;
}

static int hook_send(void *c, void *buf, size_t len, int tag)
{
    struct verbsst *v = c;
    (void)buf;
    if (post_send(v, tag == FB_TAG_ACK ? 1 : len))
        return -1;
    v->tx_posted++;
    return 0;
}

static int hook_wait(void *c)
{
    struct verbsst *v = c;
    return wait_cq(v->t, v, v->tx_posted, v->rx_posted);
}

/* Each size starts the engine afresh over this connection. prepost: the reply's (ack's)
 * receive goes out before the send that provokes it, as this kernel always did (an RC send
 * without a posted receive is an RNR retry). */
static void engine_hooks(struct fb_tp *t)
{
    struct verbsst *v = t->priv;
    v->t = t;
    v->x = (struct fb_xfer){.post_recv = hook_recv, .post_send = hook_send, .wait = hook_wait,
                            .c = v, .prepost = true};
}

static int lat_begin(struct fb_tp *t, size_t size)
{
    engine_hooks(t);
    t->bytes_per_sample = (double)size;
    t->messages_per_sample = 1;
    t->bytes_per_iteration = 2.0 * (double)size;
    return 0;
}

static int bw_begin(struct fb_tp *t, size_t size)
{
    engine_hooks(t);
    size_t w = (size_t)t->opts.window;
    t->bytes_per_sample = (double)(size * w);
    t->messages_per_sample = (double)w;
    t->bytes_per_iteration = t->bytes_per_sample;
    return 0;
}

/* --validate, outside the timed region (the engine's barrier between fill and iteration). */
static void fill_send(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_fill(t, ((struct verbsst *)t->priv)->sbuf, size, 0, size, iter);
}

static void fill_sender(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 0)
        fill_send(t, size, iter);
}

static void check_one(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_check(t, ((struct verbsst *)t->priv)->rbuf, size, 0, size, iter);
}

/* The window's messages (sends or RDMA writes) all land in the one slot and carry the
 * iteration's bytes, so the slot, read after the window outside the timed region, holds the
 * last to land whole, and a validated run keeps a plain run's footprint (as ofi.bw, ucx.bw and
 * the MPI kernels: a slot per message would time W times the memory). */
static void check_receiver(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 1)
        check_one(t, size, iter);
}

/* The ping-pong is the engine's (fb_pingpong): the pong's receive is posted before the ping
 * (prepost); the responder posts its receive and completes it, then its send. */
static int verbs_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct verbsst *v = t->priv;
    return fb_pingpong(&v->x, t->index == 0, v->sbuf, v->rbuf, size, 1, sample);
}

/* The window is the engine's (fb_window): the sender posts the ack's receive, then the
 * window's sends, and completes them all; the receiver posts the window's receives (all into the
 * one slot, validating too), completes them, then sends the ack. */
static int verbs_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct verbsst *v = t->priv;
    return fb_window(&v->x, t->index == 0, v->sbuf, v->rbuf, NULL, NULL, size, t->opts.window,
                     sample);
}

static void verbs_teardown(struct fb_tp *t)
{
    struct verbsst *v = t->priv;
    rdma_disconnect(v->id);
    rdma_destroy_qp(v->id);
    ibv_dereg_mr(v->smr);
    ibv_dereg_mr(v->rmr);
    ibv_destroy_cq(v->cq);
    ibv_dealloc_pd(v->pd);
    rdma_destroy_id(v->id);
    if (v->listen_id)
        rdma_destroy_id(v->listen_id);
    rdma_destroy_event_channel(v->ch);
    fb_buf_free(v->sbuf);
    fb_buf_free(v->rbuf);
    free(v);
    t->priv = NULL;
}

#define VERBS_COMMON                                                                            \
    .family = FB_FAM_VERBS, .opts = FB_OPT_DEVICE | FB_OPT_OP, .size_floor = 1,               \
    .precheck = verbs_precheck, .setup = verbs_setup, .meta = verbs_meta,                      \
    .teardown = verbs_teardown

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "verbs.latency", .cls = FB_CLASS_LATENCY, VERBS_COMMON, .begin_size = lat_begin,
     .iterate = verbs_latency, .fill = fill_send, .check = check_one},
    {.name = "verbs.bw", .cls = FB_CLASS_BANDWIDTH, VERBS_COMMON, .begin_size = bw_begin,
     .iterate = verbs_bw, .fill = fill_sender, .check = check_receiver},
};

FB_TP_MAIN(KERNELS)
