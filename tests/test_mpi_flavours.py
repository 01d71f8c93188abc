"""MPI flavour layer: transport parsing, command lines, and the transport the library reports.

The real-run tests compile a tiny ping-pong with each flavour's mpicc and check that the
selection read back from the library's own verbose output is the one requested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import missing, planned
from fabench.errors import FabenchError
from fabench.host.placement import Allocation, HostSlots
from fabench.kernels.transport_request import Transport, parse_transport
from fabench.mpi.base import (
    MpiFlavour,
    UnsupportedTransport,
    available_flavours,
    flavour_names,
    get_flavour,
    parse_ucx_lanes,
)
from fabench.mpi.mpich import Mpich, parse_mpich_selection
from fabench.mpi.openmpi import OpenMpi, parse_openmpi_selection
from fabench.starters.srun import SrunStarter

FIXTURES = Path(__file__).parent / "fixtures" / "mpi"


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.stderr").read_text()


# --- transport parsing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "spec"),
    [
        ("shm", "shm", None),
        ("tcp", "tcp", None),
        ("ucx", "ucx", None),
        ("ucx:posix", "ucx", "posix"),
        ("ucx:tcp", "ucx", "tcp"),
        ("ucx:sysv,self", "ucx", "sysv,self"),
        ("ucx:^tcp", "ucx", "^tcp"),
        ("ofi:tcp;ofi_rxm", "ofi", "tcp;ofi_rxm"),
        ("ofi:shm", "ofi", "shm"),
        ("TCP", "tcp", None),
    ],
)
def test_parse_transport(text: str, kind: str, spec: str | None) -> None:
    t = parse_transport(text)
    assert (t.kind, t.spec) == (kind, spec)
    assert str(t) == text.lower()
    assert parse_transport(str(t)) == t


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "unknown transport kind"),
        ("rdma", "unknown transport kind 'rdma'"),
        ("shm:posix", "takes no ':' argument"),
        ("tcp:eth0", "takes no ':' argument"),
        ("ucx:", "comma-separated"),
        ("ucx:posix,,tcp", "comma-separated"),
        ("ucx:Po six", "comma-separated"),
        ("ofi", "needs a libfabric provider"),
        ("ofi:", "needs a libfabric provider"),
        ("ofi:tcp;;rxm", "joined by ';'"),
    ],
)
def test_parse_transport_errors(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_transport(text)
    msg = str(exc.value)
    assert fragment in msg
    # Every error names the accepted forms.
    for form in ("shm", "tcp", "ucx:TLS", "ofi:PROVIDER"):
        assert form in msg


def test_transport_accessors() -> None:
    assert parse_transport("ucx:posix").ucx_tls == "posix"
    assert parse_transport("ucx").ucx_tls is None
    assert parse_transport("ofi:tcp;ofi_rxm").ofi_provider == "tcp;ofi_rxm"
    assert parse_transport("tcp").ofi_provider is None
    with pytest.raises(ValueError, match="needs a libfabric provider"):
        parse_transport("ofi")  # MPI over libfabric names its provider
    assert str(Transport("ofi")) == "ofi"  # an ofi.* kernel's own default provider


# --- registry ----------------------------------------------------------------------------


def test_registry() -> None:
    assert {"openmpi", "mpich"} <= set(flavour_names())
    assert isinstance(get_flavour("openmpi"), OpenMpi)
    assert isinstance(get_flavour("mpich"), Mpich)
    with pytest.raises(FabenchError, match="unknown MPI flavour 'lam'.*mpich.*openmpi"):
        get_flavour("lam")
    for f in available_flavours():
        assert f.available() and f.why_unavailable() is None
    missing = OpenMpi(mpirun="/nonexistent/mpirun")
    assert not missing.available()
    assert "not found" in (missing.why_unavailable() or "")


# --- command lines -------------------------------------------------------------------------


def _mca(argv: list[str]) -> dict[str, str]:
    return {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--mca"}


def _cores(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr("fabench.mpi.base.cpu_count", lambda: n)


def test_openmpi_argv_shm_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    _cores(monkeypatch, 2)
    om = OpenMpi()
    shm = om.launch("./k", ["--sizes", "8"], 2, parse_transport("shm"))
    assert shm.argv[:3] == ["mpirun.openmpi", "-np", "2"]
    assert shm.argv[-3:] == ["./k", "--sizes", "8"]
    mca = _mca(shm.argv)
    assert mca["pml"] == "ob1" and mca["btl"] == "self,vader"
    assert mca["pml_base_verbose"] == "10" and mca["btl_base_verbose"] == "1"
    assert "--oversubscribe" not in shm.argv and shm.notes == []
    assert shm.argv[shm.argv.index("--bind-to") + 1] == "core"
    tcp = om.launch("./k", [], 2, parse_transport("tcp"))
    assert _mca(tcp.argv)["btl"] == "tcp,self"
    assert "UCX_TLS" not in tcp.env


def test_openmpi_argv_ucx_ofi(monkeypatch: pytest.MonkeyPatch) -> None:
    _cores(monkeypatch, 2)
    om = OpenMpi()
    ucx = om.launch("./k", [], 2, parse_transport("ucx:posix"))
    mca = _mca(ucx.argv)
    assert mca["pml"] == "ucx"
    assert mca["pml_ucx_tls"] == "any" and mca["pml_ucx_devices"] == "any"
    assert ucx.env["UCX_TLS"] == "posix"
    assert ucx.env["UCX_LOG_LEVEL"] == "info" and ucx.env["UCX_LOG_FILE"] == "stderr"
    for key in ("UCX_TLS", "UCX_LOG_LEVEL", "UCX_LOG_FILE"):
        assert ucx.argv[ucx.argv.index(key) - 1] == "-x"
    assert "UCX_TLS" not in om.launch("./k", [], 2, parse_transport("ucx")).env
    ofi = om.launch("./k", [], 2, parse_transport("ofi:tcp;ofi_rxm"))
    mca = _mca(ofi.argv)
    assert (mca["pml"], mca["mtl"]) == ("cm", "ofi")
    assert mca["mtl_ofi_provider_include"] == "tcp;ofi_rxm"
    assert mca["mtl_ofi_verbose"] == "1"
    with pytest.raises(UnsupportedTransport, match="FI_REMOTE_COMM"):
        om.launch("./k", [], 2, parse_transport("ofi:shm"))


def test_openmpi_oversubscribe_hosts_root(monkeypatch: pytest.MonkeyPatch) -> None:
    _cores(monkeypatch, 2)
    monkeypatch.setattr("fabench.mpi.openmpi.is_root", lambda: True)
    om = OpenMpi()
    over = om.launch("./k", [], 4, parse_transport("shm"))
    assert "--oversubscribe" in over.argv
    assert _mca(over.argv)["mpi_yield_when_idle"] == "1"
    assert over.argv[over.argv.index("--bind-to") + 1] == "none"
    assert over.notes == ["oversubscribed: 4 ranks on 2 cores"]
    assert over.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert over.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    hosted = om.launch(
        "./k", [], 2, parse_transport("tcp"), hosts=["a", "b"], extra_mpirun_args=["--foo"]
    )
    assert hosted.argv[hosted.argv.index("--host") + 1] == "a,b"
    assert hosted.argv[hosted.argv.index("--bind-to") + 1] == "none"
    assert "--oversubscribe" not in hosted.argv
    assert hosted.argv[-2:] == ["--foo", "./k"]
    forced = om.launch("./k", [], 2, parse_transport("tcp"), oversubscribe=True)
    assert "--oversubscribe" in forced.argv
    monkeypatch.setattr("fabench.mpi.openmpi.is_root", lambda: False)
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in om.launch("./k", [], 2, parse_transport("tcp")).env
    with pytest.raises(ValueError, match="ranks"):
        om.launch("./k", [], 0, parse_transport("tcp"))


def _mpich(monkeypatch: pytest.MonkeyPatch, device: str = "ch4:ucx") -> Mpich:
    m = Mpich()
    monkeypatch.setattr(m, "_info", ("4.0.2", device))
    return m


@pytest.mark.parametrize(
    ("text", "tls"),
    [("shm", "self,sm"), ("tcp", "tcp,self"), ("ucx:posix", "posix"), ("ucx", None)],
)
def test_mpich_argv(monkeypatch: pytest.MonkeyPatch, text: str, tls: str | None) -> None:
    _cores(monkeypatch, 2)
    m = _mpich(monkeypatch)
    ml = m.launch("./k", ["-v"], 2, parse_transport(text))
    assert ml.argv[:3] == ["mpirun.mpich", "-np", "2"]
    assert ml.argv[-2:] == ["./k", "-v"]
    assert ml.env.get("UCX_TLS") == tls
    assert ml.env["UCX_LOG_LEVEL"] == "info" and ml.env["UCX_LOG_FILE"] == "stderr"
    assert set(ml.argv[ml.argv.index("-genvlist") + 1].split(",")) == set(ml.env)
    assert ml.argv[ml.argv.index("-bind-to") + 1] == "core"


def test_mpich_version_is_read_from_the_installed_library() -> None:
    # Against the package manager's record of what is installed, not a patched value.
    if shutil.which("mpichversion") is None or shutil.which("dpkg-query") is None:
        missing("MPICH not installed (mpich libmpich-dev)")
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libmpich-dev"],
                         capture_output=True, text=True, check=False).stdout
    upstream = pkg.split(":")[-1].split("-")[0]  # 4.0.2-3 -> 4.0.2
    v = Mpich().version()
    assert v.startswith(f"MPICH {upstream} (ch") and v.endswith(")"), (v, pkg)


def test_mpich_unsupported_and_oversubscribe(monkeypatch: pytest.MonkeyPatch) -> None:
    _cores(monkeypatch, 2)
    m = _mpich(monkeypatch)
    with pytest.raises(UnsupportedTransport, match="ch4:ofi.*MPICH Device: ch4:ucx"):
        m.launch("./k", [], 2, parse_transport("ofi:tcp;ofi_rxm"))
    over = m.launch("./k", [], 4, parse_transport("tcp"), hosts=None)
    assert over.notes and over.notes[0].startswith("oversubscribed: 4 ranks on 2 cores")
    assert over.argv[over.argv.index("-bind-to") + 1] == "none"
    hosted = m.launch("./k", [], 4, parse_transport("tcp"), hosts=["a:2", "b:2"])
    assert hosted.argv[hosted.argv.index("-hosts") + 1] == "a:2,b:2"
    assert hosted.notes == []
    other = _mpich(monkeypatch, device="ch3:nemesis")
    with pytest.raises(UnsupportedTransport, match="ch3:nemesis"):
        other.launch("./k", [], 2, parse_transport("tcp"))


# --- selection parsing from captured real output -------------------------------------------


@pytest.mark.parametrize(
    ("name", "summary", "lanes"),
    [
        ("openmpi-shm", "ob1/vader", None),
        ("openmpi-tcp", "ob1/tcp", None),
        ("openmpi-shm-4ranks-oversubscribed", "ob1/vader", None),
        ("openmpi-ucx", "ucx/sysv+cma", "sysv/memory cma/memory"),
        ("openmpi-ucx-posix", "ucx/posix", "posix/memory"),
        ("openmpi-ucx-tcp", "ucx/tcp", "tcp/lo tcp/eth0"),
        ("openmpi-ucx-sysv-self", "ucx/sysv", "sysv/memory"),
        ("openmpi-ofi-tcp_ofi_rxm", "cm/ofi:tcp;ofi_rxm", None),
        # Asked for "tcp", libfabric layered rxm on top: the report says so, the request doesn't.
        ("openmpi-ofi-tcp", "cm/ofi:tcp;ofi_rxm", None),
    ],
)
def test_parse_openmpi_fixtures(name: str, summary: str, lanes: str | None) -> None:
    sel = parse_openmpi_selection(fixture(name))
    assert sel.summary == summary
    assert sel.known
    assert sel.evidence and any("best priority" in e for e in sel.evidence)
    if lanes:
        assert sel.detail.endswith(lanes)
        assert any("ep_cfg" in e for e in sel.evidence)
    # Identical lines from several ranks count once.
    assert len(sel.evidence) <= 6


def test_parse_openmpi_failures() -> None:
    bare = parse_openmpi_selection(fixture("openmpi-pml-ucx-bare-fail"))
    assert not bare.known
    assert "PML ucx cannot be selected" in bare.detail
    cma = parse_openmpi_selection(fixture("openmpi-ucx-cma-fail"))
    assert not cma.known
    assert "Destination is unreachable" in cma.detail
    assert parse_openmpi_selection("").summary == "unknown"


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        ("mpich-shm", "ch4:ucx/sysv+cma"),
        ("mpich-tcp", "ch4:ucx/tcp"),
        ("mpich-ucx", "ch4:ucx/sysv+cma"),
        ("mpich-ucx-posix", "ch4:ucx/posix"),
        ("mpich-ucx-tcp", "ch4:ucx/tcp"),
        ("mpich-ucx-sysv-self", "ch4:ucx/sysv"),
    ],
)
def test_parse_mpich_fixtures(name: str, summary: str) -> None:
    sel = parse_mpich_selection(fixture(name), "ch4:ucx")
    assert sel.summary == summary
    assert all("ep_cfg" in e and "self/" not in e for e in sel.evidence)


def test_parse_mpich_failure() -> None:
    sel = parse_mpich_selection(fixture("mpich-ucx-cma-fail"), "ch4:ucx")
    assert not sel.known
    assert "no active messages transport" in sel.detail


def test_ucx_lanes_self_only_endpoint_kept_for_one_rank() -> None:
    line = "[1.0] [vm:1 :0] ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(self/memory0 cma/memory)"
    lanes = parse_ucx_lanes(line)
    assert lanes.tls == ("self", "cma")


# --- real runs -----------------------------------------------------------------------------

PINGPONG = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    char buf[8] = {0};
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 100; i++) {
        if (rank == 0) {
            MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("pingpong ok\n");
    MPI_Finalize();
    return 0;
}
"""

