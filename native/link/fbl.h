/* fbl.h - fb-link, an impaired link in user space: the parts that are tested alone.
 *
 * fb-link forwards Ethernet frames between two TAP devices (a testbed host's eth0 and its
 * switch port) and on the way does what Linux netem does on kernels that have it (delay,
 * jitter, loss, duplication, netem's reorder model, rate with a drop-tail queue), plus what
 * netem cannot: multipath reordering (packets spread over k paths of different delay, as
 * IPoIB over several queue pairs or ECMP spraying), DCTCP-style CE marking above a queue
 * threshold, and document 001's receive-side reorder window (Algorithm 1).
 *
 * Each direction of the link has a sending half and a receiving half. The sending half puts
 * a 4-byte link header in front of every frame (as IPoIB does), carrying a 16-bit msg_id
 * that counts the frames of that flow; the receiving half reads only that header to run
 * Algorithm 1, then strips it.
 */
#ifndef FBL_H
#define FBL_H

#include <stddef.h>
#include <stdint.h>

/* ---- random numbers: one seeded generator per link, so a run can be repeated ---------- */
struct fbl_rng {
    uint64_t s[4];
};
void fbl_rng_seed(struct fbl_rng *r, uint64_t seed);
uint64_t fbl_rng_next(struct fbl_rng *r);
/* true with probability ppb / 1e9 */
int fbl_rng_chance(struct fbl_rng *r, uint32_t ppb);
/* uniform in [0, 1) */
double fbl_rng_unit(struct fbl_rng *r);

/* ---- Algorithm 1 of document 001: the receive-side reorder window --------------------- */
typedef void (*fbl_deliver_fn)(void *ctx, void *pkt);

struct fbl_rwin_stats {
    uint64_t in_order;  /* msg_id == next_id on arrival */
    uint64_t buffered;  /* next_id < msg_id <= next_id + W: held */
    uint64_t released;  /* held packets delivered once their predecessors came */
    uint64_t late;      /* msg_id < next_id: delivered at once */
    uint64_t slides;    /* arrivals beyond next_id + W that moved the window */
    uint64_t slid;      /* held packets delivered by a slide */
    uint64_t flushes;   /* hold timeouts */
    uint64_t flushed;   /* held packets delivered by a hold timeout */
    uint64_t dup;       /* a msg_id already held: the newcomer is delivered at once */
};

struct fbl_rwin {
    unsigned w;         /* window; 0 is never stored (the window is off) */
    unsigned start;     /* ring index of msg_id next_id + 1 */
    unsigned held;      /* packets in the ring */
    uint16_t next_id;   /* the msg_id expected next, never itself held */
    int started;
    uint64_t held_since_ns; /* when the ring last went from empty to holding */
    void **slot;        /* w entries: slot (start + d - 1) % w holds msg_id next_id + d */
};

int fbl_rwin_init(struct fbl_rwin *r, unsigned w);
void fbl_rwin_free(struct fbl_rwin *r);
void fbl_rwin_input(struct fbl_rwin *r, uint16_t msg_id, void *pkt, uint64_t now_ns,
                    fbl_deliver_fn deliver, void *ctx, struct fbl_rwin_stats *st);
/* Deliver every held packet in msg_id order and move next_id past them: what the receiver
 * does when the hole has outlived the hold time (the packet is taken as lost). */
void fbl_rwin_flush(struct fbl_rwin *r, fbl_deliver_fn deliver, void *ctx,
                    struct fbl_rwin_stats *st);

/* ---- the impairment of one rule (one host's link, or one peer on it, one direction) --- */
#define FBL_WINDOW_MAX 1024u

struct fbl_params {
    uint32_t peer;          /* IPv4 address, network order; 0 matches every frame */
    uint64_t delay_ns;
    uint64_t jitter_ns;     /* uniform in [-jitter, +jitter] around the delay, as netem's */
    uint32_t loss_ppb;      /* probabilities in parts per 10^9 */
    uint32_t dup_ppb;
    uint32_t reorder_ppb;   /* netem's model: eligible frames skip the delay ... */
    uint32_t gap;           /* ... every gap-th frame is eligible (netem's gap; 1 = all) */
    uint32_t paths;         /* multipath: frames go round-robin over this many paths ... */
    uint64_t path_step_ns;  /* ... path i adding i * step */
    uint64_t rate_bps;      /* 0: no rate, no queue */
    uint32_t queue_pkts;    /* drop-tail limits of the rate's queue (0: no limit of that kind) */
    uint64_t queue_bytes;
    uint32_t ecn_k;         /* CE-mark ECT frames arriving with >= K frames queued; 0: off */
    uint32_t window;        /* Algorithm 1's W at this direction's receiving end; 0: off */
    uint64_t hold_ns;       /* how long the window may hold a hole before taking it as lost */
};

