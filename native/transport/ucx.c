/* ucx.c - UCP tag-matching kernels: ucx.latency, ucx.bw, ucx.bibw.
 *
 * Worker addresses travel through the bootstrap; the transport UCX picked for the peer is read
 * back from the endpoint itself (ucp_ep_print_info: this UCX has no ucp_ep_query for lanes),
 * after one warm message has completed wire-up, and is never taken from UCX_TLS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "fb_buf.h"
#include "fb_loop.h"
#include "fb_tp.h"

#define TAG_MASK ((ucp_tag_t)-1)
#define LANES_CAP 512

struct ucxst {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h ep;
    char *sbuf, *rbuf;
    size_t cap;
    int pending;         /* operations in flight, counted down by their callbacks */
    ucs_status_t failed; /* the first completion that did not succeed */
    struct fb_tp *t;  /* for messages from the engine's hooks */
    struct fb_xfer x; /* the loop engine's hooks (fb_loop.h) */
    char lanes[LANES_CAP]; /* "posix/memory,cma/memory" */
    char *ep_info;         /* ucp_ep_print_info text */
};

/* Completion as ucx_perftest waits for it: each operation's callback counts it down (and
 * frees its request), and waiting is one counter read per ucp_worker_progress(). Polling each
 * request with ucp_request_check_status and freeing it after read 1.05x ucx_perftest's 8 B
 * posix latency here, callbacks 0.98-1.01x (docs/transports.md). */
static void done(struct ucxst *u, ucs_status_t st)
{
    u->pending--;
    if (st != UCS_OK && u->failed == UCS_OK)
        u->failed = st;
}

static void sent_cb(void *req, ucs_status_t st, void *arg)
{
    done(arg, st);
    ucp_request_free(req);
}

static void received_cb(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info, void *arg)
{
    (void)info;
    done(arg, st);
    ucp_request_free(req);
}

/* A started operation: in flight (counted), done at once (NULL), or failed. */
static int started(struct fb_tp *t, struct ucxst *u, void *req, const char *what)
{
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "%s: %s failed: %s\n", t->k->name, what,
                ucs_status_string(UCS_PTR_STATUS(req)));
        return -1;
    }
    if (req)
        u->pending++;
    return 0;
}

static int send_op(struct fb_tp *t, struct ucxst *u, void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.send = sent_cb, .user_data = u};
    return started(t, u, ucp_tag_send_nbx(u->ep, buf, len, tag, &p), "send");
}

static int recv_op(struct fb_tp *t, struct ucxst *u, void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.recv = received_cb, .user_data = u};
    return started(t, u, ucp_tag_recv_nbx(u->worker, buf, len, tag, TAG_MASK, &p), "recv");
}

/* Progress until every operation in flight has completed. */
static int wait_all(struct fb_tp *t, struct ucxst *u)
{
    while (u->pending)
        ucp_worker_progress(u->worker);
    if (u->failed != UCS_OK) {
        fprintf(stderr, "%s: an operation failed: %s\n", t->k->name,
                ucs_status_string(u->failed));
        return -1;
    }
    return 0;
}

/* The shapes are the engine's; UCX pre-posts the reply's receive (an unexpected tag costs a
 * copy through UCX's unexpected queue). */
static int hook_recv(void *c, void *buf, size_t len, int tag)
{
    struct ucxst *u = c;
    return recv_op(u->t, u, buf, len, (ucp_tag_t)tag);
}

static int hook_send(void *c, void *buf, size_t len, int tag)
{
    struct ucxst *u = c;
    return send_op(u->t, u, buf, len, (ucp_tag_t)tag);
}

static int hook_wait(void *c)
{
    struct ucxst *u = c;
    return wait_all(u->t, u);
}

static void ep_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    fprintf(stderr, "ucx: endpoint error: %s\n", ucs_status_string(status));
}