_compiled: dict[str, Path] = {}


@pytest.fixture(scope="module")
def pingpong_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("mpi-pingpong")
    (d / "pingpong.c").write_text(PINGPONG)
    return d


def _program(flavour_name: str, d: Path) -> tuple[MpiFlavour, Path]:
    flavour = get_flavour(flavour_name)
    if not flavour.available():
        missing(f"{flavour_name}: {flavour.why_unavailable()}")
    if shutil.which(flavour.mpicc) is None:
        missing(f"{flavour.mpicc} not found (install the {flavour_name} development package)")
    if flavour_name not in _compiled:
        exe = d / f"pingpong-{flavour_name}"
        subprocess.run(
            [flavour.mpicc, "-O2", "-o", str(exe), str(d / "pingpong.c")],
            check=True,
            timeout=60,
        )
        _compiled[flavour_name] = exe
    return flavour, _compiled[flavour_name]


REAL_CASES = [
    ("openmpi", "shm", {"ob1/vader"}),
    ("openmpi", "tcp", {"ob1/tcp"}),
    ("openmpi", "ucx:posix", {"ucx/posix"}),
    ("openmpi", "ucx:tcp", {"ucx/tcp"}),
    ("openmpi", "ofi:tcp;ofi_rxm", {"cm/ofi:tcp;ofi_rxm"}),
    # UCX's "sm" alias lets UCX choose among its shared-memory transports.
    ("mpich", "shm", {"ch4:ucx/sysv+cma", "ch4:ucx/posix+cma", "ch4:ucx/posix", "ch4:ucx/sysv"}),
    ("mpich", "tcp", {"ch4:ucx/tcp"}),
    ("mpich", "ucx:posix", {"ch4:ucx/posix"}),
    ("mpich", "ucx:tcp", {"ch4:ucx/tcp"}),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("flavour_name", "text", "expected"), REAL_CASES)
