"""HPL and HPC Challenge through Debian's hpcc: the parser on real hpcc output files
(tests/fixtures/hpcc/README.md says how each was made), the input, the peak, and real hpcc
runs through the CLI (small N, 1-2 ranks) including the failures that must store nothing."""

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import _exe, fabench_cli, fabench_run, missing, own_testbeds
from fabench.errors import FabenchError
from fabench.host.files import HostFiles
from fabench.host.leftovers import tagged
from fabench.hpc.blas import BlasSeen, classify, fallback_warning, openblas_core
from fabench.hpc.convert import records_for
from fabench.hpc.hpccinf import Asked, make_input, problem_size, process_grid, read_input
from fabench.hpc.job import FallbackWatch
from fabench.hpc.output import (
    HpccRunError,
    check_hpl,
    check_parameters,
    header_used,
    parse_output,
)
from fabench.hpc.peak import CpuInfo, Peak, flops_per_cycle, frequency, peak_of, read_peak
from fabench.hpl.scaling import node_counts, sizes_per_count
from fabench.kernels import get_kernel
from fabench.kernels.native import kernel_status
from fabench.metrics import GFLOPS
from fabench.model.apps import dims_create, fft_time, halo3d_time, halo_distances
from fabench.model.collectives import alltoall_pairwise
from fabench.model.cost import Cluster, Model
from fabench.model.hpl import hpl_point, load_node_table, params_from
from fabench.model.presets import PRESETS
from fabench.model.topology import TopologySpec
from fabench.records import ResultRecord
from fabench.store.database import Store
from fabench.testbed import TestbedConfig, create
from test_report import browse, console_errors

FIX = Path(__file__).parent / "fixtures" / "hpcc"
GOOD = FIX / "n800-2ranks-openblas.txt"
OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3")
REFERENCE_DIR = Path("/usr/lib/x86_64-linux-gnu/blas")


def _peak() -> Peak:  # this host's, as the starter computes it
    return read_peak()


def _blas() -> BlasSeen:
    return BlasSeen("OpenBLAS", str(OPENBLAS), "fixture")


# --- the parser, on real output -----------------------------------------------------------

def test_parse_a_real_run() -> None:
    res = parse_output(GOOD.read_text())
    [t] = check_hpl(res)
    assert (t.n, t.nb, t.p, t.q, t.passed) == (800, 128, 1, 2, True)
    assert t.residual is not None and 0 < t.residual < 16
    # the time from the rate agrees with HPL's 2-decimal time
    assert abs(t.seconds - t.time_s) <= 0.006
    assert len(res.ptrans_gbs) == 5 and res.ptrans_passed and res.ptrans_n == 400
    assert set(res.stardgemm) == {"min", "avg", "max"}
    assert res.mpifft["n"] == 65536 and res.mpifft["gflops"] > 0
    assert {(r.order, r.size) for r in res.ring} == {
        ("natural", 8), ("random", 8), ("natural", 2000000), ("random", 2000000)}
    # the Summary section agrees with the sections the records come from
    assert res.number("HPL_N") == 800
    assert abs(res.number("StarDGEMM_Gflops") - res.stardgemm["avg"]) < 1e-4
    check_parameters(res, Asked((800,), 128, 1, 2))


def test_records_derive_the_rates_hpcc_printed() -> None:
    res = parse_output(GOOD.read_text())
    peak = _peak()
    [hpl] = records_for("hpcc.hpl", res, 2, peak, _blas())
    rec = ResultRecord.from_json(hpl)
    [g] = GFLOPS.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample)
    assert g == pytest.approx(res.hpl[0].gflops, rel=1e-9)
    assert rec.extra["efficiency"] == pytest.approx(g / (2 * peak.per_core_gflops))
    assert rec.extra["efficiency_stardgemm"] == pytest.approx(g / (2 * res.stardgemm["avg"]))
    [fft] = records_for("hpcc.mpifft", res, 2, peak, _blas())
    r = ResultRecord.from_json(fft)
    assert GFLOPS.values(r.times, 0, r.messages_per_sample)[0] == pytest.approx(
        res.mpifft["gflops"])
    [pt] = records_for("hpcc.ptrans", res, 2, peak, _blas())
    assert len(pt["times"]) == 5
    # bytes/us is MB/s: 1000 x hpcc's GB/s
    assert pt["bytes_per_sample"] / pt["times"][0] == pytest.approx(res.ptrans_gbs[0] * 1e3)
    ring = records_for("hpcc.ring", res, 2, peak, _blas())
    nat = next(x for x in ring if x["order"] == "natural" and x["size"] == 2000000)
    bw = next(r.bandwidth_MBps for r in res.ring if (r.order, r.size) == ("natural", 2000000))
    assert nat["bytes_per_sample"] / nat["times"][0] == pytest.approx(bw, rel=1e-5)