/* "lane[0]:  8:posix/memory.0 md[4] ..." -> "posix/memory", unique, comma-separated. */
static void parse_lanes(const char *info, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *p = strstr(info, "lane["); p; p = strstr(p + 1, "lane[")) {
        const char *c = strchr(p, ':');
        const char *eol = strchr(p, '\n');
        if (!c || (eol && c > eol))
            continue;
        c++;
        while (*c == ' ')
            c++;
        const char *colon = strchr(c, ':'); /* "8:" resource index */
        if (colon && (!eol || colon < eol) && colon - c < 4)
            c = colon + 1;
        char tl[96];
        size_t n = 0;
        while (c[n] && c[n] != ' ' && c[n] != '\n' && n + 1 < sizeof(tl))
            n++;
        memcpy(tl, c, n);
        tl[n] = '\0';
        char *dot = strrchr(tl, '.'); /* "memory.0" path index */
        if (dot && strchr(tl, '/') && dot > strchr(tl, '/'))
            *dot = '\0';
        if (!strchr(tl, '/'))
            continue;
        char probe[100];
        snprintf(probe, sizeof(probe), ",%s,", tl);
        char have[LANES_CAP + 2];
        snprintf(have, sizeof(have), ",%s,", out);
        if (strstr(have, probe))
            continue;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", len ? "," : "", tl);
    }
}

static int ucx_setup(struct fb_tp *t)
{
    struct ucxst *u = calloc(1, sizeof(*u));
    if (!u)
        return -1;
    t->priv = u;
    u->t = t;
    u->x = (struct fb_xfer){.post_recv = hook_recv, .post_send = hook_send, .wait = hook_wait,
                            .c = u, .prepost = true};
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK)
        fb_tp_die(t, "ucp_config_read: %s", ucs_status_string(st));
    if (t->cfg.tls && (st = ucp_config_modify(cfg, "TLS", t->cfg.tls)) != UCS_OK)
        fb_tp_die(t, "--tls %s: %s", t->cfg.tls, ucs_status_string(st));
    if (t->cfg.net_devices &&
        (st = ucp_config_modify(cfg, "NET_DEVICES", t->cfg.net_devices)) != UCS_OK)
        fb_tp_die(t, "--net-devices %s: %s", t->cfg.net_devices, ucs_status_string(st));
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features = UCP_FEATURE_TAG,
    };
    st = ucp_init(&params, cfg, &u->ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK)
        fb_tp_die(t, "ucp_init: %s", ucs_status_string(st));
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((st = ucp_worker_create(u->ctx, &wp, &u->worker)) != UCS_OK)
        fb_tp_die(t, "ucp_worker_create: %s", ucs_status_string(st));
    ucp_address_t *addr;
    size_t alen;
    if ((st = ucp_worker_get_address(u->worker, &addr, &alen)) != UCS_OK)
        fb_tp_die(t, "ucp_worker_get_address: %s", ucs_status_string(st));
    size_t cap = 64 * 1024, got = 0;
    void *peer = malloc(cap);
    if (!peer)
        fb_tp_die(t, "out of memory");
    fb_tp_exchange(t, addr, alen, peer, cap, &got);
    ucp_worker_release_address(u->worker, addr);
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = peer,
        .err_handler = {.cb = ep_err, .arg = NULL},
    };
    st = ucp_ep_create(u->worker, &ep, &u->ep);
    free(peer);
    if (st != UCS_OK)
        fb_tp_die(t, "ucp_ep_create: %s (UCX found no transport that reaches the peer; "
                  "check --tls / UCX_TLS)", ucs_status_string(st));
    /* One message each way completes wire-up, so the lanes printed below are final. */
    char a = 'w', b = 0;
    if (recv_op(t, u, &b, 1, FB_TAG_ACK) || send_op(t, u, &a, 1, FB_TAG_ACK) || wait_all(t, u))
        return -1;
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (f) {
        ucp_ep_print_info(u->ep, f);
        fclose(f);
        u->ep_info = text;
        parse_lanes(text, u->lanes, sizeof(u->lanes));
    }
    return 0;
}

static void ucx_meta(struct fb_tp *t, struct fb_json *j)
{
    struct ucxst *u = t->priv;
    char lib[64], sel[600];
    snprintf(lib, sizeof(lib), "UCX %s", ucp_get_version_string());
    snprintf(sel, sizeof(sel), "ucx:%s", u->lanes[0] ? u->lanes : "unknown");
    fb_json_str(j, "library", lib);
    fb_json_str(j, "selected_transport", sel);
    fb_json_str(j, "ucx_lanes", u->lanes);
    fb_json_str(j, "selected_detail", u->ep_info ? u->ep_info : "");
}

/* Buffers for `size`: one receive slot, validating or not (the engine's windows land every
 * message in it; all carry the iteration's bytes), so both measure one cache footprint. */
