"""This host's RDMA devices, as the kernel lists them in sysfs: what `fabench doctor` shows and
what a verbs kernel needs to run (one a remote host needs is probed there, tune/roce_read)."""

from pathlib import Path

SYSFS = Path("/sys/class/infiniband")


def rdma_devices(sysfs: Path = SYSFS) -> list[str]:
    return sorted(p.name for p in sysfs.iterdir()) if sysfs.is_dir() else []
