"""Real loopback runs of every transport kernel through the pair launcher (server, then client),
checked against docs/kernel-protocol.md and docs/transports.md."""

import json
import math
import os
import statistics
import subprocess
from pathlib import Path

import pytest

from conftest import missing, planned
from fabench.analysis.streams import stream_results
from fabench.host.launched import LaunchResult
from fabench.host.native import native_root
from fabench.kernels import get_kernel
from fabench.metrics import BANDWIDTH
from fabench.starters.pair import run_pair
from fabench.testbed import TestbedConfig, create

# These check the records (fields, counts, validation, what the kernels chose), which hold on a
# shared CPU: they share the first pass. The delayed-ACK stall is a timing (marked so) and the
# lossy testbed link a testbed: those run alone.


def built(name: str) -> bool:
    return (native_root() / "bin" / get_kernel(name).executable).is_file()


def run(name: str, *args: str, transport: str = "shm", env: dict[str, str] | None = None,
        timeout: float = 120) -> LaunchResult:
    if not built(name):
        missing(f"{name} not built here")
    pr = planned(name, *args, transport=transport, env=env, timeout=timeout)
    seen: list[dict] = []
    res = run_pair(pr, seen.append, hosts=None)
    assert [r["type"] for r in seen][:1] == ["meta"] or res.returncode != 0
    return res


def check_protocol(res: LaunchResult, kernel: str, sizes: list[int], iters: int) -> None:
    assert res.returncode == 0, res.stderr
    meta = res.output.meta
    assert meta["kernel"] == kernel and meta["ranks"] == 2 and meta["bootstrap"] == "tcp"
    assert res.selected_transport == meta["selected_transport"]
    assert [r.size for r in res.output.results] == sizes
    for r in res.output.results:
        assert r.iterations == iters and len(r.times) == iters
        assert all(t > 0 for t in r.times)
        assert r.bytes_per_sample > 0 and r.messages_per_sample > 0
        for side in ("client", "server"):
            assert r.extra[f"{side}_cpu_user_s"] >= 0 and r.extra[f"{side}_cpu_sys_s"] >= 0
            assert f"{side}_cpu_s_per_gb" in r.extra
        # the client's CPU time cannot exceed the wall time of the timed part (one thread)
        cpu = r.extra["client_cpu_user_s"] + r.extra["client_cpu_sys_s"]
        assert cpu <= r.extra["timed_s"] * 1.05 + 0.02
    assert res.output.end is not None


@pytest.mark.parametrize("kernel,per_msg,per_sample", [
    ("tcp.latency", 1, 1), ("tcp.bw", 1, 8), ("tcp.bibw", 2, 16),
])
def test_tcp_kernels_validated(kernel: str, per_msg: int, per_sample: int) -> None:
    res = run(kernel, "--sizes", "1,4K,256K", "--iterations", "20", "--warmup", "2",
              "--window", "8", "--validate")
    check_protocol(res, kernel, [1, 4096, 262144], 20)
    assert res.selected_transport == "tcp"
    for r in res.output.results:
        assert r.validated is True
        assert r.bytes_per_sample == r.size * per_sample
        # TCP_INFO's retransmit counter over this size: a whole count, and a retransmitted
        # segment carries at least one byte, so there can be no more than bytes moved (an
        # unsigned difference taken the wrong way round would be ~4e9)
        for side in ("client", "server"):
            n = r.extra[f"{side}_retransmits"]
            assert float(n).is_integer() and 0 <= n <= r.extra["bytes_moved"], (side, n)
        assert r.extra["bytes_moved"] == (2 * r.size if kernel == "tcp.latency"
                                          else r.bytes_per_sample) * 20


