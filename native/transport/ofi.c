/* ofi.c - libfabric kernels: ofi.latency, ofi.bw, over reliable-datagram (RDM, the default)
 * or connected message (MSG, --endpoint msg) endpoints.
 *
 * The provider is whatever fi_getinfo returns first for the hints (FI_PROVIDER in the
 * environment and --provider both narrow it); the meta record names the provider, fabric,
 * domain and endpoint type that were actually opened.
 *
 * RDM: each side inserts the other's endpoint name into an address vector. MSG: the server
 * listens on a passive endpoint, its name goes to the client through the bootstrap, and the
 * connection is made through an event queue; after that the data path is the same code.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fb_buf.h"
#include "fb_loop.h"
#include "fb_timer.h"
#include "fb_tp.h"

#define FB_FI_VERSION FI_VERSION(1, 9)
#define FB_FI_NAME_MAX 512

struct ofist {
    bool msg;                  /* --endpoint msg */
    struct fi_info *info;      /* what the endpoint was opened with */
    struct fi_info *linfo;     /* MSG server: what the passive endpoint was opened with */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_eq *eq;         /* MSG: connection events */
    struct fid_pep *pep;       /* MSG server */
    struct fid_av *av;         /* RDM */
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;            /* RDM; MSG endpoints have only one peer and ignore it */
    char *sbuf, *rbuf, *abuf; /* abuf: the 1-byte acks of ofi.bw */
    size_t cap;
    struct fid_mr *smr, *rmr, *amr;
    void *sdesc, *rdesc, *adesc;
    struct fi_context *ctx; /* FI_CONTEXT mode: one per operation in flight */
    int nctx, next_ctx;
    long tx_done, rx_done;
    long tx_posted, rx_posted; /* the engine's wait() completes up to these */
    struct fb_xfer x;          /* the loop engine's hooks (fb_loop.h) */
    struct fb_tp *t;
};

/* The server's passive-endpoint name as it travels through the bootstrap: the client needs the
 * address format too, to hand the name to fi_getinfo as a destination. */
struct msg_name {
    uint32_t addr_format;
    uint32_t len;
    char name[FB_FI_NAME_MAX];
};

static void ofi_die(struct fb_tp *t, const char *what, int rc)
{
    fb_tp_die(t, "%s: %s", what, fi_strerror(rc < 0 ? -rc : rc));
}

static void count(struct ofist *o, const struct fi_cq_msg_entry *e)
{
    if (e->flags & FI_SEND)
        o->tx_done++;
    if (e->flags & FI_RECV)
        o->rx_done++;
}

/* Take completions until tx_done >= tx and rx_done >= rx. */
static int wait_cq(struct fb_tp *t, struct ofist *o, long tx, long rx)
{
    struct fi_cq_msg_entry e[16];
    while (o->tx_done < tx || o->rx_done < rx) {
        ssize_t n = fi_cq_read(o->cq, e, 16);
        if (n == -FI_EAGAIN)
            continue;
        if (n < 0) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(o->cq, &err, 0);
            fprintf(stderr, "%s: completion error: %s (%s)\n", t->k->name,
                    fi_strerror(err.err), fi_cq_strerror(o->cq, err.prov_errno, err.err_data,
                                                          NULL, 0));
            return -1;
        }
        for (ssize_t i = 0; i < n; i++)
            count(o, &e[i]);
    }
    return 0;
}

static int post_send(struct fb_tp *t, struct ofist *o, void *buf, size_t len, void *desc,
                     int slot)
{
    for (;;) {
        ssize_t rc = fi_send(o->ep, buf, len, desc, o->peer, &o->ctx[slot % o->nctx]);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "%s: fi_send: %s\n", t->k->name, fi_strerror((int)-rc));
            return -1;
        }
        struct fi_cq_msg_entry e;
        if (fi_cq_read(o->cq, &e, 1) == 1) /* drives progress for providers that need it */
            count(o, &e);
    }
}

static int post_recv(struct fb_tp *t, struct ofist *o, void *buf, size_t len, void *desc,
                     int slot)
{
    for (;;) {
        ssize_t rc = fi_recv(o->ep, buf, len, desc, o->peer, &o->ctx[slot % o->nctx]);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "%s: fi_recv: %s\n", t->k->name, fi_strerror((int)-rc));
            return -1;
        }
        struct fi_cq_msg_entry e;
        if (fi_cq_read(o->cq, &e, 1) == 1)
            count(o, &e);
    }
}

