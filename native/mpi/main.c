/* main.c - the main of every MPI kernel. CMake compiles it once per mpi.* line of
 * native/kernels.list, with that line's name, default sizes and rank rule (FB_KERNEL,
 * FB_KERNEL_SIZES, FB_KERNEL_RANKS), FB_KERNEL_COLLECTIVE and FB_KERNEL_APP for its kind; the
 * engine finds the kernel's row by name. See docs/kernel-protocol.md. */
#include <string.h>

#include "app.h"
#include "coll.h"
#include "matrix.h"
#include "pt2pt.h"

int main(int argc, char **argv)
{
    static const struct fb_mpi_kernel k = {FB_KERNEL, FB_KERNEL_SIZES, FB_KERNEL_RANKS};
#if FB_KERNEL_APP
    return fb_app_main(&k, argc, argv);
#elif FB_KERNEL_COLLECTIVE
    return fb_coll_main(&k, argc, argv);
#else
    /* the all-pairs matrix has its own engine (native/mpi/matrix.c) */
    if (!strcmp(k.name, "mpi.matrix"))
        return fb_matrix_main(&k, argc, argv);
    return fb_pt2pt_main(&k, argc, argv);
#endif
}
