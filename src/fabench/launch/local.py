"""The local launcher: every rank on this host."""

from ..errors import FabenchError
from .base import Launcher, LaunchRequest, LaunchResult, RecordCallback, register_launcher
from .mpi_run import run_mpi_kernel


@register_launcher("local")
class LocalLauncher(Launcher):
    ranks_here = True

    def run(self, req: LaunchRequest, on_record: RecordCallback | None = None) -> LaunchResult:
        if req.kernel.needs_mpi:
            return run_mpi_kernel(req, on_record)
        try:
            from .pair_run import run_pair_kernel
        except ImportError as exc:
            raise FabenchError(f"{req.kernel.name}: transport kernels are not available "
                               f"in this build ({exc})") from exc
        return run_pair_kernel(req, on_record, hosts=None)