/* The engine's hooks. Every operation gets the next context of the ring (nctx exceeds the
 * most in flight: a window and its ack); the 1-byte ack travels in abuf, which is registered
 * (FI_MR_LOCAL providers take no unregistered byte), not in the engine's own ack byte. */
static void *ack_or(struct ofist *o, void *buf, int tag, void **desc, void *data_desc)
{
    *desc = tag == FB_TAG_ACK ? o->adesc : data_desc;
    return tag == FB_TAG_ACK ? o->abuf : buf;
}

static int next_ctx(struct ofist *o)
{
    o->next_ctx = (o->next_ctx + 1) % o->nctx;
    return o->next_ctx;
}

static int hook_send(void *c, void *buf, size_t len, int tag)
{
    struct ofist *o = c;
    void *desc;
    buf = ack_or(o, buf, tag, &desc, o->sdesc);
    if (post_send(o->t, o, buf, len, desc, next_ctx(o)))
        return -1;
    o->tx_posted++;
    return 0;
}

static int hook_recv(void *c, void *buf, size_t len, int tag)
{
    struct ofist *o = c;
    void *desc;
    buf = ack_or(o, buf, tag, &desc, o->rdesc);
    if (post_recv(o->t, o, buf, len, desc, next_ctx(o)))
        return -1;
    o->rx_posted++;
    return 0;
}

static int hook_wait(void *c)
{
    struct ofist *o = c;
    return wait_cq(o->t, o, o->tx_posted, o->rx_posted);
}

static int reg(struct fb_tp *t, struct ofist *o, void *buf, size_t len, uint64_t access,
               struct fid_mr **mr, void **desc)
{
    if (*mr) {
        fi_close(&(*mr)->fid);
        *mr = NULL;
    }
    *desc = NULL;
    if (!(o->info->domain_attr->mr_mode & FI_MR_LOCAL))
        return 0;
    int rc = fi_mr_reg(o->domain, buf, len, access, 0, 0, 0, mr, NULL);
    if (rc)
        ofi_die(t, "fi_mr_reg", rc);
    *desc = fi_mr_desc(*mr);
    return 0;
}

/* fi_getinfo for this kernel's needs; dies naming the provider and endpoint type when none
 * fits, which is how a provider without MSG endpoints (shm) is reported. `dest`: the MSG
 * client's view of the server. */
static struct fi_info *get_info(struct fb_tp *t, const char *node, uint64_t flags,
                                const struct msg_name *dest)
{
    bool msg = !strcmp(t->cfg.endpoint, "msg");
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    if (!hints)
        fb_tp_die(t, "fi_allocinfo failed");
    hints->ep_attr->type = msg ? FI_EP_MSG : FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                                  FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (t->cfg.provider)
        hints->fabric_attr->prov_name = strdup(t->cfg.provider);
    if (dest) {
        /* fi_freeinfo frees dest_addr with the hints, so it gets its own copy. */
        hints->addr_format = dest->addr_format;
        hints->dest_addr = malloc(dest->len);
        if (!hints->dest_addr)
            fb_tp_die(t, "out of memory");
        memcpy(hints->dest_addr, dest->name, dest->len);
        hints->dest_addrlen = dest->len;
    }
    int rc = fi_getinfo(FB_FI_VERSION, node, NULL, flags, hints, &info);
    fi_freeinfo(hints);
    if (rc || !info) {
        const char *ty = msg ? "MSG" : "RDM";
        if (t->cfg.provider)
            fb_tp_die(t, "provider %s has no %s endpoint (FI_EP_%s) with FI_MSG%s: %s%s",
                      t->cfg.provider, ty, ty, dest ? " that reaches the server" : "",
                      fi_strerror(-rc), msg ? " (use --endpoint rdm)" : "");
        else
            fb_tp_die(t, "fi_getinfo found no %s endpoint (FI_EP_%s) with FI_MSG%s: %s", ty,
                      ty, dest ? " that reaches the server" : "", fi_strerror(-rc));
    }
    return info;
}

