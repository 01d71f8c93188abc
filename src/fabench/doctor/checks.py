"""What this host can measure, and for each missing piece why and how to get it."""

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..host.native import mpi_flavours_built
from ..host.probe import core_to_core
from ..host.process import run_capture
from ..host.rdma import SYSFS as RDMA_SYSFS
from ..host.rdma import rdma_devices
from ..importers import IMPORTERS
from ..kernels import KERNELS, Kernel, all_kernels
from ..kernels.native import kernel_status
from ..mpi.base import FLAVOURS, flavour_names, get_flavour
from ..schedulers import SCHEDULERS
from ..starters import STARTERS
from ..tune.targets import TUNE_TARGETS
from ..util.registry import PluginError, Registry, all_registries, plugin_error


@dataclass(frozen=True)
class Check:
    section: str
    name: str
    ok: bool
    detail: str
    fix: str = ""


CheckFn = Callable[[], list[Check]]
CHECKS: Registry[CheckFn] = Registry("doctor check")


def register_check(fn: CheckFn) -> CheckFn:
    return CHECKS.add(fn.__name__, fn)


# Every plugin kind, in the order doctor lists them.
PLUGIN_KINDS: tuple[Registry, ...] = (  # type: ignore[type-arg]
    KERNELS, SCHEDULERS, STARTERS, FLAVOURS, IMPORTERS, TUNE_TARGETS)


def plugin_checks() -> list[Check]:
    """Every registered plugin of every kind and, for a site's own, the module that registered
    it; site plugins that fail to load are one failed check naming them."""
    out = []
    broken = plugin_error()
    if broken is not None:
        out.append(Check("Plugins", "site plugins", False, str(broken),
                         "fix or remove the plugin (FABENCH_PLUGINS, entry points "
                         "'fabench.plugins'); until then only `fabench doctor` runs"))
    # Kinds that live above doctor (the CLI's commands) are found among every registry made.
    later = [r for r in all_registries() if r not in PLUGIN_KINDS and r is not CHECKS]
    for reg in (*PLUGIN_KINDS, *later):
        infos = reg.info_loaded() if broken else reg.info()
        names = ", ".join(i.name if i.origin.startswith("fabench.")
                          else f"{i.name} ({i.origin})" for i in infos)
        out.append(Check("Plugins", f"{reg.kind}s", bool(infos), names or "none"))
    return out


def _run(argv: list[str], timeout: float = 20) -> tuple[int, str]:
    c = run_capture(argv, timeout=timeout)
    return c.returncode, c.text


@register_check
def mpi_checks() -> list[Check]:
    out = []
    built = mpi_flavours_built()
    for name in flavour_names():
        fl = get_flavour(name)
        if fl.available():
            kernels = "kernels built" if name in built else \
                "kernels NOT built (reinstall fabench with this MPI's compiler on PATH)"
            out.append(Check("MPI", name, name in built, f"{fl.version()}; {kernels}",
                             "" if name in built else "pip install --force-reinstall ."))
        else:
            out.append(Check("MPI", name, False, fl.why_unavailable() or "not usable",
                             "Debian: apt-get install openmpi-bin libopenmpi-dev mpich "
                             "libmpich-dev"))
    return out


@register_check
def ucx_checks() -> list[Check]:
    rc, text = _run(["ucx_info", "-d"])
    if rc != 0:
        return [Check("UCX", "ucx_info", False, text.strip()[:200],
                      "Debian: apt-get install ucx-utils libucx-dev")]
    tls = sorted(set(re.findall(r"Transport:\s*(\S+)", text)))
    devices = sorted(set(re.findall(r"Device:\s*(\S+)", text)))
    return [Check("UCX", "transports", bool(tls), ", ".join(tls) or "none"),
            Check("UCX", "devices", bool(devices), ", ".join(devices) or "none")]


@register_check
def ofi_checks() -> list[Check]:
    rc, text = _run(["fi_info", "-l"])
    if rc != 0:
        return [Check("libfabric", "fi_info", False, text.strip()[:200],
                      "Debian: apt-get install libfabric-bin libfabric-dev")]
    # ofi_hook_* are interceptors layered on a provider, not transports one can choose.
    provs = sorted({ln.strip().rstrip(":") for ln in text.splitlines()
                    if ln.strip().endswith(":") and not ln.strip().startswith("ofi_hook")})
    return [Check("libfabric", "providers", bool(provs), ", ".join(provs) or "none")]