def test_a_failed_residual_is_no_result() -> None:
    # a real run whose threshold was 1e-9: HPL itself printed FAILED
    res = parse_output((FIX / "n800-threshold-1e-9-failed.txt").read_text())
    with pytest.raises(HpccRunError, match=r"FAILED its residual check.*0\.0054303"):
        check_hpl(res)
    for kernel in ("hpcc.hpl", "hpcc.ptrans", "hpcc.ring"):
        with pytest.raises(HpccRunError):
            records_for(kernel, res, 2, _peak(), _blas())
    # crafted from the passing run: only the verdict changed
    text = GOOD.read_text()
    assert text.count("...... PASSED") == 1
    crafted = parse_output(text.replace("...... PASSED", "...... FAILED"))
    with pytest.raises(HpccRunError, match="nothing is stored"):
        check_hpl(crafted)


def test_hpcc_fallback_on_a_bad_input_value_is_refused() -> None:
    res = parse_output((FIX / "nb-minus5-fallback.txt").read_text())
    # hpcc ran, at its own defaults, and HPL passed: only the check against the input sees it
    assert check_hpl(res)[0].n == 3520
    stderr = (FIX / "nb-minus5-fallback.stderr").read_text()
    with pytest.raises(HpccRunError, match=r"Value of NB less than 1.*N 3520 \(asked 800\)"):
        check_parameters(res, Asked((800,), -5, 1, 2), stderr)


def test_fallback_watch_reads_the_growing_output_file(tmp_path: Path) -> None:
    """The parameter block hpcc prints at its start, read as the file grows (a real fallback
    run's file written out in pieces): nothing until the block's closing line, then the
    fallback named; a good run's block matches and the watch stops reading."""
    full = (FIX / "nb-minus5-fallback.txt").read_text()
    out = tmp_path / "hpccoutf.txt"
    watch = FallbackWatch(HostFiles(()), str(out), Asked((800,), -5, 1, 2))
    assert watch.poll() is None and not watch.done  # not written yet
    block_end = full.index("\n----", full.index("The following parameter values")) + 1
    out.write_text(full[:block_end + 10])  # the "----" line half written
    assert watch.poll() is None and not watch.done
    out.write_text(full)
    why = watch.poll()
    assert watch.done and why is not None and "NB 80 (asked -5)" in why
    stderr = (FIX / "nb-minus5-fallback.stderr").read_text()
    assert watch.error(stderr).startswith("HPL rejected hpccinf.txt: Value of NB less than 1")
    assert "stopped early" in watch.error(stderr)
    good = (FIX / "n800-2ranks-openblas.txt").read_text()
    assert header_used(good) == {"N": "800", "NB": "128", "PMAP": "Row-major process mapping",
                                 "P": "1", "Q": "2"}
    ok = FallbackWatch(HostFiles(()), str(GOOD), Asked((800,), 128, 1, 2))
    assert ok.poll() is None and ok.done
    # a test section before any parameter block: nothing to compare, stop watching
    assert header_used("Begin of MPIRandomAccess section.\n") == {}


def test_truncated_output_is_an_error() -> None:
    text = GOOD.read_text()
    with pytest.raises(HpccRunError, match="no Summary section"):
        parse_output(text[:text.index("Begin of Summary section.")])


# --- the input -----------------------------------------------------------------------------

