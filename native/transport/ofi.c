/* ofi.c - libfabric kernels over reliable-datagram (RDM) endpoints: ofi.latency, ofi.bw.
 *
 * The provider is whatever fi_getinfo returns first for the hints (FI_PROVIDER in the
 * environment and --provider both narrow it); the meta record names the provider, fabric and
 * domain that were actually opened.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_timer.h"
#include "fb_tp.h"

#define FB_FI_VERSION FI_VERSION(1, 9)

struct ofist {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
    char *sbuf, *rbuf, *abuf; /* abuf: the 1-byte acks of ofi.bw */
    size_t cap;
    struct fid_mr *smr, *rmr, *amr;
    void *sdesc, *rdesc, *adesc;
    struct fi_context *ctx; /* FI_CONTEXT mode: one per operation in flight */
    int nctx;
    long tx_done, rx_done;
};

static struct ofist O;

static void ofi_die(struct fb_tp *t, const char *what, int rc)
{
    fb_tp_die(t, "%s: %s", what, fi_strerror(rc < 0 ? -rc : rc));
}

/* Take completions until tx_done >= tx and rx_done >= rx. */
static int wait_cq(struct fb_tp *t, long tx, long rx)
{
    struct fi_cq_msg_entry e[16];
    while (O.tx_done < tx || O.rx_done < rx) {
        ssize_t n = fi_cq_read(O.cq, e, 16);
        if (n == -FI_EAGAIN)
            continue;
        if (n < 0) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(O.cq, &err, 0);
            fprintf(stderr, "%s: completion error: %s (%s)\n", t->k->name,
                    fi_strerror(err.err), fi_cq_strerror(O.cq, err.prov_errno, err.err_data,
                                                          NULL, 0));
            return -1;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (e[i].flags & FI_SEND)
                O.tx_done++;
            if (e[i].flags & FI_RECV)
                O.rx_done++;
        }
    }
    return 0;
}

static int post_send(struct fb_tp *t, void *buf, size_t len, void *desc, int slot)
{
    for (;;) {
        ssize_t rc = fi_send(O.ep, buf, len, desc, O.peer, &O.ctx[slot % O.nctx]);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "%s: fi_send: %s\n", t->k->name, fi_strerror((int)-rc));
            return -1;
        }
        struct fi_cq_msg_entry e;
        ssize_t n = fi_cq_read(O.cq, &e, 1); /* drives progress for providers that need it */
        if (n == 1) {
            if (e.flags & FI_SEND)
                O.tx_done++;
            if (e.flags & FI_RECV)
                O.rx_done++;
        }
    }
}

static int post_recv(struct fb_tp *t, void *buf, size_t len, void *desc, int slot)
{
    for (;;) {
        ssize_t rc = fi_recv(O.ep, buf, len, desc, O.peer, &O.ctx[slot % O.nctx]);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "%s: fi_recv: %s\n", t->k->name, fi_strerror((int)-rc));
            return -1;
        }
        struct fi_cq_msg_entry e;
        if (fi_cq_read(O.cq, &e, 1) == 1) {
            if (e.flags & FI_SEND)
                O.tx_done++;
            if (e.flags & FI_RECV)
                O.rx_done++;
        }
    }
}

static int reg(struct fb_tp *t, void *buf, size_t len, uint64_t access, struct fid_mr **mr,
               void **desc)
{
    if (*mr) {
        fi_close(&(*mr)->fid);
        *mr = NULL;
    }
    *desc = NULL;
    if (!(O.info->domain_attr->mr_mode & FI_MR_LOCAL))
        return 0;
    int rc = fi_mr_reg(O.domain, buf, len, access, 0, 0, 0, mr, NULL);
    if (rc)
        ofi_die(t, "fi_mr_reg", rc);
    *desc = fi_mr_desc(*mr);
    return 0;
}