static int ucx_buffers(struct fb_tp *t, size_t size)
{
    struct ucxst *u = t->priv;
    size_t need = size ? size : 1;
    if (need > u->cap) {
        fb_buf_free(u->sbuf);
        fb_buf_free(u->rbuf);
        u->sbuf = fb_buf_alloc_pages(need, t->opts.hugepages);
        u->rbuf = fb_buf_alloc_pages(need, t->opts.hugepages);
        if (!u->sbuf || !u->rbuf)
            return -1;
        u->cap = need;
    }
    return 0;
}

static int lat_begin(struct fb_tp *t, size_t size)
{
    t->bytes_per_sample = (double)size;
    t->messages_per_sample = 1;
    t->bytes_per_iteration = 2.0 * (double)size;
    return ucx_buffers(t, size);
}

static int window_begin(struct fb_tp *t, size_t size, double directions)
{
    size_t w = (size_t)t->opts.window;
    t->bytes_per_sample = directions * (double)(size * w);
    t->messages_per_sample = directions * (double)w;
    t->bytes_per_iteration = t->bytes_per_sample;
    return ucx_buffers(t, size);
}

static int bw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 1); }
static int bibw_begin(struct fb_tp *t, size_t size) { return window_begin(t, size, 2); }

/* ---- --validate: fill before, check after the timed region (the engine's barrier between) */

static void fill_send(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_fill(t, ((struct ucxst *)t->priv)->sbuf, size, 0, size, iter);
}

static void fill_sender(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 0)
        fill_send(t, size, iter);
}

static void check_one(struct fb_tp *t, size_t size, long iter)
{
    fb_tp_check(t, ((struct ucxst *)t->priv)->rbuf, size, 0, size, iter);
}


static void check_receiver(struct fb_tp *t, size_t size, long iter)
{
    if (t->index == 1)
        check_one(t, size, iter);
}

/* ---- the kernels ------------------------------------------------------------------------- */


static int ucx_latency(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct ucxst *u = t->priv;
    return fb_pingpong(&u->x, t->index == 0, u->sbuf, u->rbuf, size, t->opts.batch, sample);
}

static int ucx_bw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)timed;
    struct ucxst *u = t->priv;
    /* the receiver posts the next window's receives before its ack when one follows (at
     * --large-threshold and above, as mpi.bw: see fb_loop.h);
     * validating, the check then reads this window beside them, which is safe: the sender
     * sends again only after the engine's barrier, which follows the check */
    void *next = t->index == 1 && iter + 1 < t->iter_end &&
                         size >= t->opts.large_threshold ? u->rbuf : NULL;
    return fb_window(&u->x, t->index == 0, u->sbuf, u->rbuf, next, NULL, size, t->opts.window,
                     sample);
}

static int ucx_bibw(struct fb_tp *t, size_t size, long iter, bool timed, double *sample)
{
    (void)iter, (void)timed;
    struct ucxst *u = t->priv;
    return fb_window_bidir(&u->x, u->sbuf, u->rbuf, NULL, size, t->opts.window,
                           sample);
}

static void ucx_teardown(struct fb_tp *t)
{
    struct ucxst *u = t->priv;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *r = ucp_ep_close_nbx(u->ep, &p);
    if (r && !UCS_PTR_IS_ERR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(u->worker);
        ucp_request_free(r);
    }
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ctx);
    fb_buf_free(u->sbuf);
    fb_buf_free(u->rbuf);
    free(u->ep_info);
    free(u);
    t->priv = NULL;
}

#define UCX_COMMON .family = FB_FAM_UCX, .setup = ucx_setup, .meta = ucx_meta, .teardown = ucx_teardown

static const struct fb_tp_kernel KERNELS[] = {
    {.name = "ucx.latency", .cls = FB_CLASS_LATENCY, UCX_COMMON,
     .opts = FB_OPT_UCX | FB_SC_BATCH, .begin_size = lat_begin, .iterate = ucx_latency,
     .fill = fill_send, .check = check_one},
    {.name = "ucx.bw", .cls = FB_CLASS_BANDWIDTH, UCX_COMMON, .opts = FB_OPT_UCX,
     .begin_size = bw_begin, .iterate = ucx_bw, .fill = fill_sender, .check = check_receiver},
    {.name = "ucx.bibw", .cls = FB_CLASS_BANDWIDTH, UCX_COMMON, .opts = FB_OPT_UCX,
     .begin_size = bibw_begin, .iterate = ucx_bibw, .fill = fill_send, .check = check_one},
};

FB_TP_MAIN(KERNELS)
