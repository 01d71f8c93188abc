"""Which BLAS hpcc runs on, chosen per run and read back.

Debian's hpcc links `libblas.so.3`, which the dynamic loader finds through the
`libblas.so.3-<triplet>` alternative: whatever BLAS package was installed last with the highest
priority, possibly netlib's reference BLAS (an order of magnitude slower at DGEMM). fabench
never changes the host's alternatives: it puts the directory of OpenBLAS's own
`libblas.so.3` (Debian: /usr/lib/<triplet>/openblas-pthread/) first on LD_LIBRARY_PATH for the
run, then asks the loader (`ldd` under that environment, on the host of the first rank) which
file it resolves, and names it. The reference BLAS is flagged loudly: an HPL figure on it says
nothing about the machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import FabenchError
from ..host.process import run_capture

# Debian's OpenBLAS variants, best first for one single-threaded process per core (the
# threading layer is idle with OPENBLAS_NUM_THREADS=1; pthread is the package Debian
# recommends).
OPENBLAS_VARIANTS = ("openblas-pthread", "openblas-openmp", "openblas-serial")
LIB = "libblas.so.3"
# One process per core: a threaded BLAS under every rank would oversubscribe the cores.
# OPENBLAS_VERBOSE=2: OpenBLAS names the kernels it chose ("Core: SkylakeX") on stderr when
# it loads, in the run itself; other BLAS ignore it.
THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_VERBOSE": "2"}
# OpenBLAS's kernels for cores without AVX: what a dynamic-arch OpenBLAS falls back to on a
# CPU it does not know (Debian's 0.3.21 on an Emerald Rapids core, measured here: Prescott).
PRE_AVX_CORES = frozenset({"Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Core2",
                           "Penryn", "Dunnington", "Nehalem", "Atom", "Opteron",
                           "Opteron_SSE3", "Barcelona", "Nano"})
_CORE = re.compile(r"^Core: (\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class BlasChoice:
    asked: str  # "openblas", "system" or a directory
    env: dict[str, str] = field(default_factory=dict)  # what the ranks get


@dataclass(frozen=True)
class BlasSeen:
    """The BLAS the loader resolves for hpcc under the run's environment."""

    name: str  # "OpenBLAS", "reference BLAS (netlib)", "BLIS", ...
    path: str  # the file, links resolved
    how: str  # how it was chosen
    core: str | None = None  # OpenBLAS's kernels as it reported them in the run

    @property
    def reference(self) -> bool:
        return self.name.startswith("reference")

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "path": self.path, "how": self.how,
                "reference": self.reference, "core": self.core}


def find_openblas(prefix: Sequence[str] = ()) -> str | None:
    """The directory of OpenBLAS's libblas.so.3 on a host (run through `prefix`)."""
    c = run_capture([*prefix, "find", "/usr/lib", "/usr/lib64", "-maxdepth", "3", "-name", LIB,
                     "-path", "*openblas*"], timeout=30)
    found = [ln.strip() for ln in c.stdout.splitlines() if ln.strip().endswith("/" + LIB)]
    for variant in OPENBLAS_VARIANTS:
        for path in found:
            if f"/{variant}/" in path:
                return path.rsplit("/", 1)[0]
    return found[0].rsplit("/", 1)[0] if found else None