def test_grid_and_problem_size() -> None:
    assert [process_grid(r) for r in (1, 2, 3, 4, 6, 8, 12, 16, 240)] == [
        (1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (2, 4), (3, 4), (4, 4), (15, 16)]
    n = problem_size(64 * 2**30, 0.8, 192)
    assert n % 192 == 0 and 8 * n * n <= 0.8 * 64 * 2**30 < 8 * (n + 192) ** 2
    with pytest.raises(FabenchError, match="memory-fraction"):
        problem_size(2**30, 1.5, 128)


def test_input_round_trip_and_bad_values() -> None:
    inp = make_input(6, [1000, 2000], nb=96)
    assert read_input(inp.text()) == Asked((1000, 2000), 96, 2, 3)
    lines = inp.text().splitlines()
    lines[7] = "abc          NBs"
    # the line is named, its word not quoted: the file may be anyone's (issue 31)
    with pytest.raises(FabenchError, match=r"line 8 \(NB\): not a number") as exc:
        read_input("\n".join(lines))
    assert "abc" not in str(exc.value)


# --- the peak ------------------------------------------------------------------------------

def _cpu(vendor: str, family: int, model: int, flags: str, name: str = "x") -> CpuInfo:
    return CpuInfo(vendor, family, model, name, frozenset(flags.split()), 2, 24, None)


def test_flops_per_cycle_from_flags_and_table() -> None:
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0x3F, "sse2 avx avx2 fma"))[0] == 16
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0x2D, "sse2 avx"))[0] == 8
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0x1A, "sse2"))[0] == 4
    # where the flags do not tell: the FMA units per SKU, AMD's half-width AVX-512
    plat = "Intel(R) Xeon(R) Platinum 8168 CPU @ 2.70GHz"
    silver = "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz"
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0x55, "avx2 fma avx512f", plat))[0] == 32
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0x55, "avx2 fma avx512f", silver))[0] == 16
    assert flops_per_cycle(_cpu("AuthenticAMD", 0x19, 0x11, "avx2 fma avx512f"))[0] == 16
    assert flops_per_cycle(_cpu("AuthenticAMD", 0x17, 0x01, "avx2 fma"))[0] == 8
    assert flops_per_cycle(_cpu("GenuineIntel", 6, 0xCF, "avx2 fma avx512f"))[0] == 32
    # document 000: 2 sockets x 12 cores x 2.7 GHz x 8 = 518.4
    cpu = _cpu("GenuineIntel", 6, 0x3E, "sse2 avx", "Intel(R) Xeon(R) CPU E5-2697 v2 @ 2.70GHz")
    ghz, src = frequency(cpu, None)
    assert (ghz, src) == (2.7, "model name (base clock)")
    assert frequency(cpu, "3500000\n")[0] == 3.5


def _cpuinfo(model_name: str, family: int, model: int, flags: str, sockets: int,
             cores: int, threads: int = 2) -> str:
    """A /proc/cpuinfo of `sockets` x `cores` cores with `threads` hardware threads each."""
    blocks, n = [], 0
    for s in range(sockets):
        for c in range(cores):
            for _ in range(threads):
                blocks.append(f"processor\t: {n}\nvendor_id\t: GenuineIntel\n"
                              f"cpu family\t: {family}\nmodel\t\t: {model}\n"
                              f"model name\t: {model_name}\ncpu MHz\t\t: 1000.000\n"
                              f"physical id\t: {s}\ncore id\t\t: {c}\nflags\t\t: {flags}\n")
                n += 1
    return "\n".join(blocks)


def test_peak_matches_published_rpeak() -> None:
    # Intel publishes 3,072 GFLOPS (FP64) for two Xeon Gold 6148 (20 cores, 2.4 GHz base,
    # two AVX-512 FMA units: 32 FLOPs/cycle): 2 x 20 x 2.4 x 32. Hyper-threads do not count.
    text = _cpuinfo("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 6, 0x55,
                    "fpu sse2 avx avx2 fma avx512f", sockets=2, cores=20)
    p = peak_of(text, None)
    assert p.gflops == pytest.approx(3072.0) and (p.sockets, p.cores) == (2, 40)
    assert p.ghz_source == "model name (base clock)"
    # The Silver 4114 (10 cores, 2.2 GHz) has one AVX-512 FMA unit: 10 x 2.2 x 16 = 352.
    silver = peak_of(_cpuinfo("Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", 6, 0x55,
                              "sse2 avx avx2 fma avx512f", sockets=1, cores=10), None)
    assert silver.gflops == pytest.approx(352.0)
    # cpufreq's maximum (kHz) wins over the model name's base clock.
    assert peak_of(text, "3700000\n").ghz == pytest.approx(3.7)


def test_peak_of_this_host_counts_its_physical_cores() -> None:
    p = peak_of(Path("/proc/cpuinfo").read_text(), None)
    # lscpu (util-linux) counts cores independently of fabench's parser
    out = subprocess.run(["lscpu", "-p=SOCKET,CORE"], capture_output=True, text=True,
                         check=True).stdout
    pairs = {ln for ln in out.splitlines() if ln and not ln.startswith("#")}
    assert p.cores == len(pairs) and p.flops_per_cycle in (4, 8, 16, 32)