static int ofi_setup(struct fb_tp *t)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        fb_tp_die(t, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                                  FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (t->cfg.provider)
        hints->fabric_attr->prov_name = strdup(t->cfg.provider);
    int rc = fi_getinfo(FB_FI_VERSION, NULL, NULL, 0, hints, &O.info);
    fi_freeinfo(hints);
    if (rc || !O.info)
        fb_tp_die(t, "fi_getinfo found no RDM endpoint with FI_MSG%s%s: %s",
                  t->cfg.provider ? " for provider " : "",
                  t->cfg.provider ? t->cfg.provider : "", fi_strerror(-rc));
    if ((rc = fi_fabric(O.info->fabric_attr, &O.fabric, NULL)))
        ofi_die(t, "fi_fabric", rc);
    if ((rc = fi_domain(O.fabric, O.info, &O.domain, NULL)))
        ofi_die(t, "fi_domain", rc);
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE,
                             .size = 1024};
    if ((rc = fi_cq_open(O.domain, &cqa, &O.cq, NULL)))
        ofi_die(t, "fi_cq_open", rc);
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = 4};
    if ((rc = fi_av_open(O.domain, &ava, &O.av, NULL)))
        ofi_die(t, "fi_av_open", rc);
    if ((rc = fi_endpoint(O.domain, O.info, &O.ep, NULL)))
        ofi_die(t, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(O.ep, &O.cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(O.ep, &O.av->fid, 0)))
        ofi_die(t, "fi_ep_bind", rc);
    if ((rc = fi_enable(O.ep)))
        ofi_die(t, "fi_enable", rc);
    char name[512], peer[512];
    size_t nlen = sizeof(name), got = 0;
    if ((rc = fi_getname(&O.ep->fid, name, &nlen)))
        ofi_die(t, "fi_getname", rc);
    fb_tp_exchange(t, name, nlen, peer, sizeof(peer), &got);
    if (fi_av_insert(O.av, peer, 1, &O.peer, 0, NULL) != 1)
        fb_tp_die(t, "fi_av_insert: the peer's address was not accepted");
    O.nctx = 2 * t->opts.window + 8;
    O.ctx = calloc((size_t)O.nctx, sizeof(*O.ctx));
    O.abuf = fb_buf_alloc(64);
    if (!O.ctx || !O.abuf)
        return -1;
    reg(t, O.abuf, 64, FI_SEND | FI_RECV, &O.amr, &O.adesc);
    return 0;
}