def choose(asked: str, prefix: Sequence[str] = (), coretype: str | None = None) -> BlasChoice:
    """The environment that selects the BLAS asked for: "openblas" (default), "system" (the
    host's alternative as it is) or a directory holding a libblas.so.3; `coretype` forces
    OpenBLAS's kernels (OPENBLAS_CORETYPE)."""
    base = {**THREAD_ENV, **({"OPENBLAS_CORETYPE": coretype} if coretype else {})}
    if asked == "system":
        return BlasChoice(asked, base)
    if asked == "openblas":
        where = find_openblas(prefix)
        if where is None:
            raise FabenchError(
                "OpenBLAS's libblas.so.3 is not installed on the host of the first rank "
                "(Debian: apt-get install libopenblas0-pthread; scripts/install-deps.sh installs "
                "it); --blas system runs on whatever BLAS the host's alternative names")
        return BlasChoice(asked, {"LD_LIBRARY_PATH": where, **base})
    if not asked.startswith("/"):
        raise FabenchError(f"--blas {asked!r}: openblas, system, or the absolute path of a "
                           f"directory holding {LIB}")
    if not run_capture([*prefix, "test", "-f", f"{asked.rstrip('/')}/{LIB}"], timeout=30).ok:
        # a directory without one (or a file: /etc/shadow) ran on the host's own BLAS, as if
        # the directory had been used
        raise FabenchError(f"--blas {asked!r}: no {LIB} there on the host of the first rank")
    return BlasChoice(asked, {"LD_LIBRARY_PATH": asked.rstrip("/"), **base})


def classify(path: str) -> str:
    p = path.lower()
    for key, name in (("openblas", "OpenBLAS"), ("blis", "BLIS"), ("atlas", "ATLAS"),
                      ("mkl", "Intel MKL")):
        if key in p:
            return name
    if "/blas/" in p or p.endswith("/libblas.so.3") or "libblas.so.3." in p:
        return "reference BLAS (netlib)"
    return "unknown BLAS"


def seen(program: str, choice: BlasChoice, prefix: Sequence[str] = ()) -> BlasSeen:
    """Ask the loader, under the run's environment, which libblas.so.3 the program gets."""
    env = [f"{k}={v}" for k, v in choice.env.items() if k == "LD_LIBRARY_PATH"]
    c = run_capture([*prefix, "env", *env, "ldd", "--", program], timeout=30)
    path = ""
    for line in c.stdout.splitlines():
        name, sep, rest = line.strip().partition(" => ")
        if sep and name.startswith("libblas.so"):
            path = rest.split(" (", 1)[0].strip()
    if not path or path == "not found":
        raise FabenchError(f"{program} finds no {LIB} (ldd: "
                           f"{(c.stdout + c.stderr).strip()[:200] or 'no output'})")
    real = run_capture([*prefix, "readlink", "-f", "--", path], timeout=10)
    resolved = real.stdout.strip() if real.ok and real.stdout.strip() else path
    how = (f"LD_LIBRARY_PATH={choice.env['LD_LIBRARY_PATH']}" if "LD_LIBRARY_PATH" in choice.env
           else "the host's libblas.so.3 alternative")
    return BlasSeen(classify(resolved), resolved, how)


def reference_warning(blas: BlasSeen) -> str:
    return (f"REFERENCE BLAS: hpcc ran on netlib's reference BLAS ({blas.path}), an order of "
            "magnitude below an optimized BLAS at DGEMM: HPL, StarDGEMM and PTRANS figures "
            "describe the BLAS, not the machine (install libopenblas0-pthread; --blas openblas)")


def openblas_core(stderr: str) -> str | None:
    """The kernels OpenBLAS said it chose (OPENBLAS_VERBOSE=2), from the run's stderr."""
    m = _CORE.search(stderr)
    return m.group(1) if m else None


def fallback_warning(core: str | None, isa: str) -> str | None:
    """A flag when OpenBLAS ran kernels without AVX on a CPU that has AVX or better."""
    if core not in PRE_AVX_CORES or isa not in ("avx", "avx2", "avx512f"):
        return None
    hint = "SkylakeX" if isa == "avx512f" else "Haswell" if isa == "avx2" else "SandyBridge"
    return (f"OPENBLAS FALLBACK: OpenBLAS ran its {core} kernels (it does not know this CPU) "
            f"on a CPU with {isa}: HPL and DGEMM run at a fraction of the core's rate; force "
            f"the kernels with --openblas-coretype {hint} (OPENBLAS_CORETYPE)")