def test_openblas_kernels_read_from_the_run() -> None:
    stderr = "[vm:1] something\nCore: Prescott\nHPL WARNING ...\n"
    assert openblas_core(stderr) == "Prescott" and openblas_core("no core line") is None
    flag = fallback_warning("Prescott", "avx512f")
    assert flag and "OPENBLAS FALLBACK" in flag and "--openblas-coretype SkylakeX" in flag
    assert fallback_warning("SkylakeX", "avx512f") is None
    assert fallback_warning("Prescott", "sse2") is None  # nothing better to run there


def test_blas_names() -> None:
    assert classify("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3") == "OpenBLAS"
    assert classify("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0").startswith("reference")
    assert classify("/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3") == "BLIS"


# --- real hpcc runs ------------------------------------------------------------------------
# N 128 (one block of the default NB, 256 where two ranks share the grid) is the smallest
# problem that still runs HPL's factorisation and its residual check: a run took 8.0 s against
# 10.5 s at N 500 on the loaded 2-core development host; the rest is hpcc's other benchmarks
# and mpirun's start.

@pytest.fixture(scope="module")
def hpcc() -> str:
    if shutil.which("hpcc") is None or shutil.which("mpirun.openmpi") is None:
        missing("Debian's hpcc with Open MPI is not installed (scripts/debian-packages.txt)")
    if not OPENBLAS.is_file():
        missing("OpenBLAS is not installed (libopenblas0-pthread)")
    return "hpcc"


def _runs(out: Path) -> list:
    with Store(out / "fabench.sqlite") as st:
        return [(r, list(st.results(r.id))) for r in st.runs(st.campaigns()[-1]["id"])]


@pytest.mark.hpcc
def test_bench_hpcc_hpl_json(hpcc: str, tmp_path: Path) -> None:
    p = fabench_cli("bench", "hpcc.hpl", "--ranks", "2", "--sizes", "640", "--json",
                    "--out", str(tmp_path))
    [line] = p.stdout.splitlines()
    rec = json.loads(line)
    assert rec["unit"] == "Gflops" and rec["metric"] == "gflops" and rec["size"] == 640
    assert rec["status"] == "ok" and rec["blas"].startswith("OpenBLAS")
    assert 0 < rec["efficiency"] < 1 and rec["efficiency"] == pytest.approx(
        rec["median"] / rec["peak_gflops"])
    assert rec["efficiency_stardgemm"] > 0 and (rec["p"], rec["q"]) == (1, 2)
    [(run, results)] = _runs(tmp_path)
    assert run.status == "ok" and run.kernel_meta["blas"]["name"] == "OpenBLAS"
    # OpenBLAS named its kernels in the run (OPENBLAS_VERBOSE=2) and the record carries them
    core = run.provenance["blas"]["core"]
    assert core and rec["blas"] == f"OpenBLAS ({core} kernels)"
    assert "HPL_Tflops" in run.kernel_meta["summary"]
    assert "Rpeak" in " ".join(run.notes)
    assert results[0].extra["nodes"] == 1
    # the model takes the measured node and shows the measurement beside its row
    m = fabench_cli("model", "hpl", "-f", "tcp-40g", "--nodes", "1,2", "--from-run",
                    str(run.id), "--measured", str(run.id), "--mem-gb", "0.0033",
                    "--mem-fraction", "1", "--nb", "64", "--band-samples", "1",
                    "--out", str(tmp_path))
    assert f"efficiency_1node: stored run {run.id}" in m.stdout
    # the measured row shows the efficiency `bench` printed for that run (read back from the
    # store, not recomputed by the model)
    mine = next(ln.split() for ln in m.stdout.splitlines() if ln.split()[:2] == [str(run.id), "1"])
    assert mine[4] == f"{rec['efficiency'] * 100:.2f}"
    # two nodes add communication over tcp-40g to the 1-node compute time: lower efficiency
    model_rows = {ln.split()[0]: ln.split() for ln in m.stdout.splitlines()
                  if ln.split()[:1] in (["1"], ["2"]) and "x" in ln.split()[1]}
    assert float(model_rows["2"][3]) < float(model_rows["1"][3])