struct fbl_counters {
    uint64_t frames, bytes;         /* that matched the rule */
    uint64_t lost, duplicated;
    uint64_t queue_drops;           /* drop-tail */
    uint64_t ce_marked, ect_seen, not_ect_over_k;
    uint64_t netem_reordered;       /* frames that skipped the delay */
    uint64_t queue_hwm_pkts, queue_hwm_bytes;
};

struct fbl_rule {
    struct fbl_params p;
    struct fbl_counters c;
    /* the rate's queue: departure times of the frames in it, oldest first */
    uint64_t free_at_ns;
    uint64_t *q_depart;
    uint32_t *q_len;
    uint32_t q_cap, q_head, q_count;
    uint64_t q_bytes;
    uint32_t netem_counter;
    uint32_t next_path;
};

/* Checks one rule's parameters; on error returns -1 and writes why into err. */
int fbl_params_check(const struct fbl_params *p, char *err, size_t errlen);
/* Parses "key=value,key=value" (integers in the units of struct fbl_params, peer as a
 * dotted quad) into p; on error returns -1 and writes why into err. */
int fbl_params_parse(struct fbl_params *p, const char *text, char *err, size_t errlen);
int fbl_rule_init(struct fbl_rule *r, const struct fbl_params *p);
void fbl_rule_free(struct fbl_rule *r);

/* How many copies of a frame go on: 0 (lost), 1, or 2 (duplicated). */
int fbl_rule_copies(struct fbl_rule *r, struct fbl_rng *rng);

#define FBL_ECN_MASK 0x3
#define FBL_ECN_CE 0x3
/* One copy of a frame of len bytes whose IP ECN field is ecn (-1: not IP) entering the
 * rule at now_ns: returns 0 when the queue drops it, else 1 with the time it leaves the
 * link in *release_ns and *mark_ce set when it must be CE-marked. */
int fbl_rule_schedule(struct fbl_rule *r, struct fbl_rng *rng, uint64_t now_ns, uint32_t len,
                      int ecn, uint64_t *release_ns, int *mark_ce);

/* ---- frames ----------------------------------------------------------------------------- */
struct fbl_flow_key {
    uint32_t src, dst;      /* network order */
    uint16_t sport, dport;  /* network order; 0 for protocols without ports */
    uint8_t proto;
};

struct fbl_frame_info {
    int is_ip;              /* IPv4 (possibly behind one VLAN tag) */
    size_t ip_off;          /* offset of the IP header in the frame */
    int ecn;                /* the IP ECN field, -1 when not IP */
    struct fbl_flow_key key;
};

void fbl_frame_parse(const uint8_t *frame, size_t len, struct fbl_frame_info *fi);
/* Sets CE in the IP header at frame + ip_off and patches its checksum (RFC 1624). */
void fbl_frame_mark_ce(uint8_t *frame, size_t ip_off);
uint16_t fbl_ip_checksum(const uint8_t *hdr, size_t len);

/* ---- the link header between a direction's two halves ---------------------------------- */
#define FBL_HDR_LEN 4
#define FBL_HDR_HAS_ID 0x01
void fbl_hdr_put(uint8_t *hdr, int has_id, uint16_t msg_id);
int fbl_hdr_get(const uint8_t *hdr, uint16_t *msg_id);

/* ---- per-flow tables: msg_id counters (sending half), windows (receiving half) ---------- */
struct fbl_flow {
    struct fbl_flow_key key;
    int used;
    uint64_t last_ns;
    uint16_t next_msg;         /* sending half: the msg_id of the flow's next frame */
    uint16_t max_in, max_out;  /* receiving half: highest msg_id before and after the window */
    uint8_t seen_in, seen_out; /* ... once there was one */
    struct fbl_rwin rw;        /* receiving half, when the rule has a window ... */
    uint64_t hold_ns;          /* ... and how long that window may hold a hole */
    uint8_t in_holding;        /* listed among the flows whose window holds frames */
    uint32_t epoch;            /* the last scan of that list that saw it */
};

struct fbl_flows {
    struct fbl_flow *e;
    uint32_t cap;              /* a power of two */
    uint32_t count;
    uint64_t evicted;
};

int fbl_flows_init(struct fbl_flows *t, uint32_t cap);
/* The flow's entry, made when new. A full neighbourhood evicts its least recently used
 * entry, after calling on_evict (to flush what its window holds). */
struct fbl_flow *fbl_flows_get(struct fbl_flows *t, const struct fbl_flow_key *k,
                               uint64_t now_ns, void (*on_evict)(void *ctx, struct fbl_flow *f),
                               void *ctx);
void fbl_flows_free(struct fbl_flows *t);

#endif