static void open_cq(struct fb_tp *t, struct ofist *o)
{
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE,
                             .size = 1024};
    int rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL);
    if (rc)
        ofi_die(t, "fi_cq_open", rc);
}

/* The address the launcher chose for this side's data: the server's --bind, the client's
 * --peer (the provider then opens the domain that routes there: lo on one host, the testbed
 * interface across hosts). NULL (any) under the MPI bootstrap or with a wildcard bind. */
static const char *data_node(const struct fb_tp *t, uint64_t *flags)
{
    const char *a = t->index == 1 ? t->cfg.bind : t->cfg.peer;
    *flags = t->index == 1 ? FI_SOURCE : 0;
    if (!a || !*a || !strcmp(a, "0.0.0.0") || !strcmp(a, "::"))
        return *flags = 0, NULL;
    return a;
}

/* The shm provider names an endpoint's region in /dev/shm after the process id unless told
 * otherwise, and a region outlives a killed process: once the pid comes round again (32768 on
 * many hosts), fi_enable finds the name taken and fails with EBUSY. A name of this start
 * alone cannot be taken; it carries the owner tag fabench puts in the environment
 * (FABENCH_OWNER=PID:START) in the form its next start reaps a dead owner's regions by
 * (fabench.host.process). */
static void name_shm_region(struct fb_tp *t, struct ofist *o)
{
    char name[128];
    const char *owner = getenv("FABENCH_OWNER");
    unsigned long opid = 0, ostart = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (owner && sscanf(owner, "%lu:%lu", &opid, &ostart) == 2)
        snprintf(name, sizeof(name), "fabench-shm-o%lu.%lu-%ld-%ld%09ld-%d", opid, ostart,
                 (long)getpid(), (long)ts.tv_sec, ts.tv_nsec, t->index);
    else
        snprintf(name, sizeof(name), "fabench-shm-%ld-%ld%09ld-%d", (long)getpid(),
                 (long)ts.tv_sec, ts.tv_nsec, t->index);
    int rc = fi_setname(&o->ep->fid, name, strlen(name) + 1);
    if (rc)
        ofi_die(t, "fi_setname", rc);
}

static void setup_rdm(struct fb_tp *t, struct ofist *o)
{
    int rc;
    uint64_t flags;
    const char *node = data_node(t, &flags);
    o->info = get_info(t, node, flags, NULL);
    if ((rc = fi_fabric(o->info->fabric_attr, &o->fabric, NULL)))
        ofi_die(t, "fi_fabric", rc);
    if ((rc = fi_domain(o->fabric, o->info, &o->domain, NULL)))
        ofi_die(t, "fi_domain", rc);
    open_cq(t, o);
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = 4};
    if ((rc = fi_av_open(o->domain, &ava, &o->av, NULL)))
        ofi_die(t, "fi_av_open", rc);
    if ((rc = fi_endpoint(o->domain, o->info, &o->ep, NULL)))
        ofi_die(t, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(o->ep, &o->av->fid, 0)))
        ofi_die(t, "fi_ep_bind", rc);
    if (!strcmp(o->info->fabric_attr->prov_name, "shm"))
        name_shm_region(t, o);
    if ((rc = fi_enable(o->ep)))
        ofi_die(t, "fi_enable", rc);
    char name[FB_FI_NAME_MAX], peer[FB_FI_NAME_MAX];
    size_t nlen = sizeof(name), got = 0;
    if ((rc = fi_getname(&o->ep->fid, name, &nlen)))
        ofi_die(t, "fi_getname", rc);
    fb_tp_exchange(t, name, nlen, peer, sizeof(peer), &got);
    if (fi_av_insert(o->av, peer, 1, &o->peer, 0, NULL) != 1)
        fb_tp_die(t, "fi_av_insert: the peer's address was not accepted");
}

/* Wait for one connection-management event; anything but `want` (a refusal, a shutdown, a
 * timeout) ends the run, since there is no second peer to try. */
