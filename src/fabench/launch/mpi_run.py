"""Start an MPI kernel through an MPI flavour; shared by every launcher that uses mpirun."""

import os
from collections.abc import Sequence

from ..errors import FabenchError
from ..mpi import get_flavour, parse_transport
from ..native import kernel_executable
from .base import LaunchRequest, LaunchResult, RecordCallback
from .process import run_streaming


def run_mpi_kernel(req: LaunchRequest, on_record: RecordCallback | None = None, *,
                   hosts: list[str] | None = None, extra_mpirun_args: list[str] | None = None,
                   extra_env: dict[str, str] | None = None,
                   prefix: Sequence[str] = (),
                   oversubscribe: bool | None = None) -> LaunchResult:
    """``prefix`` runs mpirun elsewhere, e.g. inside the first testbed host;
    ``oversubscribe=None`` lets the flavour judge from host slots or this host's cores."""
    try:
        flavour = get_flavour(req.mpi)
    except ValueError as exc:
        raise FabenchError(str(exc)) from exc
    if not flavour.available():
        raise FabenchError(f"MPI flavour {req.mpi!r} is not usable here: "
                           f"{flavour.why_unavailable()}")
    try:
        transport = parse_transport(req.transport)
    except ValueError as exc:
        raise FabenchError(str(exc)) from exc
    exe = kernel_executable(req.kernel, flavour.name)
    try:
        launch = flavour.launch(str(exe), req.kernel_args, req.ranks, transport, hosts=hosts,
                                extra_mpirun_args=extra_mpirun_args or [],
                                oversubscribe=oversubscribe)
    except ValueError as exc:  # UnsupportedTransport: this MPI cannot carry that transport
        raise FabenchError(f"{flavour.name}: {exc}") from exc
    env = dict(os.environ)
    env.update(launch.env)
    env.update(extra_env or {})
    env.update(req.env)
    argv = [*prefix, *launch.argv]
    outcome = run_streaming(argv, env, req.timeout_s, on_record)
    selected = flavour.selected_transport(outcome.stderr, transport)
    notes = list(launch.notes)
    if outcome.timed_out:
        notes.append(f"timed out after {req.timeout_s:.0f} s")
    return LaunchResult(
        output=outcome.output, returncode=outcome.returncode, command=argv,
        stderr=outcome.stderr, selected_transport=selected.summary,
        selected_detail=selected.detail, notes=notes,
        oversubscribed=any(n.startswith("oversubscribed") for n in launch.notes),
        # What fabench set for the ranks, the launcher's own variables (e.g. the testbed's
        # UCX_NET_DEVICES) included, so provenance records every steering value it chose.
        extra={"env": {**launch.env, **(extra_env or {})}, "elapsed_s": outcome.elapsed_s},
    )