@pytest.mark.parametrize("pattern", ["pingpong", "wwr"])
def test_tcp_latency_batch(pattern: str) -> None:
    """--batch N: an iteration is N round trips on both sides (a server that answered one would
    leave the client waiting), the record says N, and the bytes moved count all of them."""
    res = run("tcp.latency", "--sizes", "8,1K", "--iterations", "30", "--warmup", "2",
              "--batch", "10", "--nodelay", "--pattern", pattern)
    check_protocol(res, "tcp.latency", [8, 1024], 30)
    for r in res.output.results:
        assert r.extra["batch"] == 10 and r.extra["receive_mode"] == "blocking"
        reply = 8 if pattern == "wwr" else r.size
        assert r.extra["bytes_moved"] == (r.size + reply) * 10 * 30
        # a sample is the mean of its 10 (half) round trips: the samples add up to the timed
        # part, not to a tenth of it
        per_rt = 1 if pattern == "wwr" else 2
        assert sum(r.times) * per_rt * 10 <= r.extra["timed_s"] * 1e6 * 1.01
        assert sum(r.times) * per_rt * 10 >= r.extra["timed_s"] * 1e6 * 0.5


def test_tcp_streams_total_and_per_stream() -> None:
    res = run("tcp.streams", "--sizes", "64K", "--iterations", "10", "--warmup", "1",
              "--window", "16", "--streams", "3", "--validate")
    check_protocol(res, "tcp.streams", [65536], 10)
    rec = res.output.results[0]
    assert res.output.meta["streams"] == 3
    assert rec.bytes_per_sample == 3 * 16 * 65536
    per = stream_results(rec)
    assert [p.extra["stream"] for p in per] == [0, 1, 2]
    for p in per:
        assert p.bytes_per_sample == 16 * 65536 and len(p.times) == 10
        # a stream finishes within its window: never after the window's last ack
        assert all(s <= t + 1e-3 for s, t in zip(p.times, rec.times, strict=True))
    # total bandwidth is at least the best single stream's (same window, more bytes)
    total = statistics.median(BANDWIDTH.values(rec.times, rec.bytes_per_sample))
    best = max(statistics.median(BANDWIDTH.values(p.times, p.bytes_per_sample)) for p in per)
    assert total >= best * 0.99


def _socket_buffer_limit() -> int:
    """The smaller of this host's net.core.wmem_max and rmem_max (read only, never written)."""
    vals = []
    for name in ("wmem_max", "rmem_max"):
        try:
            vals.append(int(Path(f"/proc/sys/net/core/{name}").read_text()))
        except (OSError, ValueError):
            pytest.skip(f"net.core.{name} is not readable here")
    return min(vals)