static void wait_cm(struct fb_tp *t, struct ofist *o, uint32_t want, struct fi_eq_cm_entry *e)
{
    uint32_t ev = 0;
    int ms = (int)(t->cfg.connect_timeout_s * 1000);
    ssize_t n = fi_eq_sread(o->eq, &ev, e, sizeof(*e), ms, 0);
    if (n == -FI_EAVAIL) {
        struct fi_eq_err_entry err = {0};
        fi_eq_readerr(o->eq, &err, 0);
        fb_tp_die(t, "connection %s: %s (%s)", want == FI_CONNREQ ? "request" : "set-up",
                  fi_strerror(err.err),
                  fi_eq_strerror(o->eq, err.prov_errno, err.err_data, NULL, 0));
    }
    if (n < 0)
        fb_tp_die(t, "waiting for %s: %s", want == FI_CONNREQ ? "FI_CONNREQ" : "FI_CONNECTED",
                  fi_strerror((int)-n));
    if (ev != want)
        fb_tp_die(t, "connection: got event %u, expected %s", (unsigned)ev,
                  want == FI_CONNREQ ? "FI_CONNREQ" : "FI_CONNECTED");
}

/* The active endpoint of either side, once its fi_info is known. */
static void open_msg_ep(struct fb_tp *t, struct ofist *o)
{
    int rc;
    if ((rc = fi_domain(o->fabric, o->info, &o->domain, NULL)))
        ofi_die(t, "fi_domain", rc);
    open_cq(t, o);
    if ((rc = fi_endpoint(o->domain, o->info, &o->ep, NULL)))
        ofi_die(t, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(o->ep, &o->eq->fid, 0)))
        ofi_die(t, "fi_ep_bind", rc);
    if ((rc = fi_enable(o->ep)))
        ofi_die(t, "fi_enable", rc);
}

static void open_fabric_eq(struct fb_tp *t, struct ofist *o, struct fi_info *info)
{
    int rc;
    if ((rc = fi_fabric(info->fabric_attr, &o->fabric, NULL)))
        ofi_die(t, "fi_fabric", rc);
    struct fi_eq_attr eqa = {.size = 8, .wait_obj = FI_WAIT_UNSPEC};
    if ((rc = fi_eq_open(o->fabric, &eqa, &o->eq, NULL)))
        ofi_die(t, "fi_eq_open", rc);
}

static void setup_msg(struct fb_tp *t, struct ofist *o)
{
    int rc;
    struct msg_name mine = {0}, theirs = {0};
    size_t got = 0;
    struct fi_eq_cm_entry e;
    if (t->index == 1) {
        /* Listen where the launcher bound the bootstrap (loopback locally, the host's data
         * address across hosts); "any" leaves the choice to the provider. */
        uint64_t flags;
        const char *node = data_node(t, &flags);
        o->linfo = get_info(t, node, flags, NULL);
        open_fabric_eq(t, o, o->linfo);
        if ((rc = fi_passive_ep(o->fabric, o->linfo, &o->pep, NULL)))
            ofi_die(t, "fi_passive_ep", rc);
        if ((rc = fi_pep_bind(o->pep, &o->eq->fid, 0)))
            ofi_die(t, "fi_pep_bind", rc);
        if ((rc = fi_listen(o->pep)))
            ofi_die(t, "fi_listen", rc);
        size_t nlen = sizeof(mine.name);
        if ((rc = fi_getname(&o->pep->fid, mine.name, &nlen)))
            ofi_die(t, "fi_getname", rc);
        mine.addr_format = o->linfo->addr_format;
        mine.len = (uint32_t)nlen;
        fb_tp_exchange(t, &mine, sizeof(mine), &theirs, sizeof(theirs), &got);
        wait_cm(t, o, FI_CONNREQ, &e);
        o->info = e.info; /* the request's fi_info describes the endpoint to accept it on */
        open_msg_ep(t, o);
        if ((rc = fi_accept(o->ep, NULL, 0)))
            ofi_die(t, "fi_accept", rc);
        wait_cm(t, o, FI_CONNECTED, &e);
    } else {
        /* Without a server address yet: fails here, on this side too, when the provider has
         * no MSG endpoint, rather than as a lost bootstrap peer. */
        fi_freeinfo(get_info(t, NULL, 0, NULL));
        fb_tp_exchange(t, &mine, sizeof(mine.addr_format), &theirs, sizeof(theirs), &got);
        if (got != sizeof(theirs) || theirs.len == 0 || theirs.len > sizeof(theirs.name))
            fb_tp_die(t, "bad passive-endpoint name from the server (%zu bytes)", got);
        o->info = get_info(t, NULL, 0, &theirs);
        open_fabric_eq(t, o, o->info);
        open_msg_ep(t, o);
        if ((rc = fi_connect(o->ep, o->info->dest_addr, NULL, 0)))
            ofi_die(t, "fi_connect", rc);
        wait_cm(t, o, FI_CONNECTED, &e);
    }
    o->peer = FI_ADDR_UNSPEC;
}