@pytest.mark.hpcc
def test_other_hpcc_kernels_one_rank(hpcc: str, tmp_path: Path) -> None:
    p = fabench_cli("bench", "hpcc.stardgemm", "--ranks", "1", "--sizes", "128", "--json",
                    "--out", str(tmp_path))
    rec = json.loads(p.stdout.splitlines()[0])
    assert rec["unit"] == "Gflops" and rec["median"] > 0 and rec["efficiency"] > 0


@pytest.mark.hpcc
def test_failed_residual_fails_the_run_and_stores_nothing(hpcc: str, tmp_path: Path) -> None:
    p = fabench_run("bench", "hpcc.hpl", "--ranks", "1", "--sizes", "128",
                    "--kernel-args=--threshold 1e-9", "--out", str(tmp_path), check=False)
    assert p.returncode == 1
    assert "FAILED its residual check" in p.stderr and "nothing is stored" in p.stderr
    [(run, results)] = _runs(tmp_path)
    assert run.status == "failed" and results == []
    assert "FAILED its residual check" in (run.reason or "")


def _bad_nb_fails(tmp_path: Path, ranks: int) -> tuple[list[str], Path]:
    """An input file asking NB -5 on `ranks` ranks: the run fails, stores nothing, and is
    stopped at hpcc's defaults; returns the file's lines and path."""
    lines = make_input(ranks, [500]).text().splitlines()
    lines[7] = "-5           NBs"
    bad = tmp_path / "hpccinf.txt"
    bad.write_text("\n".join(lines) + "\n")
    p = fabench_run("bench", "hpcc.hpl", "--ranks", str(ranks),
                    f"--kernel-args=--hpccinf {bad}", "--out", str(tmp_path), check=False)
    assert p.returncode == 1
    assert "Value of NB less than 1" in p.stderr and "asked -5" in p.stderr
    [(run, results)] = _runs(tmp_path)
    assert run.status == "failed" and results == []
    _stopped_at_the_defaults(run, p.stderr)
    return lines, bad


@pytest.mark.hpcc
def test_bad_hpccinf_value_fails_the_run(hpcc: str, tmp_path: Path) -> None:
    lines, bad = _bad_nb_fails(tmp_path, 1)
    # not a number: refused before hpcc runs (it would crash on it)
    lines[7] = "abc          NBs"
    bad.write_text("\n".join(lines) + "\n")
    p = fabench_run("bench", "hpcc.hpl", "--ranks", "1", f"--kernel-args=--hpccinf {bad}",
                    "--out", str(tmp_path), check=False)
    # a usage error, found where the run is planned: no second run stored
    assert p.returncode == 2 and "line 8 (NB): not a number" in p.stderr
    assert "abc" not in p.stderr  # the file's words are not quoted (issue 31)
    assert len(_runs(tmp_path)) == 1


def _stopped_at_the_defaults(run: object, stderr: str) -> None:
    """hpcc was ended once its output showed HPL's defaults: the output kept with the run
    holds that parameter block and none of the later test sections (hpcc runs PTRANS,
    STREAM, FFT... at the defaults after it, HPL last), and no process of the run is
    left."""
    assert "stopped early" in stderr
    text = run.kernel_meta["hpccoutf"]  # type: ignore[attr-defined]
    assert re.search(r"^NB\s+:\s+80\s*$", text, re.M)
    # RandomAccess, first, may have begun; PTRANS, DGEMM, STREAM, FFT and HPL come after it
    later = re.findall(r"^Begin of (PTRANS|StarDGEMM|StarSTREAM|MPIFFT|HPL|Summary) section",
                       text, re.M)
    assert later == [], later
    left = [pid for pid, (tag, _) in tagged().items() if tag.startswith(f"{os.getpid()}:")
            and _exe(pid).endswith(("hpcc", "mpirun.openmpi", "prterun", "orterun", "prted",
                                    "orted"))]
    assert left == []


@pytest.mark.hpcc
def test_bad_hpccinf_value_stops_two_ranks_early(hpcc: str, tmp_path: Path) -> None:
    _bad_nb_fails(tmp_path, 2)


