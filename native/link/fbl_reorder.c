/* fbl_reorder.c - Algorithm 1 of document 001: a receive-side reorder window over msg_ids.
 *
 *   msg_id == next_id            deliver it, then every held successor
 *   msg_id <  next_id            deliver (late: its place has passed)
 *   next_id < msg_id <= next+W   hold it
 *   msg_id >  next_id + W        slide next_id forward, delivering the held packets it
 *                                passes, until the packet fits; then as above
 *
 * msg_ids are 16 bits and wrap: "<" is the sign of the 16-bit difference, so the window
 * works across the wrap as long as W stays far below 32768 (FBL_WINDOW_MAX).
 */
#include <stdlib.h>

#include "fbl.h"

int fbl_rwin_init(struct fbl_rwin *r, unsigned w)
{
    *r = (struct fbl_rwin){0};
    if (w == 0 || w > FBL_WINDOW_MAX)
        return -1;
    r->slot = calloc(w, sizeof *r->slot);
    if (!r->slot)
        return -1;
    r->w = w;
    return 0;
}

void fbl_rwin_free(struct fbl_rwin *r)
{
    free(r->slot);
    r->slot = NULL;
}

/* Moves next_id one on; returns the packet held for the new next_id, if any (the caller
 * delivers it and moves on past it). */
static void *advance(struct fbl_rwin *r)
{
    void *p = r->slot[r->start];
    r->slot[r->start] = NULL;
    r->start = (r->start + 1) % r->w;
    r->next_id++;
    if (p)
        r->held--;
    return p;
}

/* next_id was just delivered (or given up): move past it and every held successor. */
static void pass(struct fbl_rwin *r, fbl_deliver_fn deliver, void *ctx, uint64_t *count)
{
    void *p;
    while ((p = advance(r)) != NULL) {
        deliver(ctx, p);
        (*count)++;
    }
}

void fbl_rwin_input(struct fbl_rwin *r, uint16_t msg_id, void *pkt, uint64_t now_ns,
                    fbl_deliver_fn deliver, void *ctx, struct fbl_rwin_stats *st)
{
    if (!r->started) {
        r->started = 1;
        r->next_id = msg_id;
    }
    int d = (int16_t)(uint16_t)(msg_id - r->next_id);
    if (d < 0) {
        st->late++;
        deliver(ctx, pkt);
        return;
    }
    if (d > (int)r->w) {
        st->slides++;
        while (d > (int)r->w) {
            /* next_id is missing (never held): give it up, and deliver what follows it */
            pass(r, deliver, ctx, &st->slid);
            d = (int16_t)(uint16_t)(msg_id - r->next_id);
        }
    }
    if (d == 0) {
        st->in_order++;
        deliver(ctx, pkt);
        pass(r, deliver, ctx, &st->released);
        return;
    }
    if (d < 0) { /* the slide delivered past it: cannot happen, held ids are below msg_id */
        st->late++;
        deliver(ctx, pkt);
        return;
    }
    unsigned idx = (r->start + (unsigned)d - 1) % r->w;
    if (r->slot[idx]) {
        st->dup++;
        deliver(ctx, pkt);
        return;
    }
    if (r->held == 0)
        r->held_since_ns = now_ns;
    r->slot[idx] = pkt;
    r->held++;
    st->buffered++;
}

void fbl_rwin_flush(struct fbl_rwin *r, fbl_deliver_fn deliver, void *ctx,
                    struct fbl_rwin_stats *st)
{
    if (r->held == 0)
        return;
    st->flushes++;
    while (r->held > 0) {
        void *p = advance(r);
        if (p) {
            deliver(ctx, p);
            st->flushed++;
            if (r->held == 0)
                pass(r, deliver, ctx, &st->flushed); /* move past the last one delivered */
        }
    }
}
