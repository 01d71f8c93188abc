"""Option handling of the transport kernels, the launcher's mapping of --transport, doctor,
spec pass-through and the CLI path, without timing anything."""

import json
import subprocess

import pytest

from conftest import fabench_cli, fabench_run, missing
from fabench.analysis.streams import stream_results
from fabench.errors import FabenchError
from fabench.host.native import native_root
from fabench.kernels import Kernel, all_kernels, get_kernel
from fabench.kernels.native import kernel_status
from fabench.kernels.transport_request import transport_for
from fabench.plan.plan import make_plan
from fabench.plan.spec import parse_spec
from fabench.records import ResultRecord


def transport_args(k: Kernel, text: str) -> list[str]:
    return transport_for(k, text).kernel_args()

TRANSPORT = [k for k in all_kernels() if not k.needs_mpi]


def exe(name: str) -> str:
    path = native_root() / "bin" / get_kernel(name).executable
    if not path.is_file():
        missing(f"{name} not built")
    return str(path)


def kernel(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe(name), *args], capture_output=True, text=True, timeout=30,
                          check=False)


def test_families_registered() -> None:
    fams = {k.family for k in TRANSPORT}
    assert fams == {"tcp", "udp", "ucx", "ofi", "verbs"}
    assert all(k.executable == f"fb-{k.name.replace('.', '-')}" for k in TRANSPORT)


@pytest.mark.parametrize("name", [k.name for k in TRANSPORT])
def test_help_lists_the_kernels_own_options(name: str) -> None:
    p = kernel(name, "--help")
    assert p.returncode == 0 and "--sizes" in p.stdout and "--role" in p.stdout
    fam = name.split(".")[0]
    own = {"tcp": "--nodelay", "udp": "--udp-timeout", "ucx": "--tls", "ofi": "--provider",
           "verbs": "--op"}[fam]
    assert own in p.stdout
    if name != "tcp.streams":
        assert "--streams" not in p.stdout


@pytest.mark.parametrize("args,why", [
    (["--bogus"], "unknown option"),
    (["--streams", "4"], "does not apply"),
    (["--pattern", "rww"], "--pattern"),
    (["--cpu", "x"], "--cpu"),
    (["--sndbuf", "0"], "--sndbuf"),
    (["--port", "70000"], "--port"),
    (["--role", "server", "--sizes", "8:4"], "MIN is larger"),
    (["--role", "client"], "needs --peer"),
    (["--nodelay=1"], "takes no value"),
])
def test_bad_options_exit_2_with_one_line(args: list[str], why: str) -> None:
    p = kernel("tcp.latency", *args)
    assert p.returncode == 2 and p.stdout == ""
    assert why in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_udp_sizes_start_at_its_header() -> None:
    p = kernel("udp.latency", "--role", "server", "--sizes", "4")
    assert p.returncode == 2 and "outside" in p.stderr


@pytest.mark.parametrize("name", ["verbs.latency", "verbs.bw"])
def test_verbs_options_then_device(name: str) -> None:
    # Options are checked first (exit 2), then the device list is opened: with no RDMA device
    # here, a skip record and status 77 - on the server before it listens. Everything after
    # opening the device (rdma-cm connect, QP, CQ polling) needs hardware this host lacks.
    bad = kernel(name, "--op", "read")
    assert bad.returncode == 2 and "--op" in bad.stderr
    p = kernel(name, "--role", "server", "--port", "0", "--op", "write")
    if p.returncode != 77:
        pytest.skip("this host has an RDMA device")
    recs = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert recs == [{"type": "skip", "kernel": name, "reason": "no RDMA device"}]


def test_transport_mapping() -> None:
    assert transport_args(get_kernel("ucx.bw"), "ucx:posix") == ["--tls", "posix"]
    assert transport_args(get_kernel("ofi.bw"), "ofi:tcp;ofi_rxm") == ["--provider",
                                                                      "tcp;ofi_rxm"]
    assert transport_args(get_kernel("tcp.bw"), "shm") == []
    assert transport_args(get_kernel("tcp.bw"), "tcp") == []
    with pytest.raises(FabenchError, match="does not apply"):
        transport_args(get_kernel("tcp.bw"), "ucx:posix")
    with pytest.raises(FabenchError, match="ofi:PROVIDER"):
        transport_args(get_kernel("ofi.bw"), "tcp")


def test_stream_results_split_rows() -> None:
    rec = ResultRecord(kernel="tcp.streams", size=10, iterations=2, warmup=0, unit="us",
                       times=[4.0, 5.0], bytes_per_sample=60, messages_per_sample=6,
                       extra={"streams": 2, "stream_bytes_per_sample": 30,
                              "stream_times": [1.0, 2.0, 3.0, 4.0]})
    a, b = stream_results(rec)
    assert (a.times, b.times) == ([1.0, 2.0], [3.0, 4.0])
    assert a.bytes_per_sample == 30 and a.messages_per_sample == 3
    assert stream_results(ResultRecord("tcp.bw", 1, 1, 0, "us", [1.0])) == []


def test_doctor_status_reasons(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ok, why = kernel_status(get_kernel("tcp.bw"))
    assert ok and why == "built"
    monkeypatch.setenv("FABENCH_NATIVE_DIR", str(tmp_path))  # an empty build
    ok, why = kernel_status(get_kernel("ucx.bw"))
    assert not ok and "libucx-dev" in why


def test_spec_args_reach_the_kernel() -> None:
    spec = parse_spec("runs:\n  - kernel: tcp.streams\n    args: [--streams, '8']\n")
    (run,) = make_plan(spec)
    assert run.kernel_argv()[-2:] == ["--streams", "8"]


def test_cli_bench_and_doctor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    if not (native_root() / "bin" / "fb-tcp-streams").is_file():
        missing("transport kernels not built")
    p = fabench_cli("bench", "tcp.streams", "--sizes", "4K", "--iterations", "3", "--json",
                    "--out", str(tmp_path), "--kernel-args=--streams 2 --nodelay")
    rows = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert rows and rows[0]["selected_transport"] == "tcp" and rows[0]["status"] == "ok"
    assert rows[0]["transport"] == "tcp"  # a transport kernel's default is its own family
    # The table shows the evidence beside the times: CPU per GB, retransmits, each stream.
    p = fabench_cli("bench", "tcp.streams", "--sizes", "4K", "--iterations", "3",
                    "--out", str(tmp_path), "--kernel-args=--streams 2")
    assert "mpi=" not in p.stdout.splitlines()[0]
    head = next(ln for ln in p.stdout.splitlines() if "cli s/GB" in ln)
    assert "retrans" in head and "per-stream" in head
    row = p.stdout.splitlines()[p.stdout.splitlines().index(head) + 1]
    assert row.split()[0] == "4K" and "2 streams:" in row
    p = fabench_run("bench", "verbs.bw", "--sizes", "8", "--out", str(tmp_path), check=False)
    d = fabench_cli("doctor").stdout
    assert "tcp.latency" in d and "verbs.bw" in d
    if "no RDMA device" in d:
        assert p.returncode == 0 and "skipped: no RDMA device" in p.stderr