@register_check
def rdma_checks() -> list[Check]:
    devs = rdma_devices()
    if devs:
        return [Check("RDMA", "devices", True, ", ".join(devs))]
    return [Check("RDMA", "devices", False, f"no RDMA device ({RDMA_SYSFS} is empty)",
                  "needs an InfiniBand/RoCE/iWARP NIC with rdma-core, or Soft-RoCE "
                  "(rdma link add ... type rxe) where the kernel has rdma_rxe")]


@register_check
def nic_checks() -> list[Check]:
    out = []
    for dev in sorted(Path("/sys/class/net").iterdir()):
        mtu = (dev / "mtu").read_text().strip() if (dev / "mtu").exists() else "?"
        state = (dev / "operstate").read_text().strip() if (dev / "operstate").exists() else "?"
        numa = dev / "device" / "numa_node"
        node = numa.read_text().strip() if numa.exists() else "-"
        out.append(Check("NICs", dev.name, state in ("up", "unknown"),
                         f"mtu {mtu}, {state}, numa node {node}"))
    return out


@register_check
def cpu_checks() -> list[Check]:
    cores = os.cpu_count() or 0
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    detail = f"{cores} logical CPUs, {nodes or 1} NUMA node(s)"
    rc, text = _run(["lstopo-no-graphics", "--of", "console", "--no-io"])
    if rc == 0:
        m = re.search(r"Package.*", text)
        detail += f"; hwloc: {m.group(0).strip() if m else 'ok'}"
        return [Check("CPU", "topology", True, detail)]
    return [Check("CPU", "topology", True, detail + "; hwloc not installed",
                  "Debian: apt-get install hwloc (placement advice)")]


@register_check
def core_to_core_checks() -> list[Check]:
    got = core_to_core()
    if got is None:
        return [Check("CPU", "core-to-core", True, "not measured (fewer than two CPUs, or "
                      "fb-probe-c2c not built)")]
    a, b = got["cpus"]
    return [Check("CPU", "core-to-core", True,
                  f"a cache line between CPUs {a} and {b} (ranks 0 and 1) takes "
                  f"{got['one_way_ns']:.0f} ns one way now; recorded with every run, as it "
                  "moves small-message latency (docs/statistics.md, \"Host state\")")]


@register_check
def netns_checks() -> list[Check]:
    # unshare makes a throwaway namespace that vanishes when `true` exits: nothing is left.
    rc, text = _run(["unshare", "--net", "true"])
    if rc == 0:
        return [Check("Testbed", "network namespaces", True,
                      "can create network namespaces (emulated cluster available)")]
    rc2, _ = _run(["unshare", "-r", "-n", "true"])
    if rc2 == 0:
        return [Check("Testbed", "network namespaces", True,
                      "unprivileged user + network namespaces work")]
    return [Check("Testbed", "network namespaces", False, text.strip()[:200],
                  "run as root, or enable unprivileged user namespaces "
                  "(sysctl kernel.unprivileged_userns_clone=1)")]


@register_check
def tool_checks() -> list[Check]:
    tools = {
        "smpicc": ("SimGrid (fabench sim)", "apt-get install libsimgrid-dev simgrid"),
        "sbatch": ("Slurm client (--on slurm)", "apt-get install slurm-client"),
        "chromium": ("headless browser (report tests)", "apt-get install chromium"),
        "iperf3": ("peer tool for bench/", "apt-get install iperf3"),
        "sockperf": ("peer tool for bench/", "apt-get install sockperf"),
    }
    return [Check("Tools", name, shutil.which(name) is not None, what,
                  "" if shutil.which(name) else f"Debian: {fix}")
            for name, (what, fix) in tools.items()]


def runnable_here(kernel: Kernel) -> str | None:
    """Why a built transport kernel cannot run on this host (None when it can)."""
    if kernel.family == "verbs" and not rdma_devices():
        return "no RDMA device (runs are recorded as skipped)"
    return None


@register_check
def kernel_checks() -> list[Check]:
    out = []
    for k in all_kernels():
        ok, detail = kernel_status(k)
        if ok and not k.needs_mpi and (why := runnable_here(k)):
            ok, detail = False, f"{detail}; cannot run here: {why}"
        out.append(Check("Kernels", k.name, ok, detail))
    return out


register_check(plugin_checks)


def run_checks() -> list[Check]:
    results: list[Check] = []
    try:
        checks = CHECKS.in_order()
    except PluginError:  # plugin_checks says which and why; every other check still runs
        checks = CHECKS.in_order_loaded()
    for fn in checks:
        try:
            results.extend(fn())
        except Exception as exc:  # a broken probe must not hide the others
            results.append(Check("doctor", fn.__name__, False, f"check failed: {exc}"))
    return results