def test_tcp_options_reach_the_socket() -> None:
    # A request under the host's caps (stock Linux: 212992), whatever they are here: up to
    # 256 KiB, at most half the smaller cap, whole KiB.
    want = min(256 * 1024, _socket_buffer_limit() // 2) // 1024 * 1024
    assert want >= 4096, "net.core.[rw]mem_max is implausibly small"
    res = run("tcp.bw", "--sizes", "64K", "--iterations", "5", "--warmup", "1",
              "--sndbuf", str(want), "--rcvbuf", str(want), "--nodelay", "--zerocopy")
    check_protocol(res, "tcp.bw", [65536], 5)
    meta = res.output.meta
    assert meta["nodelay"] is True and meta["zerocopy"] is True
    # Linux doubles the request (bookkeeping overhead); below rmem_max/wmem_max it is 2x.
    # The kernel reports what getsockopt returned, not the request.
    assert meta["sndbuf_actual"] == 2 * want
    assert meta["rcvbuf_actual"] == 2 * want
    rec = res.output.results[0]
    # every MSG_ZEROCOPY send got its completion (loopback copies: counted as copied)
    assert rec.extra["client_zerocopy_sends"] > 0
    assert rec.extra["client_zerocopy_copied"] <= rec.extra["client_zerocopy_sends"]


@pytest.mark.timing
def test_nagle_delayed_ack_stall_and_its_two_cures() -> None:
    """write-write-read: Nagle holds the 2nd write until the 1st is ACKed, the server delays
    that ACK (~40 ms). TCP_NODELAY or TCP_QUICKACK each remove the stall."""
    medians = {}
    for opt in ("", "--nodelay", "--quickack"):
        args = ["--pattern", "wwr", "--sizes", "200", "--iterations", "12", "--warmup", "3"]
        res = run("tcp.latency", *args, *([opt] if opt else []))
        assert res.returncode == 0, res.stderr
        assert res.output.meta["pattern"] == "wwr"
        medians[opt or "default"] = statistics.median(res.output.results[0].times)
    assert medians["default"] > 20 * medians["--nodelay"], medians
    assert medians["default"] > 20 * medians["--quickack"], medians


def test_udp_latency() -> None:
    res = run("udp.latency", "--sizes", "8,1K,32K", "--iterations", "200", "--warmup", "20",
              "--validate")
    check_protocol(res, "udp.latency", [8, 1024, 32768], 200)
    assert res.selected_transport == "udp"
    # Every ping gets exactly one echo, so a reply that matched no outstanding ping (stale) is
    # the echo of a ping sent again after a timeout (a lost round trip), in this size or an
    # earlier one: counted cumulatively, stale replies never outnumber lost round trips.
    lost = stale = 0
    for r in res.output.results:
        assert r.validated is True
        x = r.extra
        assert float(x["lost_round_trips"]).is_integer()
        assert float(x["stale_replies"]).is_integer()
        lost += x["lost_round_trips"]
        stale += x["stale_replies"]
        assert 0 <= stale <= lost, (r.size, x)


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces as root (CI is root)")
def test_udp_latency_sends_a_lost_ping_again(tb: str) -> None:
    """Real loss (10 % each way on the testbed's h2 link): a ping or echo lost does not hang
    the round trip; the client sends the ping again after --udp-timeout and counts the loss,
    and a sample times only the attempt that came back (the engine's FB_XFER_LOST), so none
    reaches the half timeout a timed-out attempt inside it would add."""
    st = create("u", TestbedConfig(hosts=2, impairs=["h2:loss=10%"]))
    h1, h2 = st.hosts
    exe = str(native_root() / "bin" / get_kernel("udp.latency").executable)
    timeout_ms = 100
    opts = ["--sizes", "64", "--iterations", "100", "--warmup", "5", "--udp-timeout",
            str(timeout_ms), "--connect-timeout", "30"]
    srv = subprocess.Popen([*h2.enter, exe, "--role", "server", "--bind", h2.address, "--port",
                            "0", *opts], stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        port = json.loads(srv.stdout.readline())["port"]
        cli = subprocess.run([*h1.enter, exe, "--role", "client", "--peer", h2.address,
                              "--port", str(port), *opts], capture_output=True, text=True,
                             timeout=120, check=False)
        assert srv.wait(timeout=60) == 0
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    assert cli.returncode == 0, cli.stderr
    res = [json.loads(line) for line in cli.stdout.splitlines()]
    (rec,) = [r for r in res if r["type"] == "result"]
    assert len(rec["times"]) == 100 and all(t > 0 for t in rec["times"])
    # 105 round trips at 19 % loss each: none lost has a chance of 1e-9
    assert rec["lost_round_trips"] >= 1, rec
    assert max(rec["times"]) < timeout_ms * 1e3 / 2, rec["times"]


def test_udp_stream_counts_add_up() -> None:
    res = run("udp.stream", "--sizes", "64,8K", "--iterations", "20", "--warmup", "2",
              "--window", "32", "--rcvbuf", "4M")
    check_protocol(res, "udp.stream", [64, 8192], 20)
    for r in res.output.results:
        x = r.extra
        assert x["datagrams_expected"] == 20 * 32
        assert x["datagrams_sent"] + x["send_errors"] == x["datagrams_expected"]
        assert x["datagrams_received"] + x["lost"] == x["datagrams_expected"]
        assert x["loss_ratio"] == pytest.approx(x["lost"] / x["datagrams_expected"], abs=1e-6)
        # a duplicate is a further copy of a sequence number already received; the first
        # datagram received cannot be out of order
        assert float(x["duplicates"]).is_integer() and float(x["reordered"]).is_integer()
        assert 0 <= x["duplicates"] <= x["datagrams_received"]
        assert 0 <= x["reordered"] <= max(0, x["datagrams_received"] - 1)
        assert x["received_bytes"] == x["datagrams_received"] * r.size
        assert x["sample_side"] == "sender"


@pytest.mark.parametrize("kernel,transport", [
    ("tcp.bw", "tcp"), ("tcp.bibw", "tcp"), ("ofi.bw", "ofi:shm"),
])
def test_validation_catches_a_corrupted_byte(kernel: str, transport: str) -> None:
    """FABENCH_CORRUPT=1 flips one byte of the server's receive slot before its first check:
    the one-slot check after the window must still fail the run, with the server's record."""
    res = run(kernel, "--sizes", "4K", "--iterations", "3", "--warmup", "0", "--window", "8",
              "--validate", transport=transport, env={"FABENCH_CORRUPT": "1"})
    assert res.returncode != 0
    assert res.output.errors and res.output.errors[0]["rank"] == 1
    assert res.output.errors[0]["kernel"] == kernel and res.output.errors[0]["iteration"] == 0


def test_duration_mode_sets_the_count_from_the_warmup() -> None:
    res = run("tcp.latency", "--sizes", "64", "--duration", "0.3", "--warmup", "200")
    assert res.returncode == 0, res.stderr
    rec = res.output.results[0]
    assert rec.iterations == len(rec.times) and rec.iterations > 1
    assert res.output.meta["duration_s"] == 0.3
    # The count is the duration divided by the warm-up's pace; how long the timed loop then
    # really took depends on the shared host's load, so it is not asserted.
    pace = rec.extra["warmup_pace_us"]
    assert pace > 0 and rec.extra["timed_s"] > 0
    assert abs(rec.iterations - 0.3e6 / pace) <= max(2.0, 0.01 * rec.iterations)


def test_settled_warmup_is_recorded_and_both_sides_stop_together() -> None:
    """The default warm-up settles (fb_settle.h): the client's verdict after every block reaches
    the server over the bootstrap, so both stop at one iteration; a side that ran a different
    count would leave the other waiting for a reply or a message of the next size, or fail
    --validate's per-iteration pattern. --warmup N stays a fixed count; the bandwidth kernels
    keep their fixed one."""
    res = run("tcp.latency", "--sizes", "8,16K", "--iterations", "40", "--nodelay",
              "--validate", transport="tcp")
    check_protocol(res, "tcp.latency", [8, 16384], 40)
    small, large = res.output.results
    assert small.extra["warmup_mode"] == large.extra["warmup_mode"] == "settled"
    assert (small.warmup, large.warmup) == (1000, 100)
    assert 200 <= small.extra["warmup_used"] <= 1000 and small.extra["warmup_used"] % 100 == 0
    assert 20 <= large.extra["warmup_used"] <= 100 and large.extra["warmup_used"] % 10 == 0
    res = run("tcp.latency", "--sizes", "8", "--iterations", "5", "--warmup", "3",
              transport="tcp")
    assert res.returncode == 0, res.stderr
    r = res.output.results[0]
    assert (r.warmup, r.extra["warmup_used"], r.extra["warmup_mode"]) == (3, 3, "fixed")
    res = run("tcp.bw", "--sizes", "64K", "--iterations", "3", transport="tcp")
    assert res.returncode == 0, res.stderr
    r = res.output.results[0]
    assert (r.extra["warmup_used"], r.extra["warmup_mode"]) == (2, "fixed")


@pytest.mark.parametrize("tls", ["posix", "sysv", "tcp"])
def test_ucx_reports_the_transport_it_chose(tls: str) -> None:
    res = run("ucx.latency", "--sizes", "8,64K", "--iterations", "100", "--warmup", "10",
              "--validate", transport=f"ucx:{tls}")
    check_protocol(res, "ucx.latency", [8, 65536], 100)
    lanes = res.output.meta["ucx_lanes"].split(",")
    assert lanes and all(lane.startswith(f"{tls}/") for lane in lanes), lanes
    assert res.selected_transport == f"ucx:{res.output.meta['ucx_lanes']}"
    assert "lane[0]" in (res.selected_detail or "")


@pytest.mark.parametrize("kernel,transport,share", [
    ("tcp.latency", "shm", 10),
    # two clock reads are 5-15 % of a shared-memory half round trip (issue 27; 7.0-8.6 % in 3
    # launches here): a tenth would fail on a faster host whose clock costs the same
    ("ucx.latency", "ucx:posix", 4),
])
def test_timer_overhead_is_measured_and_small(kernel: str, transport: str, share: int) -> None:
    """The meta record's timer_overhead_us (the median of back-to-back clock reads, what the two
    reads around a sample add to it) is the kernel's own measurement: present, finite and above
    zero (two reads of a nanosecond clock always differ; 0 would be a figure not measured),
    and a small share of the 8 B half round trip of the same launch, the figure it is read
    around (ucx over shared memory is the smallest one the transport kernels time here)."""
    res = run(kernel, "--sizes", "8", "--iterations", "200", "--warmup", "20",
              transport=transport)
    check_protocol(res, kernel, [8], 200)
    overhead = res.output.meta["timer_overhead_us"]
    assert isinstance(overhead, float) and math.isfinite(overhead) and overhead > 0
    latency = statistics.median(res.output.results[0].times)
    assert overhead < latency / share, (overhead, latency)


@pytest.mark.parametrize("kernel", ["ucx.bw", "ucx.bibw"])
def test_ucx_bandwidth_kernels(kernel: str) -> None:
    res = run(kernel, "--sizes", "1K,64K", "--iterations", "5", "--warmup", "1", "--window",
              "8", "--validate", transport="ucx:posix")
    check_protocol(res, kernel, [1024, 65536], 5)
    assert res.output.meta["ucx_lanes"].startswith("posix/")


@pytest.mark.parametrize("kernel,transport", [
    ("ucx.bw", "ucx:posix"), ("tcp.bw", "tcp"), ("ofi.bw", "ofi:shm"),
])
def test_bw_validated_keeps_the_plain_footprint(kernel: str, transport: str) -> None:
    """--validate keeps the bandwidth kernels' one receive slot (every message of the window
    lands in it), so a validated run measures the cache footprint of a plain one: the
    receiver's peak resident set (server_max_rss_mib) grows by less than one message, where a
    slot per message of the window adds 63 x 4 MiB (tcp.bw read 14.4 plain, 261.7 validated
    with one)."""
    rss = {}
    for mode in ("plain", "validated"):
        extra = ["--validate"] if mode == "validated" else []
        res = run(kernel, "--sizes", "4M", "--iterations", "3", "--warmup", "1", "--window",
                  "64", *extra, transport=transport)
        check_protocol(res, kernel, [4 << 20], 3)
        rec = res.output.results[0]
        assert bool(rec.validated) is (mode == "validated")
        rss[mode] = rec.extra["server_max_rss_mib"]
        # the peak holds at least the 4 MiB receive slot, which every message was written to
        assert rss[mode] >= 4, rss
    assert abs(rss["validated"] - rss["plain"]) < 4, rss


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
@pytest.mark.parametrize("kernel", ["ofi.latency", "ofi.bw"])
def test_ofi_reports_provider_fabric_domain(kernel: str, provider: str) -> None:
    res = run(kernel, "--sizes", "8,64K", "--iterations", "20", "--warmup", "2", "--window",
              "8", "--validate", transport=f"ofi:{provider}")
    check_protocol(res, kernel, [8, 65536], 20)
    meta = res.output.meta
    assert meta["ofi_provider"] == provider and meta["ofi_ep_type"] == "rdm"
    assert meta["ofi_fabric"] and meta["ofi_domain"]
    if provider.startswith("tcp"):
        # The launcher's loopback addresses reach the provider: no traffic on the host's NICs.
        assert meta["ofi_domain"] == "lo"
    assert res.selected_transport == f"ofi:{provider}"


@pytest.mark.parametrize("kernel", ["ofi.latency", "ofi.bw"])
def test_ofi_msg_endpoints_over_tcp(kernel: str) -> None:
    # tcp is a native MSG provider: the server listens on a passive endpoint bound to the
    # launcher's loopback address, the client connects to the name it announced.
    res = run(kernel, "--endpoint", "msg", "--sizes", "8,64K", "--iterations", "20",
              "--warmup", "2", "--window", "8", "--validate", transport="ofi:tcp")
    check_protocol(res, kernel, [8, 65536], 20)
    meta = res.output.meta
    assert meta["ofi_ep_type"] == "msg" and meta["ofi_provider"] == "tcp"
    assert meta["ofi_domain"] == "lo" and "FI_EP_MSG" in (res.selected_detail or "")
    assert res.selected_transport == "ofi:tcp"
    assert all(r.validated is True for r in res.output.results)


@pytest.mark.parametrize("provider", ["shm", "tcp;ofi_rxm"])
def test_ofi_latency_batch(provider: str) -> None:
    """ofi.latency --batch N through the loop engine, as tcp.latency's: an iteration is N round
    trips on both sides (a responder that answered one would leave the client waiting), the
    record says N, the bytes moved count them all, and a sample is their mean half round
    trip, so the samples add up to the timed part."""
    # not --validate: its barrier between iterations is inside timed_s and, next to ten 1 us
    # round trips over shm, would leave the samples less than half of it (one CI-like run)
    res = run("ofi.latency", "--sizes", "8,1K", "--iterations", "30", "--warmup", "2",
              "--batch", "10", transport=f"ofi:{provider}")
    check_protocol(res, "ofi.latency", [8, 1024], 30)
    for r in res.output.results:
        assert r.extra["batch"] == 10
        assert r.extra["bytes_moved"] == 2 * r.size * 10 * 30
        assert sum(r.times) * 2 * 10 <= r.extra["timed_s"] * 1e6 * 1.01
        assert sum(r.times) * 2 * 10 >= r.extra["timed_s"] * 1e6 * 0.5


def test_ofi_msg_endpoint_on_a_provider_without_one() -> None:
    # shm offers RDM endpoints only: both sides say which provider lacks which endpoint type.
    res = run("ofi.latency", "--endpoint", "msg", "--sizes", "8", "--iterations", "5",
              transport="ofi:shm")
    assert res.returncode != 0 and res.output.results == []
    assert "provider shm has no MSG endpoint (FI_EP_MSG)" in res.stderr


@pytest.mark.parametrize("op", ["send", "write"])
@pytest.mark.parametrize("kernel", ["verbs.latency", "verbs.bw"])
def test_verbs_skips_without_a_device(kernel: str, op: str) -> None:
    # No RDMA device exists on these hosts (no HCA, no rxe/siw): the kernel must say so and
    # stop before waiting for a peer. This is as far as the kernels run here: their data path
    # (the loop engine's hooks over ibv_post_send/recv and the CQ) needs a queue pair, which
    # needs an opened device; it is compiled with -Werror, and the engine's shapes it goes
    # through are the ones tcp, ucx and ofi run in the tests above.
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        pytest.skip("this host has an RDMA device")
    res = run(kernel, "--sizes", "8,64K", "--op", op, "--validate")
    assert res.returncode == 77
    assert res.output.skip_reason == "no RDMA device"
    assert res.output.results == []


@pytest.mark.usefixtures("openmpi")
def test_same_kernel_under_the_mpi_bootstrap() -> None:
    exe = native_root() / "openmpi" / "fb-tcp-latency"
    if not exe.is_file():
        missing("MPI-bootstrapped transport kernels not built")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    p = subprocess.run(["mpirun.openmpi", "-np", "2", "--mca", "btl", "self,vader", str(exe),
                        "--sizes", "8,1K", "--iterations", "50", "--validate"],
                       capture_output=True, text=True, timeout=120, env=env, check=False)
    assert p.returncode == 0, p.stderr
    import json
    recs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert recs[0]["type"] == "meta" and recs[0]["bootstrap"] == "mpi"
    assert [r["size"] for r in recs if r["type"] == "result"] == [8, 1024]
    assert all(r["validated"] for r in recs if r["type"] == "result")