static int ofi_setup(struct fb_tp *t)
{
    struct ofist *o = calloc(1, sizeof(*o));
    if (!o)
        return -1;
    t->priv = o;
    o->msg = !strcmp(t->cfg.endpoint, "msg");
    if (o->msg)
        setup_msg(t, o);
    else
        setup_rdm(t, o);
    o->nctx = 2 * t->opts.window + 8;
    o->t = t;
    /* prepost: the reply's (ack's) receive goes out before the send that provokes it, as
     * fi_pingpong and this kernel always did */
    o->x = (struct fb_xfer){.post_recv = hook_recv, .post_send = hook_send, .wait = hook_wait,
                            .c = o, .prepost = true};
    o->ctx = calloc((size_t)o->nctx, sizeof(*o->ctx));
    o->abuf = fb_buf_alloc(64);
    if (!o->ctx || !o->abuf)
        return -1;
    reg(t, o, o->abuf, 64, FI_SEND | FI_RECV, &o->amr, &o->adesc);
    return 0;
}

static void ofi_meta(struct fb_tp *t, struct fb_json *j)
{
    struct ofist *o = t->priv;
    const struct fi_info *fi = o->info;
    char lib[64], sel[300];
    uint32_t v = fi_version();
    snprintf(lib, sizeof(lib), "libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
    snprintf(sel, sizeof(sel), "ofi:%s", fi->fabric_attr->prov_name);
    /* From the fi_info opened, not the option: they agree, since fi_getinfo was asked for
     * exactly one type, but the record says what ran. */
    bool msg = fi->ep_attr->type == FI_EP_MSG;
    fb_json_str(j, "library", lib);
    fb_json_str(j, "selected_transport", sel);
    fb_json_str(j, "ofi_provider", fi->fabric_attr->prov_name);
    fb_json_str(j, "ofi_fabric", fi->fabric_attr->name);
    fb_json_str(j, "ofi_domain", fi->domain_attr->name);
    fb_json_str(j, "ofi_ep_type", msg ? "msg" : "rdm");
    fb_json_uint(j, "ofi_max_msg_size", fi->ep_attr->max_msg_size);
    char detail[600];
    snprintf(detail, sizeof(detail), "provider %s (version %u.%u), fabric %s, domain %s, "
             "endpoint %s, mr_mode 0x%x", fi->fabric_attr->prov_name,
             FI_MAJOR(fi->fabric_attr->prov_version),
             FI_MINOR(fi->fabric_attr->prov_version), fi->fabric_attr->name,
             fi->domain_attr->name, msg ? "FI_EP_MSG" : "FI_EP_RDM",
             (unsigned)fi->domain_attr->mr_mode);
    fb_json_str(j, "selected_detail", detail);
}

/* Buffers for `size` (registered when they grow): one message to send, one receive slot,
 * validating or not (see check_receiver), so a validated run has a plain run's footprint. */
static int ofi_buffers(struct fb_tp *t, size_t size)
{
    struct ofist *o = t->priv;
    if (size > o->info->ep_attr->max_msg_size)
        fb_tp_die(t, "size %zu exceeds the provider's max_msg_size %zu", size,
                  (size_t)o->info->ep_attr->max_msg_size);
    size_t need = size ? size : 1;
    if (need > o->cap) {
        fb_buf_free(o->sbuf);
        fb_buf_free(o->rbuf);
        o->sbuf = fb_buf_alloc_pages(need, t->opts.hugepages);
        o->rbuf = fb_buf_alloc_pages(need, t->opts.hugepages);
        if (!o->sbuf || !o->rbuf)
            return -1;
        o->cap = need;
        reg(t, o, o->sbuf, need, FI_SEND, &o->smr, &o->sdesc);
        reg(t, o, o->rbuf, need, FI_RECV, &o->rmr, &o->rdesc);
    }
    return 0;
}

static int lat_begin(struct fb_tp *t, size_t size)
{
    t->bytes_per_sample = (double)size;
    t->messages_per_sample = 1;
    t->bytes_per_iteration = 2.0 * (double)size * (double)t->opts.batch; /* --batch round trips */
    return ofi_buffers(t, size);
}

static int bw_begin(struct fb_tp *t, size_t size)
{
    size_t w = (size_t)t->opts.window;
    t->bytes_per_sample = (double)(size * w);
    t->messages_per_sample = (double)w;
    t->bytes_per_iteration = t->bytes_per_sample;
    return ofi_buffers(t, size);
}

/* --validate, outside the timed region (the engine's barrier between fill and iteration). */
static void fill_send(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_fill(t, ((struct ofist *)t->priv)->sbuf, size, 0, size, iter);
}

static void fill_sender(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 0)
        fill_send(t, size, iter);
}

