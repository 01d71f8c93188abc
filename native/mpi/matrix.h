/* matrix.h - mpi.matrix: latency and bandwidth of every ordered pair of ranks. */
#ifndef FB_MATRIX_H
#define FB_MATRIX_H

#include "fb_mpi_common.h"

/* Run the all-pairs matrix to completion; returns the process exit status. */
int fb_matrix_main(const struct fb_mpi_kernel *k, int argc, char **argv);

#endif