static void ofi_meta(struct fb_tp *t, struct fb_json *j)
{
    (void)t;
    char lib[64], sel[300];
    uint32_t v = fi_version();
    snprintf(lib, sizeof(lib), "libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
    snprintf(sel, sizeof(sel), "ofi:%s", O.info->fabric_attr->prov_name);
    fb_json_str(j, "library", lib);
    fb_json_str(j, "selected_transport", sel);
    fb_json_str(j, "ofi_provider", O.info->fabric_attr->prov_name);
    fb_json_str(j, "ofi_fabric", O.info->fabric_attr->name);
    fb_json_str(j, "ofi_domain", O.info->domain_attr->name);
    fb_json_str(j, "ofi_ep_type", "rdm");
    fb_json_uint(j, "ofi_max_msg_size", O.info->ep_attr->max_msg_size);
    char detail[600];
    snprintf(detail, sizeof(detail), "provider %s (version %u.%u), fabric %s, domain %s, "
             "endpoint FI_EP_RDM, mr_mode 0x%x", O.info->fabric_attr->prov_name,
             FI_MAJOR(O.info->fabric_attr->prov_version),
             FI_MINOR(O.info->fabric_attr->prov_version), O.info->fabric_attr->name,
             O.info->domain_attr->name, (unsigned)O.info->domain_attr->mr_mode);
    fb_json_str(j, "selected_detail", detail);
}

static int ofi_begin_size(struct fb_tp *t, size_t size)
{
    size_t w = (size_t)t->opts.window;
    bool lat = !strcmp(t->k->name, "ofi.latency");
    if (size > O.info->ep_attr->max_msg_size)
        fb_tp_die(t, "size %zu exceeds the provider's max_msg_size %zu", size,
                  (size_t)O.info->ep_attr->max_msg_size);
    size_t need = (t->opts.validate && !lat ? w : 1) * (size ? size : 1);
    if (need > O.cap) {
        fb_buf_free(O.sbuf);
        fb_buf_free(O.rbuf);
        O.sbuf = fb_buf_alloc(need);
        O.rbuf = fb_buf_alloc(need);
        if (!O.sbuf || !O.rbuf)
            return -1;
        O.cap = need;
        reg(t, O.sbuf, need, FI_SEND, &O.smr, &O.sdesc);
        reg(t, O.rbuf, need, FI_RECV, &O.rmr, &O.rdesc);
    }
    t->bytes_per_sample = lat ? (double)size : (double)(size * w);
    t->messages_per_sample = lat ? 1 : (double)w;
    t->bytes_per_iteration = lat ? 2.0 * (double)size : t->bytes_per_sample;
    return 0;
}

static int ofi_iterate(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)timed;
    int w = t->opts.window;
    if (t->opts.validate)
        fb_tp_fill(t, O.sbuf, size, 0, size, iter);
    long tx0 = O.tx_done, rx0 = O.rx_done;
    double t0 = fb_now_us();
    if (!strcmp(t->k->name, "ofi.latency")) {
        if (post_recv(t, O.rbuf, size, O.rdesc, 0))
            return -1;
        if (t->index == 0) {
            if (post_send(t, O.sbuf, size, O.sdesc, 1) || wait_cq(t, tx0 + 1, rx0 + 1))
                return -1;
            *sample = (fb_now_us() - t0) / 2.0;
        } else if (wait_cq(t, tx0, rx0 + 1) || post_send(t, O.sbuf, size, O.sdesc, 1) ||
                   wait_cq(t, tx0 + 1, rx0 + 1)) {
            return -1;
        }
        if (t->opts.validate)
            fb_tp_check(t, O.rbuf, size, 0, size, iter);
        return 0;
    }
    if (t->index == 0) {
        if (post_recv(t, O.abuf, 1, O.adesc, 0))
            return -1;
        for (int k = 0; k < w; k++)
            if (post_send(t, O.sbuf, size, O.sdesc, 1 + k))
                return -1;
        if (wait_cq(t, tx0 + w, rx0 + 1))
            return -1;
        *sample = fb_now_us() - t0;
        return 0;
    }
    for (int k = 0; k < w; k++)
        if (post_recv(t, O.rbuf + (t->opts.validate ? (size_t)k * size : 0), size, O.rdesc,
                      1 + k))
            return -1;
    if (wait_cq(t, tx0, rx0 + w) || post_send(t, O.abuf, 1, O.adesc, 0) ||
        wait_cq(t, tx0 + 1, rx0 + w))
        return -1;
    if (t->opts.validate)
        for (int k = 0; k < w; k++)
            fb_tp_check(t, O.rbuf + (size_t)k * size, size, 0, size, iter);
    return 0;
}

static void ofi_teardown(struct fb_tp *t)
{
    (void)t;
    if (O.smr)
        fi_close(&O.smr->fid);
    if (O.rmr)
        fi_close(&O.rmr->fid);
    if (O.amr)
        fi_close(&O.amr->fid);
    fi_close(&O.ep->fid);
    fi_close(&O.av->fid);
    fi_close(&O.cq->fid);
    fi_close(&O.domain->fid);
    fi_close(&O.fabric->fid);
    fi_freeinfo(O.info);
    fb_buf_free(O.sbuf);
    fb_buf_free(O.rbuf);
    fb_buf_free(O.abuf);
    free(O.ctx);
}

#define OFI_HOOKS                                                                               \
    .family = FB_FAM_OFI, .opts = FB_OPT_OFI, .size_min = 1, .size_max = (size_t)4 << 20,     \
    .setup = ofi_setup, .meta = ofi_meta, .begin_size = ofi_begin_size,                        \
    .iterate = ofi_iterate, .teardown = ofi_teardown

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "ofi.latency", .cls = FB_CLASS_LATENCY, OFI_HOOKS},
    {.name = "ofi.bw", .cls = FB_CLASS_BANDWIDTH, OFI_HOOKS},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(KERNELS) / sizeof(KERNELS[0]); i++)
        if (!strcmp(KERNELS[i].name, FB_KERNEL))
            return fb_tp_main(&KERNELS[i], argc, argv);
    fprintf(stderr, "ofi.c built for unknown kernel %s\n", FB_KERNEL);
    return 2;
}
