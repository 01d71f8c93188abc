/* fbl_frame.c - reading an Ethernet frame's IPv4 flow and ECN field, CE marking, the link
 * header, and the per-flow tables. */
#include <stdlib.h>
#include <string.h>

#include "fbl.h"

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

void fbl_frame_parse(const uint8_t *f, size_t len, struct fbl_frame_info *fi)
{
    *fi = (struct fbl_frame_info){.ecn = -1};
    if (len < 14)
        return;
    size_t off = 12;
    uint16_t type = rd16(f + off);
    if (type == 0x8100 || type == 0x88a8) { /* one VLAN tag */
        off += 4;
        if (len < off + 2)
            return;
        type = rd16(f + off);
    }
    off += 2;
    if (type != 0x0800 || len < off + 20)
        return;
    const uint8_t *ip = f + off;
    size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
    if ((ip[0] >> 4) != 4 || ihl < 20 || len < off + ihl)
        return;
    fi->is_ip = 1;
    fi->ip_off = off;
    fi->ecn = ip[1] & FBL_ECN_MASK;
    fi->key.proto = ip[9];
    memcpy(&fi->key.src, ip + 12, 4);
    memcpy(&fi->key.dst, ip + 16, 4);
    int first_fragment = (rd16(ip + 6) & 0x1fff) == 0;
    if (first_fragment && (ip[9] == 6 || ip[9] == 17) && len >= off + ihl + 4) {
        memcpy(&fi->key.sport, ip + ihl, 2);
        memcpy(&fi->key.dport, ip + ihl + 2, 2);
    }
}

uint16_t fbl_ip_checksum(const uint8_t *hdr, size_t len)
{
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += rd16(hdr + i);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

void fbl_frame_mark_ce(uint8_t *f, size_t ip_off)
{
    uint8_t *ip = f + ip_off;
    uint16_t old_word = rd16(ip);
    ip[1] |= FBL_ECN_CE;
    uint16_t new_word = rd16(ip);
    /* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') */
    uint32_t sum = (uint16_t)~rd16(ip + 10);
    sum += (uint16_t)~old_word;
    sum += new_word;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t c = (uint16_t)~sum;
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
}

void fbl_hdr_put(uint8_t *h, int has_id, uint16_t msg_id)
{
    h[0] = has_id ? FBL_HDR_HAS_ID : 0;
    h[1] = 0;
    h[2] = (uint8_t)(msg_id >> 8);
    h[3] = (uint8_t)msg_id;
}

int fbl_hdr_get(const uint8_t *h, uint16_t *msg_id)
{
    *msg_id = rd16(h + 2);
    return h[0] & FBL_HDR_HAS_ID;
}

/* ---- flow tables: open addressing, a short probe, least recently used out ------------- */
#define PROBE 8

int fbl_flows_init(struct fbl_flows *t, uint32_t cap)
{
    *t = (struct fbl_flows){0};
    if (cap < PROBE || (cap & (cap - 1)))
        return -1;
    t->e = calloc(cap, sizeof *t->e);
    if (!t->e)
        return -1;
    t->cap = cap;
    return 0;
}

static int key_eq(const struct fbl_flow_key *a, const struct fbl_flow_key *b)
{
    return a->src == b->src && a->dst == b->dst && a->sport == b->sport &&
           a->dport == b->dport && a->proto == b->proto;
}

static uint32_t key_hash(const struct fbl_flow_key *k)
{
    uint64_t x = ((uint64_t)k->src << 32 | k->dst) ^
                 ((uint64_t)k->sport << 40 | (uint64_t)k->dport << 24 | k->proto);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

struct fbl_flow *fbl_flows_get(struct fbl_flows *t, const struct fbl_flow_key *k,
                               uint64_t now_ns, void (*on_evict)(void *ctx, struct fbl_flow *f),
                               void *ctx)
{
    uint32_t h = key_hash(k);
    struct fbl_flow *victim = NULL;
    for (uint32_t i = 0; i < PROBE; i++) {
        struct fbl_flow *f = &t->e[(h + i) & (t->cap - 1)];
        if (f->used && key_eq(&f->key, k)) {
            f->last_ns = now_ns;
            return f;
        }
        if (!f->used) {
            if (!victim || victim->used)
                victim = f;
        } else if (!victim || (victim->used && f->last_ns < victim->last_ns)) {
            victim = f;
        }
    }
    if (victim->used) {
        if (on_evict)
            on_evict(ctx, victim);
        fbl_rwin_free(&victim->rw);
        t->evicted++;
        t->count--;
    }
    *victim = (struct fbl_flow){.key = *k, .used = 1, .last_ns = now_ns};
    t->count++;
    return victim;
}

void fbl_flows_free(struct fbl_flows *t)
{
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->e[i].used)
            fbl_rwin_free(&t->e[i].rw);
    free(t->e);
    t->e = NULL;
}
