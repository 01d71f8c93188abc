/* fb_boot.c - pick the bootstrap this binary was built for. */
#include "fb_boot.h"

#include <stdlib.h>
#include <string.h>

int fb_boot_tcp_init(struct fb_boot *b, const struct fb_boot_cfg *cfg);
#ifdef FB_BOOT_MPI
int fb_boot_mpi_init(struct fb_boot *b, int *argc, char ***argv);
#endif

bool fb_boot_is_mpi(void)
{
#ifdef FB_BOOT_MPI
    return true;
#else
    return false;
#endif
}

int fb_boot_early_index(void)
{
#ifdef FB_BOOT_MPI
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
#endif
    return -1;
}

int fb_boot_init(struct fb_boot *b, const struct fb_boot_cfg *cfg, int *argc, char ***argv)
{
#ifdef FB_BOOT_MPI
    (void)cfg;
    return fb_boot_mpi_init(b, argc, argv);
#else
    (void)argc;
    (void)argv;
    return fb_boot_tcp_init(b, cfg);
#endif
}