@pytest.mark.hpcc
def test_reference_blas_is_flagged(hpcc: str, tmp_path: Path) -> None:
    if not (REFERENCE_DIR / "libblas.so.3").is_file():
        missing("the reference BLAS is not installed (libblas3)")
    p = fabench_cli("bench", "hpcc.hpl", "--ranks", "1", "--sizes", "128",
                    f"--kernel-args=--blas {REFERENCE_DIR}", "--out", str(tmp_path))
    assert "FLAG REFERENCE BLAS" in p.stdout
    [(run, results)] = _runs(tmp_path)
    assert run.kernel_meta["blas"]["reference"] is True and results[0].extra["blas"].startswith(
        "reference")


@pytest.mark.hpcc
def test_hpl_nodes_local(hpcc: str, tmp_path: Path) -> None:
    p = fabench_cli("hpl", "nodes", "--sizes", "128", "--ranks-per-node", "1", "--json",
                    "--out", str(tmp_path))
    rep = json.loads(p.stdout)
    assert list(rep["nodes"]) == ["localhost"] and rep["flagged"] == []
    table = tmp_path / "nodes.json"
    table.write_text(p.stdout)
    assert load_node_table(table).median == rep["median"]


@pytest.mark.netns
@pytest.mark.hpcc
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="runs on a root testbed (CI is root)")
def test_hpl_nodes_on_a_testbed(hpcc: str, tmp_path: Path) -> None:
    with own_testbeds(f"fbh{os.getpid() % 100000}"):
        create("nodes", TestbedConfig(hosts=3))
        p = fabench_cli("hpl", "nodes", "--on", "testbed", "nodes", "--sizes", "400",
                        "--ranks-per-node", "1", "--threshold", "0.9", "--out", str(tmp_path))
        # N from memory on three namespaces of one machine at once would overcommit it
        q = fabench_run("hpl", "nodes", "--on", "testbed", "nodes", "--out", str(tmp_path),
                        check=False)
        assert q.returncode == 2 and "one machine" in q.stderr
    lines = p.stdout.splitlines()
    for h in ("h1", "h2", "h3"):
        assert any(ln.split()[:2] == [h, "1"] and ln.rstrip().endswith("ok") for ln in lines)
    assert any(ln.startswith("# 3 of 3 nodes: min") and "CV" in ln for ln in lines)
    runs = _runs(tmp_path)
    assert len(runs) == 3 and all(r.status == "ok" and len(res) == 1 for r, res in runs)
    assert {r.settings["label"] for r, _ in runs} == {"h1", "h2", "h3"}
    assert all(f"node {r.settings['label']}" in r.provenance["launcher"] for r, _ in runs)


@pytest.mark.hpcc
def test_report_hpl_section(hpcc: str, tmp_path: Path) -> None:
    # real runs: two 1-node 1-rank runs (the model's baseline), a 1-node 2-rank run (another
    # peak per node: no prediction) and a node check (its own table, not the baseline)
    for ranks in (1, 1, 2):
        fabench_cli("bench", "hpcc.hpl", "--ranks", str(ranks), "--sizes", "256", "--out",
                    str(tmp_path))
    fabench_cli("hpl", "nodes", "--sizes", "256", "--ranks-per-node", "1", "--out",
                str(tmp_path))
    html = tmp_path / "r" / "report.html"
    fabench_cli("report", "kernel=hpcc.hpl", "--fabric", "tcp-40g", "-o", str(html),
                "--store", str(tmp_path))
    sec = json.loads(html.with_suffix(".json").read_text())["hpl"]
    assert sec["fabric"] == "tcp-40g" and [r["run_id"] for r in sec["runs"]] == [1, 2, 3]
    one, two = [r for r in sec["runs"] if r["grid"] == "1x1"], sec["runs"][2]
    base = sorted(one, key=lambda r: r["efficiency"])[0]
    assert f"run {base['run_id']}: 1 node" in sec["baseline"]
    # at one node the model is the baseline's rate: the baseline run itself has no error
    assert base["model_efficiency"] == pytest.approx(base["efficiency"])
    assert base["model_error"] == pytest.approx(0.0, abs=1e-12)
    assert two["grid"] == "1x2" and two["model_efficiency"] is None
    assert "other ranks per node" in two["no_model"]
    [g] = sec["by_nodes"]
    assert g["nodes"] == 1 and g["runs"] == [1, 2, 3]
    [t] = sec["node_tables"]
    assert list(t["nodes"]) == ["localhost"] and t["results"][0]["run_id"] == 4
    text = html.read_text()
    assert "<h2>HPL</h2>" in text and 'id="hpl-scaling"' in text
    assert "node consistency (campaign 4, fabench hpl nodes)" in text
    assert "nodes (log)" in text and "model (tcp-40g)" in text
    # drawn in a browser: the chart has its measured and model lines, nothing thrown
    dom = browse(html, "--dump-dom")
    assert dom.returncode == 0 and console_errors(dom.stderr) == []
    svg = re.search(r'<svg class="chart" id="hpl-scaling".*?</svg>', dom.stdout, re.S)
    assert svg and svg.group(0).count('class="series"') == 2
    # without a fabric: the measurements, no model
    fabench_cli("report", "kernel=hpcc.hpl", "-o", str(html), "--store", str(tmp_path))
    sec = json.loads(html.with_suffix(".json").read_text())["hpl"]
    assert sec["fabric"] is None and all(r["model_efficiency"] is None for r in sec["runs"])
    assert "model (" not in html.read_text()


