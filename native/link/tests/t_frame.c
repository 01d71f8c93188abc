/* t_frame: flow keys from Ethernet/IPv4 frames (plain, VLAN-tagged, fragments, ARP), CE
 * marking keeps the IP checksum right, the link header round trip, and the flow table's
 * eviction of its least recently used entry. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fbl.h"

#define T_NAME "t_frame"
#include "t_expect.h"

/* A TCP/IPv4 frame 10.77.3.1:40000 -> 10.77.3.2:5201 with the given TOS, checksummed. */
static size_t tcp_frame(uint8_t *f, uint8_t tos, int vlan)
{
    memset(f, 0, 128);
    size_t off = 12;
    if (vlan) {
        f[off] = 0x81, f[off + 1] = 0x00, f[off + 3] = 7;
        off += 4;
    }
    f[off] = 0x08, f[off + 1] = 0x00;
    uint8_t *ip = f + off + 2;
    ip[0] = 0x45;
    ip[1] = tos;
    ip[3] = 40;
    ip[8] = 64;
    ip[9] = 6;
    inet_pton(AF_INET, "10.77.3.1", ip + 12);
    inet_pton(AF_INET, "10.77.3.2", ip + 16);
    uint16_t c = fbl_ip_checksum(ip, 20);
    ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
    uint16_t sp = htons(40000), dp = htons(5201);
    memcpy(ip + 20, &sp, 2);
    memcpy(ip + 22, &dp, 2);
    return off + 2 + 40;
}

int main(void)
{
    uint8_t f[128];
    struct fbl_frame_info fi;
    for (int vlan = 0; vlan < 2; vlan++) {
        size_t len = tcp_frame(f, 0x02 /* ECT(0) */, vlan);
        fbl_frame_parse(f, len, &fi);
        EXPECT(fi.is_ip && fi.ecn == 2 && fi.key.proto == 6 && ntohs(fi.key.sport) == 40000 &&
                   ntohs(fi.key.dport) == 5201 && fi.ip_off == (vlan ? 18u : 14u),
               "vlan %d: parsed", vlan);
        char a[16];
        inet_ntop(AF_INET, &fi.key.dst, a, sizeof a);
        EXPECT(strcmp(a, "10.77.3.2") == 0, "dst %s", a);
        fbl_frame_mark_ce(f, fi.ip_off);
        EXPECT((f[fi.ip_off + 1] & 3) == 3, "CE set");
        EXPECT(fbl_ip_checksum(f + fi.ip_off, 20) == 0, "vlan %d: checksum still valid", vlan);
    }
    /* a DSCP value survives marking; checksum stays right for many TOS values */
    int bad = 0;
    for (int tos = 0; tos < 256; tos++) {
        size_t len = tcp_frame(f, (uint8_t)tos, 0);
        fbl_frame_parse(f, len, &fi);
        fbl_frame_mark_ce(f, fi.ip_off);
        bad += fbl_ip_checksum(f + 14, 20) != 0 || (f[15] >> 2) != (tos >> 2);
    }
    EXPECT(bad == 0, "%d TOS values broke", bad);

    /* a later fragment carries no ports: keyed without them */
    size_t len = tcp_frame(f, 0, 0);
    f[14 + 6] = 0x00, f[14 + 7] = 0x10;
    fbl_frame_parse(f, len, &fi);
    EXPECT(fi.is_ip && fi.key.sport == 0 && fi.key.dport == 0, "fragment without ports");
    /* ARP, and a runt */
    f[12] = 0x08, f[13] = 0x06;
    fbl_frame_parse(f, len, &fi);
    EXPECT(!fi.is_ip && fi.ecn == -1, "ARP is not IP");
    fbl_frame_parse(f, 10, &fi);
    EXPECT(!fi.is_ip, "runt");
    /* an IPv4 header claiming more than the frame holds */
    tcp_frame(f, 0, 0);
    f[14] = 0x4f;
    fbl_frame_parse(f, 40, &fi);
    EXPECT(!fi.is_ip, "truncated header");

    uint8_t h[FBL_HDR_LEN];
    uint16_t id;
    fbl_hdr_put(h, 1, 0xbeef);
    EXPECT(fbl_hdr_get(h, &id) && id == 0xbeef, "header round trip");
    fbl_hdr_put(h, 0, 0);
    EXPECT(!fbl_hdr_get(h, &id), "no id");

    /* flow table: 16 slots, probe of 8: keys that all land in one neighbourhood evict the
     * least recently used */
    struct fbl_flows t;
    EXPECT(fbl_flows_init(&t, 16) == 0, "init");
    EXPECT(fbl_flows_init(&(struct fbl_flows){0}, 12) != 0, "capacity not a power of two");
    struct fbl_flow_key k = {.proto = 6};
    for (uint32_t i = 0; i < 40; i++) {
        k.sport = (uint16_t)i;
        struct fbl_flow *e = fbl_flows_get(&t, &k, i, NULL, NULL);
        e->next_msg = (uint16_t)(i + 1000);
    }
    EXPECT(t.count <= 16 && t.evicted == 40 - t.count, "count %u evicted %llu", t.count,
           (unsigned long long)t.evicted);
    k.sport = 39;
    struct fbl_flow *e = fbl_flows_get(&t, &k, 50, NULL, NULL);
    EXPECT(e->next_msg == 1039, "the newest flow kept its state (%u)", e->next_msg);
    fbl_flows_free(&t);
    return t_verdict();
}
