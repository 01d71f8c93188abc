/* pt2pt.h - the point-to-point engine behind fb-mpi-{latency,bw,bibw,mbw_mr}. */
#ifndef FB_PT2PT_H
#define FB_PT2PT_H

#include "fb_mpi_common.h"

/* Run the point-to-point kernel named k->name to completion; returns the process exit
 * status (2 when pt2pt.c has no kernel of that name). */
int fb_pt2pt_main(const struct fb_mpi_kernel *k, int argc, char **argv);

#endif
