/* pt2pt.h - the point-to-point engine behind fb-mpi-{latency,bw,bibw,mbw_mr}. */
#ifndef FB_PT2PT_H
#define FB_PT2PT_H

enum fb_pt2pt_kind {
    FB_PT2PT_LATENCY, /* ping-pong between ranks 0 and 1, half round trip */
    FB_PT2PT_BW,      /* rank 0 streams windows to rank 1, 1-byte ack per window */
    FB_PT2PT_BIBW,    /* ranks 0 and 1 stream windows to each other */
    FB_PT2PT_MBW_MR,  /* rank i streams to rank i + n/2, every pair at once */
};

/* Run one kernel to completion; returns the process exit status. */
int fb_pt2pt_main(enum fb_pt2pt_kind kind, int argc, char **argv);

#endif