static void check_one(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_check(t, ((struct ofist *)t->priv)->rbuf, size, 0, size, iter);
}

/* Every message of a window lands in the one slot: they all carry the iteration's bytes (the
 * sender's one filled buffer, sent --window times), so the slot, read after the window and
 * outside the timed region as the MPI kernels read theirs, holds the last to land and shows a
 * damaged byte or a message of another iteration. A slot per message would check every
 * message but time a window over W times the receive footprint (4 MiB x 64 does not stay in
 * the cache a plain run's one slot stays in), so the two runs would measure different things. */
static void check_receiver(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 1)
        check_one(t, size, iter);
}

/* The ping-pong is the engine's (fb_pingpong), --batch included: the pong's receive is posted
 * before the ping; the responder posts its receive and completes it, then its send. */
static int ofi_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct ofist *o = t->priv;
    return fb_pingpong(&o->x, t->index == 0, o->sbuf, o->rbuf, size, t->opts.batch, sample);
}

/* The window is the engine's (fb_window): the sender posts the ack's receive, then the
 * window's sends, and completes them all; the receiver posts the window's receives (all into the
 * one slot, validating too), completes them, then sends the ack. */
static int ofi_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct ofist *o = t->priv;
    return fb_window(&o->x, t->index == 0, o->sbuf, o->rbuf, NULL, NULL, size, t->opts.window,
                     sample);
}

static void ofi_teardown(struct fb_tp *t)
{
    struct ofist *o = t->priv;
    if (o->smr)
        fi_close(&o->smr->fid);
    if (o->rmr)
        fi_close(&o->rmr->fid);
    if (o->amr)
        fi_close(&o->amr->fid);
    /* Endpoints before what they are bound to (av, cq, eq), the domain and fabric last. */
    fi_close(&o->ep->fid);
    if (o->pep)
        fi_close(&o->pep->fid);
    if (o->av)
        fi_close(&o->av->fid);
    fi_close(&o->cq->fid);
    if (o->eq)
        fi_close(&o->eq->fid);
    fi_close(&o->domain->fid);
    fi_close(&o->fabric->fid);
    fi_freeinfo(o->info);
    if (o->linfo)
        fi_freeinfo(o->linfo);
    fb_buf_free(o->sbuf);
    fb_buf_free(o->rbuf);
    fb_buf_free(o->abuf);
    free(o->ctx);
    free(o);
    t->priv = NULL;
}

#define OFI_COMMON \
    .family = FB_FAM_OFI, .setup = ofi_setup, .meta = ofi_meta, .teardown = ofi_teardown

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "ofi.latency", .cls = FB_CLASS_LATENCY, OFI_COMMON,
     .opts = FB_OPT_OFI | FB_SC_BATCH, .begin_size = lat_begin,
     .iterate = ofi_latency, .fill = fill_send, .check = check_one},
    {.name = "ofi.bw", .cls = FB_CLASS_BANDWIDTH, OFI_COMMON, .opts = FB_OPT_OFI,
     .begin_size = bw_begin, .iterate = ofi_bw, .fill = fill_sender, .check = check_receiver},
};

FB_TP_MAIN(KERNELS)
