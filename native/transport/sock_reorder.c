/* sock_reorder.c - udp.reorder: RFC 4737 / RFC 5236 reordering metrics (sock.h). */
#include "sock.h"

/* ---- udp.reorder ---------------------------------------------------------------------------- */

int reorder_begin(struct fb_tp *t, size_t size)
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

void reorder_end(struct fb_tp *t, size_t size, struct fb_tp_side *me)
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

void reorder_result(struct fb_tp *t, struct fb_json *j, size_t size, long iters,
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

void sock_teardown(struct fb_tp *t)
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
