/* app.h - the application-proxy engine behind fb-mpi-{halo3d,fft}: communication patterns of
 * whole applications (a stencil's halo exchange, a distributed FFT's transposes). */
#ifndef FB_APP_H
#define FB_APP_H

#include "fb_mpi_common.h"

/* Run the application proxy named k->name to completion; returns the process exit status (2
 * when app.c has no kernel of that name or its own options are wrong). */
int fb_app_main(const struct fb_mpi_kernel *k, int argc, char **argv);

#endif