def test_real_run_reports_selected_transport(
    pingpong_dir: Path, flavour_name: str, text: str, expected: set[str]
) -> None:
    flavour, exe = _program(flavour_name, pingpong_dir)
    transport = parse_transport(text)
    ml = flavour.launch(str(exe), [], 2, transport)
    proc = subprocess.run(
        ml.argv, env=os.environ | ml.env, capture_output=True, text=True, timeout=45
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Verbose output goes to stderr only: stdout stays the program's (the kernels' JSON).
    assert proc.stdout.strip() == "pingpong ok"
    sel = flavour.selected_transport(proc.stderr, transport)
    assert sel.summary in expected, (sel, proc.stderr[-3000:])
    assert sel.evidence


@pytest.mark.timeout(60)
def test_real_run_openmpi_oversubscribed(pingpong_dir: Path) -> None:
    flavour, exe = _program("openmpi", pingpong_dir)
    ranks = (os.cpu_count() or 1) + 1
    ml = flavour.launch(str(exe), [], ranks, parse_transport("shm"))
    assert any(n.startswith(f"oversubscribed: {ranks} ranks") for n in ml.notes)
    proc = subprocess.run(
        ml.argv, env=os.environ | ml.env, capture_output=True, text=True, timeout=45
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sel = flavour.selected_transport(proc.stderr, parse_transport("shm"))
    assert sel.summary == "ob1/vader"


def test_version_strings() -> None:
    for f in available_flavours():
        v = f.version()
        assert v.startswith({"openmpi": "Open MPI ", "mpich": "MPICH "}[f.name])
        assert "unknown" not in v


def test_srun_direct_launch_carries_the_request_as_environment(openmpi: str) -> None:
    om = OpenMpi().direct_launch_env(parse_transport("tcp"))
    assert om["OMPI_MCA_pml"] == "ob1" and om["OMPI_MCA_btl"] == "tcp,self"
    assert om["OMPI_MCA_pml_base_verbose"] == "10"  # the selection is still reported
    ucx = OpenMpi().direct_launch_env(parse_transport("ucx:posix"))
    assert ucx["UCX_TLS"] == "posix" and ucx["OMPI_MCA_pml"] == "ucx"
    assert (OpenMpi.pmi, Mpich.pmi) == ("pmix", "pmi2")
    # the srun starter puts them together; the flavours know nothing of Slurm
    cmd = SrunStarter().batch_command(planned("mpi.latency", "--sizes", "8", transport="tcp"),
                                      Allocation(placed=[HostSlots("n", 2)], execs={}))
    assert cmd.argv[:3] == ["srun", "--mpi=pmix", "--ntasks=2"]
    assert cmd.argv[3].endswith("fb-mpi-latency") and cmd.argv[4:] == ["--sizes", "8"]
    assert cmd.env["OMPI_MCA_btl"] == "tcp,self"