def test_scaling_counts_and_sizes() -> None:
    assert node_counts(1) == [1] and node_counts(4) == [1, 2, 4]
    assert node_counts(6) == [1, 2, 4, 6] and node_counts(4, "4,1") == [1, 4]
    with pytest.raises(FabenchError, match="1..2"):
        node_counts(2, "3")
    assert [s.values if s else None for s in sizes_per_count("400,566", [1, 2])] == [
        (400,), (566,)]
    assert sizes_per_count(None, [1, 2]) == [None, None]
    with pytest.raises(FabenchError, match="one per node count"):
        sizes_per_count("400,500", [1, 2, 4])


@pytest.mark.netns
@pytest.mark.hpcc
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="runs on a root testbed (CI is root)")
def test_hpl_scaling_on_a_testbed(hpcc: str, tmp_path: Path) -> None:
    with own_testbeds(f"fbs{os.getpid() % 100000}"):
        create("scale", TestbedConfig(hosts=2))
        p = fabench_cli("hpl", "scaling", "--on", "testbed", "scale", "--sizes", "400",
                        "--fabric", "tcp-40g", "--json", "--out", str(tmp_path))
        q = fabench_run("hpl", "scaling", "--on", "testbed", "scale", "--nodes", "3",
                        "--out", str(tmp_path), check=False)
        assert q.returncode == 2 and "1..2" in q.stderr
    rep = json.loads(p.stdout)
    assert rep["nodes"] == [1, 2] and rep["ranks_per_node"] == 1
    assert "one machine" in rep["notes"][0]
    one, two = rep["runs"]
    assert (one["nodes"], one["grid"], two["nodes"], two["grid"]) == (1, "1x1", 2, "1x2")
    assert rep["baseline"].startswith(f"run {one['run_id']}: 1 node")
    assert one["model_error"] == pytest.approx(0.0, abs=1e-12)
    # the 2-node run crossed the testbed's link: the model adds its alpha and beta terms
    assert 0 < two["model_efficiency"] < one["model_efficiency"]
    assert two["model_error"] == pytest.approx(
        (two["model_efficiency"] - two["efficiency"]) / two["efficiency"])
    runs = _runs(tmp_path)
    assert [r.settings["label"] for r, _ in runs] == ["1 nodes", "2 nodes"]
    assert "nodes h1,h2" in runs[1][0].provenance["launcher"]
    # the campaign's report shows the model without being told the fabric again
    html = tmp_path / "c.html"
    fabench_cli("report", f"c{rep['campaign_id']}", "-o", str(html), "--store", str(tmp_path))
    sec = json.loads(html.with_suffix(".json").read_text())["hpl"]
    assert sec["fabric"] == "tcp-40g" and [g["nodes"] for g in sec["by_nodes"]] == [1, 2]
    assert sec["runs"][1]["model_efficiency"] == pytest.approx(two["model_efficiency"])


# --- application proxies (native/mpi/app.c) -----------------------------------------------

def _app(kernel: str, openmpi: str, tmp_path: Path, *args: str, check: bool = True,
         env: dict[str, str] | None = None) -> tuple[int, list[dict], str]:
    ok, why = kernel_status(get_kernel(kernel))
    if not ok:
        missing(f"{kernel}: {why}")
    # 4-rank grids on a host that may have fewer cores: consent, as a user there would give.
    p = fabench_cli("bench", kernel, *args, "--oversubscribe", "--json", "--out",
                    str(tmp_path), check=check, env=env)
    return p.returncode, [json.loads(ln) for ln in p.stdout.splitlines()], p.stderr


