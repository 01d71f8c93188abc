/* fb-mpi-bw: see pt2pt.c and docs/kernel-protocol.md. */
#include "pt2pt.h"

int main(int argc, char **argv)
{
    return fb_pt2pt_main(FB_PT2PT_BW, argc, argv);
}
