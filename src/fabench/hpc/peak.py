"""Theoretical peak (Rpeak) as document 000 computes it: sockets x cores x GHz x DP FLOPs per
cycle, each factor read from the node and its origin said.

FLOPs per cycle per core (double precision) from the vector ISA and the FMA units:
  AVX-512 with two FMA units: 2 units x 8 doubles x 2 (FMA) = 32; with one: 16
  AVX2 + FMA (two 256-bit FMA units):                        16
  AVX (a 256-bit add and a 256-bit multiply port):            8
  SSE2 (a 128-bit add and a 128-bit multiply port):           4
The number of 512-bit FMA units, and whether AVX-512 runs at full width at all, is not in the
CPU flags; `MICROARCHITECTURES` names the cores where the flags do not tell, from the
vendors' own figures: Intel's product specifications ("# of AVX-512 FMA Units", ark.intel.com)
and AMD's Software Optimization Guides (Zen 4, publication 57647: 512-bit operations issue as two
256-bit halves; Zen 1, publication 55723: two 128-bit FMA pipes), as collected per core in
WikiChip's FLOPS table (https://en.wikichip.org/wiki/flops).

The frequency is the base/maximum the node reports, in this order: cpufreq's
`cpuinfo_max_freq`, the "@ x.xxGHz" of the model name (Intel's base clock), else the "cpu MHz"
line (the clock now: in a virtual machine usually the host's TSC rate). Document 000 turns
turbo off so that the clock is the base clock; the origin is recorded so that a reader can
judge. `--peak` overrides everything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import FabenchError
from ..host.process import run_capture


@dataclass(frozen=True)
class Microarch:
    name: str
    flops_per_cycle: int
    source: str


INTEL_ARK = "Intel product specifications, '# of AVX-512 FMA Units' (ark.intel.com)"
# (vendor, family, model) -> the core's DP FLOPs/cycle where the flags do not tell.
MICROARCHITECTURES: dict[tuple[str, int, int], Microarch] = {
    ("GenuineIntel", 6, 0x57): Microarch("Knights Landing", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0x85): Microarch("Knights Mill", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0x6A): Microarch("Ice Lake-SP", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0x6C): Microarch("Ice Lake-D", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0x8F): Microarch("Sapphire Rapids", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0xCF): Microarch("Emerald Rapids", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0xAD): Microarch("Granite Rapids", 32, INTEL_ARK),
    ("GenuineIntel", 6, 0x7D): Microarch("Ice Lake (client)", 16, INTEL_ARK),
    ("GenuineIntel", 6, 0x7E): Microarch("Ice Lake (client)", 16, INTEL_ARK),
    ("GenuineIntel", 6, 0x8C): Microarch("Tiger Lake", 16, INTEL_ARK),
    ("GenuineIntel", 6, 0x8D): Microarch("Tiger Lake", 16, INTEL_ARK),
}
AMD_ZEN1 = Microarch("Zen / Zen+", 8, "AMD Software Optimization Guide for family 17h "
                     "(publication 55723): two 128-bit FMA pipes")
AMD_ZEN4 = Microarch("Zen 4", 16, "AMD Software Optimization Guide for family 19h Zen 4 "
                     "(publication 57647): 512-bit operations issue as two 256-bit halves")
# Skylake-SP / Cascade Lake (family 6 model 0x55): the FMA units differ per SKU; Intel's
# specifications give two for Platinum and Gold 6xxx, one for Silver, Bronze and Gold 5xxx
# (the Gold 5122 excepted).
SKYLAKE_SP = 0x55


@dataclass(frozen=True)
class CpuInfo:
    vendor: str
    family: int
    model: int
    model_name: str
    flags: frozenset[str]
    sockets: int
    cores: int  # physical cores in all sockets
    cpu_mhz: float | None


@dataclass(frozen=True)
class Peak:
    gflops: float  # the node's Rpeak
    per_core_gflops: float
    sockets: int
    cores: int
    ghz: float
    flops_per_cycle: int
    ghz_source: str
    fpc_source: str
    isa: str = ""  # the widest vector ISA the flags show: avx512f, avx2, avx, sse2

    def text(self) -> str:
        return (f"Rpeak {self.gflops:.1f} GFLOPS = {self.sockets} sockets x "
                f"{self.cores // max(self.sockets, 1)} cores x {self.ghz:.3g} GHz "
                f"({self.ghz_source}) x {self.flops_per_cycle} DP FLOPs/cycle "
                f"({self.fpc_source})")

    def to_json(self) -> dict[str, object]:
        return {"peak_gflops": self.gflops, "per_core_gflops": self.per_core_gflops,
                "sockets": self.sockets, "cores": self.cores, "ghz": self.ghz,
                "ghz_source": self.ghz_source, "flops_per_cycle": self.flops_per_cycle,
                "flops_per_cycle_source": self.fpc_source, "isa": self.isa}


def parse_cpuinfo(text: str) -> CpuInfo:
    procs: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                procs.append(cur)
            cur = {}
            continue
        k, sep, v = line.partition(":")
        if sep:
            cur[k.strip()] = v.strip()
    if cur:
        procs.append(cur)
    procs = [p for p in procs if "processor" in p]
    if not procs:
        raise FabenchError("/proc/cpuinfo lists no processor")
    first = procs[0]
    cores = {(p.get("physical id", "0"), p.get("core id", p["processor"])) for p in procs}
    sockets = {p.get("physical id", "0") for p in procs}
    try:
        mhz: float | None = float(first.get("cpu MHz", ""))
    except ValueError:
        mhz = None
    return CpuInfo(first.get("vendor_id", ""), _int(first.get("cpu family")),
                   _int(first.get("model")), first.get("model name", ""),
                   frozenset(first.get("flags", "").split()), len(sockets), len(cores), mhz)


def _int(v: str | None) -> int:
    try:
        return int(v or "-1")
    except ValueError:
        return -1


def flops_per_cycle(cpu: CpuInfo) -> tuple[int, str]:
    """DP FLOPs per cycle per core, and where the figure comes from."""
    arch = MICROARCHITECTURES.get((cpu.vendor, cpu.family, cpu.model))
    if arch is not None:
        return arch.flops_per_cycle, f"{arch.name}: {arch.source}"
    f = cpu.flags
    if cpu.vendor == "AuthenticAMD" and cpu.family == 0x17 and cpu.model < 0x30:
        return AMD_ZEN1.flops_per_cycle, f"{AMD_ZEN1.name}: {AMD_ZEN1.source}"
    if cpu.vendor == "AuthenticAMD" and cpu.family == 0x19 and "avx512f" in f:
        return AMD_ZEN4.flops_per_cycle, f"{AMD_ZEN4.name}: {AMD_ZEN4.source}"
    if "avx512f" in f:
        if cpu.vendor == "GenuineIntel" and cpu.family == 6 and cpu.model == SKYLAKE_SP:
            two = bool(re.search(r"Platinum|Gold 6\d{3}|Gold 5122", cpu.model_name))
            return (32 if two else 16), (f"Skylake-SP/Cascade Lake {cpu.model_name!r}: "
                                         f"{'two' if two else 'one'} AVX-512 FMA unit"
                                         f"{'s' if two else ''} ({INTEL_ARK})")
        return 32, "flags avx512f (assumed two 512-bit FMA units; --peak if not)"
    if "avx2" in f and "fma" in f:
        return 16, "flags avx2+fma (two 256-bit FMA units)"
    if "avx" in f:
        return 8, "flag avx (256-bit add + multiply)"
    if "sse2" in f:
        return 4, "flag sse2 (128-bit add + multiply)"
    raise FabenchError("cannot tell the CPU's DP FLOPs per cycle from its flags: give --peak")


_MODEL_GHZ = re.compile(r"@\s*([0-9.]+)\s*GHz", re.IGNORECASE)


def frequency(cpu: CpuInfo, max_khz_text: str | None) -> tuple[float, str]:
    """GHz and where it came from."""
    if max_khz_text:
        try:
            return int(max_khz_text.strip()) / 1e6, "cpufreq cpuinfo_max_freq"
        except ValueError:
            pass
    if m := _MODEL_GHZ.search(cpu.model_name):
        return float(m.group(1)), "model name (base clock)"
    if cpu.cpu_mhz:
        return cpu.cpu_mhz / 1e3, "/proc/cpuinfo 'cpu MHz' (the clock now, not a maximum)"
    raise FabenchError("the node reports no CPU frequency (no cpufreq, no '@ GHz' in the "
                       "model name, no 'cpu MHz'): give --peak")


def peak_of(cpuinfo_text: str, max_khz_text: str | None) -> Peak:
    cpu = parse_cpuinfo(cpuinfo_text)
    fpc, fpc_src = flops_per_cycle(cpu)
    ghz, ghz_src = frequency(cpu, max_khz_text)
    per_core = ghz * fpc
    isa = next((f for f in ("avx512f", "avx2", "avx", "sse2") if f in cpu.flags), "")
    return Peak(cpu.cores * per_core, per_core, cpu.sockets, cpu.cores, ghz, fpc, ghz_src,
                fpc_src, isa)


def read_peak(prefix: Sequence[str] = ()) -> Peak:
    """The peak of the host reached through `prefix` (this host for ())."""
    info = run_capture([*prefix, "cat", "/proc/cpuinfo"], timeout=10)
    if not info.ok:
        raise FabenchError(f"cannot read /proc/cpuinfo: {info.stderr.strip()[:200]}")
    mx = run_capture([*prefix, "cat", "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"],
                     timeout=10)
    return peak_of(info.stdout, mx.stdout if mx.ok else None)


def given_peak(gflops: float, cores: int) -> Peak:
    if not gflops > 0:
        raise FabenchError(f"--peak must be a positive GFLOPS figure, got {gflops}")
    return Peak(gflops, gflops / max(cores, 1), 0, cores, 0.0, 0, "--peak", "--peak")


def node_peak(given: float | None, prefix: Sequence[str] = ()) -> Peak:
    """The peak of the host reached through `prefix`: read from it, or `given` (`--peak`,
    GFLOPS per node) spread over its physical cores."""
    if given is None:
        return read_peak(prefix)
    try:
        cores = read_peak(prefix).cores
    except FabenchError:
        cores = os.cpu_count() or 1
    return given_peak(given, cores)