def test_halo3d_grid_faces_and_validation(openmpi: str, tmp_path: Path) -> None:
    for ranks, grid, faces in (("2", "2x1x1", 1), ("4", "2x2x1", 2)):
        _, recs, _ = _app("mpi.halo3d", openmpi, tmp_path, "--ranks", ranks, "--sizes",
                          "1K,16K", "--iterations", "50", "--validate")
        assert [r["size"] for r in recs] == [1024, 16384]
        for r in recs:
            assert r["validated"] is True and r["grid"] == grid and r["faces"] == faces
            assert 0 < r["comm_fraction"] <= 1 and r["compute_us"] == 0
    # the compute phase is inside the step: no step is shorter than it
    _, [r], _ = _app("mpi.halo3d", openmpi, tmp_path, "--ranks", "2", "--sizes", "1K",
                     "--iterations", "20", "--kernel-args=--compute-us 300")
    assert r["compute_us"] == 300 and r["min"] >= 300 and r["comm_fraction"] < 1
    rc, _, err = _app("mpi.halo3d", openmpi, tmp_path, "--ranks", "2", "--sizes", "1K",
                      "--iterations", "5", "--validate", check=False,
                      env={"FABENCH_CORRUPT": "1"})
    assert rc == 1 and "validation mismatch" in err


def test_fft_transposes_and_validation(openmpi: str, tmp_path: Path) -> None:
    _, [r], _ = _app("mpi.fft", openmpi, tmp_path, "--ranks", "4", "--sizes", "64K",
                     "--iterations", "30", "--validate", "--kernel-args=--local-fft")
    assert r["validated"] is True and r["transposes"] == 2 and r["grid"] == "2x2x1"
    assert 0 < r["comm_fraction"] < 1  # the local FFTs take part of the step
    _, [r], _ = _app("mpi.fft", openmpi, tmp_path, "--ranks", "4", "--sizes", "16K",
                     "--iterations", "30", "--validate", "--kernel-args=--dims 2")
    assert r["transposes"] == 1 and r["grid"] == "4x1x1"
    rc, _, err = _app("mpi.fft", openmpi, tmp_path, "--ranks", "4", "--sizes", "1K",
                      "--iterations", "5", "--validate", check=False,
                      env={"FABENCH_CORRUPT": "1"})
    assert rc == 1 and "validation mismatch" in err
    rc, _, err = _app("mpi.fft", openmpi, tmp_path, "--ranks", "3", "--sizes", "1K",
                      "--iterations", "5", check=False)
    [(run, results)] = _runs(tmp_path)
    assert rc == 1 and run.status == "failed" and results == []
    assert "not a multiple of 3 ranks" in (run.stderr_tail or "")


def test_app_model_geometry_and_monotone_predictions() -> None:
    # the grids MPI_Dims_create gives (as the kernels report them: 2x1x1, 2x2x1)
    assert [dims_create(n, 3) for n in (2, 4, 8, 12, 27)] == [
        [2, 1, 1], [2, 2, 1], [2, 2, 2], [3, 2, 2], [3, 3, 3]]
    assert halo_distances(2) == [1] and halo_distances(27) == [9, 9, 3, 3, 1, 1]
    fabric = PRESETS["tcp-40g"]()
    md = Model(fabric, Cluster(4, 1, TopologySpec(kind="single").build(4)))
    t_small, t_big = halo3d_time(md, 1024.0), halo3d_time(md, 1 << 20)
    assert 0 < t_small < t_big and halo3d_time(md, 1024.0, 100.0) == t_small + 100.0
    assert 0 < fft_time(md, 16384.0) < fft_time(md, float(1 << 22))
    # slabs: one all-to-all over every rank
    assert fft_time(md, 65536.0, dims=2) == pytest.approx(alltoall_pairwise(md, 65536.0 / 4))


def test_model_hpl_shares_emulated_nodes_cores() -> None:
    fabric = PRESETS["tcp-40g"]()
    prm = params_from(peak=67.2, efficiency=0.5, mem_gb=0.02, table=None, nb=128)
    shared = replace(prm, cores=2)
    assert hpl_point(fabric, 2, shared).efficiency == hpl_point(fabric, 2, prm).efficiency
    assert hpl_point(fabric, 4, shared).efficiency < hpl_point(fabric, 4, prm).efficiency
