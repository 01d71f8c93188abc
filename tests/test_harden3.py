"""Hardening, round 3 (issue 31): what a root tool must never leak or accept. Each test names
the item it holds; each failed on the code before its fix (the closing note says how)."""

import json
import math
import os
import sqlite3
import uuid
from pathlib import Path

import pytest

from conftest import fabench_cli, fabench_run, missing, own_testbeds, refused
from fabench.host.placement import cpu_count
from fabench.matrix.stored import MatrixStore
from fabench.records import PairRecord
from fabench.store.database import Store

HPCC = Path("/usr/bin/hpcc")




def _needs_hpcc() -> None:
    if not HPCC.exists():
        missing("hpcc not installed (apt-get install hpcc openmpi-bin)")


def _mem_available() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return float(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable")


# --- item 2: a kernel argument never reads a file into the report -------------------------------

@pytest.mark.concurrent
@pytest.mark.hpcc
def test_hpccinf_of_a_secret_file_is_refused_without_a_word_of_it(tmp_path: Path,
                                                                  openmpi: str) -> None:
    """`--hpccinf /etc/shadow` copied a line of it into the stored reason and the reports.
    A file shaped like /etc/shadow (its lines where HPL's numbers would be), readable by root
    only: refused as not an HPL input, nothing of it in the output or the store."""
    _needs_hpcc()
    secret = "S3cr3tHashOnlyRootReads"
    shadow = tmp_path / "shadow"
    shadow.write_text("".join(f"user{i}:$y$j9T${secret}{i}:19000:0:99999:7:::\n"
                              for i in range(40)))
    shadow.chmod(0o600)
    out = tmp_path / "out"
    p = fabench_cli("bench", "hpcc.hpl", "--ranks", "1", "--json", "--out", str(out),
                    "--kernel-args", f"--hpccinf {shadow}", check=False)
    assert "Traceback" not in p.stderr, p.stderr
    assert secret not in p.stdout + p.stderr
    assert "not an HPL input file" in p.stdout + p.stderr, (p.stdout, p.stderr)
    for f in out.iterdir() if out.exists() else []:  # refused where planned: no out/ at all
        assert secret.encode() not in f.read_bytes(), f


def _shadow(tmp_path: Path, first_line: str = "") -> Path:
    shadow = tmp_path / "shadow"
    shadow.write_text(first_line + "".join(f"user{i}:$y$j9T$S3cr3t{i}:19000:0:99999:7:::\n"
                                           for i in range(40)))
    shadow.chmod(0o600)
    return shadow


@pytest.mark.parametrize("how", ["command line", "spec"])
@pytest.mark.parametrize("words", [["--hpccinf", "{shadow}"], ["--program", "/bin/cat"],
                                   ["--program", "{shadow}"], ["--blas", "../../etc"]])
def test_hpcc_kernel_arguments_that_name_files_are_refused_before_anything_runs(
        tmp_path: Path, how: str, words: list[str]) -> None:
    """Found again by bench/hostile_audit.py: `--hpccinf` of a file that is no HPL input was
    refused only once the run had started (exit 1, a campaign and a failed run stored, the
    path in its reason), and `--program` started whatever program it named, as root, from a
    spec's `args:` too. Now both are refused where the run is planned: nothing stored."""
    shadow = _shadow(tmp_path)
    words = [w.replace("{shadow}", str(shadow)) for w in words]
    out = tmp_path / "out"
    if how == "spec":
        spec = tmp_path / "s.yaml"
        spec.write_text("name: x\nruns:\n  - kernel: hpcc.hpl\n    ranks: 1\n"
                        f"    sizes: '200'\n    args: {json.dumps(words)}\n")
        p = fabench_run("run", str(spec), "--no-progress", "--out", str(out), check=False)
    else:
        p = fabench_run("bench", "hpcc.hpl", "--ranks", "1", "--sizes", "200", "--out",
                        str(out), "--kernel-args", " ".join(words), check=False)
    refused(p, words[0])
    assert "S3cr3t" not in p.stdout + p.stderr
    assert not (out / "fabench.sqlite").exists()


@pytest.mark.concurrent
@pytest.mark.hpcc
def test_a_blas_directory_without_a_blas_is_not_run_as_one(tmp_path: Path,
                                                           openmpi: str) -> None:
    """Found by bench/hostile_audit.py: `--blas DIR` (or a file: /etc/shadow) without a
    libblas.so.3 ran hpcc on the host's own BLAS and exited 0, as if DIR had been used."""
    _needs_hpcc()
    p = fabench_run("bench", "hpcc.hpl", "--ranks", "1", "--sizes", "200", "--out",
                    str(tmp_path / "o"), "--kernel-args", f"--blas {tmp_path}", check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    assert "libblas.so.3" in p.stderr, p.stderr


@pytest.mark.parametrize("cmd", [
    ["run", "{f}"], ["accept", "{f}"], ["tune", "check", "--profile", "{f}"],
    ["bench", "tcp.latency", "--on", "hosts", "{f}"],
    ["matrix", "--hosts", "2", "--size", "8K", "--lat-iterations", "10", "--no-retest",
     "--topology", "{f}"],
])
def test_files_that_options_name_are_never_quoted(tmp_path: Path, cmd: list[str]) -> None:
    """Item 2's neighbours, found by bench/hostile_audit.py: a spec, acceptance spec or
    tuning profile that is /etc/shadow had its lines quoted as "unknown key"s, a hostfile
    its line as a refused host name, and a topology file of that shape passed as switches
    and hosts and was stored with the matrix. A word of a user's file is quoted only when
    it is shaped as a key or host name."""
    shadow = _shadow(tmp_path)
    out = tmp_path / "out"
    out_args = [] if cmd[0] == "tune" else ["--out", str(out)]
    p = fabench_run(*[w.replace("{f}", str(shadow)) for w in cmd], *out_args, check=False)
    refused(p)
    assert "unrecognized arguments" not in p.stderr
    assert "S3cr3t" not in p.stdout + p.stderr, p.stderr
    for f in out.rglob("*") if out.exists() else []:
        assert not f.is_file() or b"S3cr3t" not in f.read_bytes(), f


# --- item 3: resources bounded by what the machine has -----------------------------------------

@pytest.mark.concurrent
@pytest.mark.hpcc
def test_hpl_size_is_checked_against_the_nodes_memory_before_hpcc_starts(
        tmp_path: Path, openmpi: str) -> None:
    """An N whose matrix needs twice the node's available memory: refused with the figures
    before hpcc starts (it started, and ran out of memory: "no Summary section")."""
    _needs_hpcc()
    # twice the memory available: malloc refuses it at once, so even a fabench without the
    # check ends quickly ("no Summary section"), with hpcc started
    n = int(math.sqrt(2 * _mem_available() / 8))
    p = fabench_cli("bench", "hpcc.hpl", "--ranks", "1", "--sizes", str(n), "--json",
                    "--out", str(tmp_path / "o"), check=False, timeout=300)
    assert "Traceback" not in p.stderr, p.stderr
    assert "MemAvailable" in p.stdout + p.stderr, (p.stdout, p.stderr)
    with Store(tmp_path / "o" / "fabench.sqlite") as st:
        [run] = st.runs()
        assert run.status == "failed" and not run.command, (run.status, run.command)
    q = fabench_cli("hpl", "nodes", "--sizes", str(n), "--ranks-per-node", "1", "--json",
                    "--out", str(tmp_path / "n"), check=False, timeout=300)
    assert "Traceback" not in q.stderr and "MemAvailable" in q.stdout + q.stderr, q.stdout


@pytest.mark.concurrent
@pytest.mark.hpcc
def test_ranks_per_node_follows_the_slot_rule(tmp_path: Path, openmpi: str) -> None:
    _needs_hpcc()
    p = fabench_cli("hpl", "nodes", "--sizes", "200", "--ranks-per-node",
                    str(cpu_count() + 1), "--out", str(tmp_path), check=False)
    refused(p, "slots", "--oversubscribe")
    assert not (tmp_path / "fabench.sqlite").exists() or not Store(
        tmp_path / "fabench.sqlite").campaigns()


@pytest.mark.parametrize(("args", "words"), [
    (["model", "predict", "-f", "tcp-40g", "-N", "1000000000"], ["--nodes", "200,000"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "100000", "--ppn", "1000"],
     ["10,000,000 ranks"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "8", "--ppn", "0"], ["--ppn"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "1000000000000000000"], ["200,000"]),
    (["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "1000000000"], ["65,536"]),
    (["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "1024", "--ppn", "1024"], ["65,536"]),
])
def test_model_and_simulator_state_their_scale(tmp_path: Path, args: list[str],
                                               words: list[str]) -> None:
    """`sim -N 1e9` and `model predict -N 1e9` grew until killed."""
    refused(fabench_run(*args, "--out", str(tmp_path), check=False, timeout=120), *words)


@pytest.mark.parametrize(("args", "words"), [
    (["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2", "--cores", "0"], ["--cores"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "4", "--cores", "-3"], ["--cores"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "4", "--band-samples", "1000000000"],
     ["--band-samples", "10,000"]),
    (["model", "validate", "--published", "--band-samples", "1000000000"],
     ["--band-samples"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "4", "--topology", "torus", "--dims",
      "100000x100000x100000"], ["--dims", "200,000"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "4", "--hosts-per-leaf", "1000000000"],
     ["--hosts-per-leaf"]),
])
def test_model_and_simulator_bound_their_other_counts(tmp_path: Path, args: list[str],
                                                      words: list[str]) -> None:
    """Found by bench/hostile_audit.py: `--cores 0` ran as if not given (a negative count
    ran too), `--band-samples 1e9` ran a model per sample until killed, a 1e15-node torus
    and a 1e9-port leaf were taken for a 4-node question."""
    refused(fabench_run(*args, "--out", str(tmp_path), check=False), *words)


@pytest.mark.parametrize(("args", "words"), [
    (["matrix", "--hosts", "1000000"], ["--hosts", "4,096"]),
    (["matrix", "--hosts", "2", "--groups", "1000000000"], ["--groups"]),
    (["matrix", "--hosts", "2", "--iterations", "1000000000000"], ["--iterations"]),
    (["run", "--quick", "--repeats", "1000000000000"], ["--repeats", "10,000"]),
    (["run", "--quick", "--repeats", "-5"], ["--repeats"]),
    (["bench", "tcp.latency", "--sizes", "8", "--warmup", "1000000000000"], ["--warmup"]),
    (["bench", "tcp.latency", "--sizes", "8", "--iterations", "1000000000000"],
     ["--iterations"]),
    (["model", "validate", "--published", "-N", "1000000000000000000"], ["--nodes"]),
    (["model", "hpl", "-f", "tcp-40g", "-N", "2,x", "--node-gflops", "1", "--mem-gb", "1",
      "--efficiency-1node", "0.8"], ["--nodes"]),
])
def test_counts_beyond_what_can_run_are_refused_up_front(tmp_path: Path, args: list[str],
                                                         words: list[str]) -> None:
    """Found by bench/hostile_audit.py: `matrix --hosts 1e6` and `run --repeats 1e12` (or a
    spec's `repeats:`) hung building their lists of directions and runs; `--iterations 1e12`
    started the kernels, which ran out of memory for the samples, and `--warmup 1e12` ran
    until the timeout; `--repeats -5` planned nothing and exited 0."""
    refused(fabench_run(*args, "--out", str(tmp_path), check=False), *words)


def test_a_spec_with_a_trillion_repeats_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("name: x\nrepeats: 1000000000000\nruns:\n  - kernel: tcp.latency\n")
    refused(fabench_run("run", str(spec), "--out", str(tmp_path), check=False), "repeats")


# --- item 4: a damaged store never overwrites its good backup ------------------------------------

OSU = Path(__file__).parent / "fixtures" / "import" / "osu_latency_z.txt"


def test_a_changed_sample_byte_is_refused_and_the_good_backup_kept(tmp_path: Path) -> None:
    fabench_run("import", "osu", str(OSU), "--store", str(tmp_path))
    fabench_run("import", "osu", str(OSU), "--store", str(tmp_path))  # backup of the first
    db_path, bak = tmp_path / "fabench.sqlite", tmp_path / "fabench.sqlite.bak"
    good = bak.read_bytes()
    db = sqlite3.connect(db_path)
    rid, data = db.execute("SELECT result_id, data FROM samples LIMIT 1").fetchone()
    db.execute("UPDATE samples SET data = ? WHERE result_id = ?",
               (bytes([data[0] ^ 0xFF]) + data[1:], rid))
    db.commit()
    db.close()
    p = fabench_run("import", "osu", str(OSU), "--store", str(tmp_path), check=False)
    refused(p, "damaged")
    assert bak.read_bytes() == good
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT count(*) FROM campaigns").fetchone()[0] == 2  # nothing added
    db.close()


def test_a_dropped_samples_table_is_found_before_resume_runs_anything(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("name: r\nrepeats: 4\nruns:\n  - kernel: tcp.latency\n    sizes: '8'\n"
                    "    iterations: 20\n")
    with Store(tmp_path / "fabench.sqlite") as st:
        cid = st.begin_campaign("r", {})
        st.end_campaign(cid, "interrupted")
    db = sqlite3.connect(tmp_path / "fabench.sqlite")
    db.execute("DROP TABLE samples")
    db.commit()
    db.close()
    p = fabench_run("run", str(spec), "--resume", "--out", str(tmp_path), check=False)
    refused(p, "samples")
    db = sqlite3.connect(tmp_path / "fabench.sqlite")
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # no job ran
    db.close()


@pytest.mark.parametrize("cmd", [["import", "osu", str(OSU)], ["store", "check"],
                                 ["history", "x"]])
def test_a_postgresql_url_python_cannot_split_is_refused(cmd: list[str]) -> None:
    """Found by bench/hostile_audit.py: `--store postgresql://[::1/x` was a ValueError
    traceback (urlsplit, before the connection was tried) in every command."""
    refused(fabench_run(*cmd, "--store", "postgresql://[::1/x", check=False), "--store")


# --- item 5: a healthy matrix store checks sound ------------------------------------------------

def test_store_check_passes_a_healthy_matrix_store(tmp_path: Path) -> None:
    """A matrix pass keeps its measurements as pairs: `store check` exited 3 on every matrix
    store ("run(s) marked ok hold no result")."""
    with MatrixStore(tmp_path / "fabench.sqlite") as st:
        cid = st.begin_campaign("matrix", {})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="matrix.tcp", transport="tcp",
                           mpi="none", ranks=2, launcher="testbed", repeat=0, settings={})
        for a, b in ((0, 1), (1, 0)):
            st.add_matrix_pair(rid, PairRecord(a, b, f"h{a + 1}", f"h{b + 1}", 0, "isolated",
                                               65536, 8, 65536.0, [5.0, 5.1], [50.0, 51.0]))
        st.finish_run(rid, status="ok")
        st.save_matrix(cid, ["h1", "h2"], {"verdicts": []})
        st.end_campaign(cid, "finished")
    p = fabench_run("store", "check", "--store", str(tmp_path), check=False)
    assert p.returncode == 0, p.stdout + p.stderr


# --- item 6: input bugs -----------------------------------------------------------------------

AGENT = "#!/bin/sh\nshift\nexec \"$@\"\n"  # runs the command here, whatever the host's name


@pytest.mark.parametrize("hosts", ["localhost\nlocalhost\n", "localhost\nLOCALHOST\n"])
def test_matrix_refuses_a_host_listed_twice(tmp_path: Path, hosts: str) -> None:
    """(The second spelling found by bench/hostile_audit.py: names differing in case only
    are one machine, and were measured as a link.)"""
    hostfile = tmp_path / "hosts"
    hostfile.write_text(hosts)
    agent = tmp_path / "agent"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    p = fabench_run("matrix", "--kernel", "tcp", "--on", "hosts", str(hostfile), "--out",
                    str(tmp_path), check=False, env={"FABENCH_RSH_AGENT": str(agent)})
    refused(p, "localhost", "more than once")
    if (tmp_path / "fabench.sqlite").exists():
        with Store(tmp_path / "fabench.sqlite") as st:
            assert [c["status"] for c in st.campaigns()] == []


def test_matrix_refuses_empty_pairs(tmp_path: Path) -> None:
    """`--pairs ''` measured every pair."""
    refused(fabench_run("matrix", "--pairs", "", "--hosts", "2", "--out", str(tmp_path),
                        check=False, timeout=120), "--pairs")


@pytest.mark.concurrent
@pytest.mark.netns
def test_matrix_pairs_by_host_name_on_a_testbed(tmp_path: Path) -> None:
    """The documented `--pairs h1:h2` was refused on a testbed."""
    with own_testbeds("fbpn" + uuid.uuid4().hex[:4]):
        fabench_cli("testbed", "up", "--name", "pn", "--hosts", "3")
        p = fabench_cli("matrix", "--on", "testbed", "pn", "--kernel", "tcp", "--pairs",
                        "h1:h2", "--size", "64K", "--lat-iterations", "20", "--no-retest",
                        "--json", "--out", str(tmp_path), check=False, timeout=300)
        assert p.returncode in (0, 3), p.stderr
        assert len(json.loads(p.stdout)["latency_us"]) == 1, p.stdout
        fabench_cli("testbed", "down", "pn")


@pytest.mark.parametrize("cmd", [
    ["matrix", "--hosts", "2", "--pairs", "\u00b2:0"],
    ["matrix", "--hosts", "2", "--pairs", "0:1,0:1"],
    ["run", "--resume", "\u00b2"],
    ["accept", "{d}/a.yaml", "--baseline", "\u00b2"],
    ["bench", "tcp.latency", "--sizes", "8", "--on", "hosts", "{d}/hosts"],
])
def test_numbers_that_are_digits_only_to_unicode_are_refused(tmp_path: Path,
                                                              cmd: list[str]) -> None:
    """Found by bench/hostile_audit.py: str.isdigit() takes '\u00b2' (superscript two) as a
    digit and int() does not: `--pairs \u00b2:0`, `run --resume \u00b2`, `accept --baseline
    \u00b2` and a hostfile's `slots=\u00b2` were ValueError tracebacks; a direction given twice
    in --pairs was measured twice."""
    (tmp_path / "a.yaml").write_text("name: a\nchecks:\n  - kernel: tcp.latency\n")
    (tmp_path / "hosts").write_text("localhost slots=\u00b2\n")
    refused(fabench_run(*[w.replace("{d}", str(tmp_path)) for w in cmd], "--out",
                        str(tmp_path / "o"), check=False))


def test_an_import_that_keeps_no_row_fails(tmp_path: Path) -> None:
    bad = tmp_path / "osu.txt"
    bad.write_text("# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n"
                   "8   -1.0\n16  nan\n")
    p = fabench_run("import", "osu", str(bad), "--store", str(tmp_path), check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    if (tmp_path / "fabench.sqlite").exists():
        with Store(tmp_path / "fabench.sqlite") as st:
            assert st.runs() == []


# (1e999 and nan were refused before the fix too: they showed nothing of the item)
@pytest.mark.parametrize("value", ["1e300", "9.3e9", "1e10", "3e6"])
def test_timeouts_beyond_any_run_are_refused(tmp_path: Path, value: str) -> None:
    """A timeout above 9.2e9 s crashed the watchdog thread and the run went on without one."""
    refused(fabench_run("bench", "tcp.latency", "--sizes", "8", "--iterations", "10",
                        "--timeout", value, "--out", str(tmp_path), check=False), "--timeout")


@pytest.mark.parametrize("extra", [
    ["--latency-us", "nan"], ["--latency-us", "1e999"], ["--bandwidth-MBps", "inf"],
    ["--bandwidth-MBps", "5000:inf"], ["--shm-MBps", "0"], ["--gamma-MBps", "0"],
    ["--shm-latency-us", "1e999"], ["--hop-latency-us", "nan"], ["--rendezvous-us", "inf"],
    ["--link-MBps", "-5"], ["--link-MBps", "inf"], ["--link-MBps", "nan"],
    ["--eager-limit", "-1"], ["--hops", "-3"],
])
def test_model_define_refuses_values_that_are_no_figures(tmp_path: Path,
                                                        extra: list[str]) -> None:
    args = {"--latency-us": "1.5", "--bandwidth-MBps": "5000"}
    i = 0
    while i < len(extra):
        args[extra[i]] = extra[i + 1]
        i += 2
    words = [w for k, v in args.items() for w in (k, v)]
    p = fabench_run("model", "define", "mine", "--family", "ib", *words, "--out",
                    str(tmp_path), check=False)
    refused(p)
    assert not list(tmp_path.rglob("mine.json"))


@pytest.mark.parametrize(("args", "words"), [
    (["model", "define", "mine", "--family", "ib", "--latency-us", "1", "--bandwidth-MBps",
      "10", "--hops", "0"], ["--hops"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "2", "--switch-reduce-us", "nan"],
     ["--switch-reduce-us"]),
    (["model", "predict", "-f", "tcp-40g", "-N", "2", "--oversubscription", "nan"],
     ["--oversubscription"]),
])
def test_model_refuses_hops_and_ratios_that_are_no_figures(tmp_path: Path, args: list[str],
                                                            words: list[str]) -> None:
    """Found by bench/hostile_audit.py: `--hops 0` was written into a fabric, and
    `--switch-reduce-us nan` and `--oversubscription nan` were predicted from."""
    refused(fabench_run(*args, "--out", str(tmp_path), check=False), *words)


def test_model_define_refuses_a_presets_name(tmp_path: Path) -> None:
    p = fabench_run("model", "define", "tcp-40g", "--family", "tcp", "--latency-us", "1",
                    "--bandwidth-MBps", "10", "--out", str(tmp_path), check=False)
    refused(p, "preset")
    shown = fabench_run("model", "show", "tcp-40g", "--out", str(tmp_path))
    assert "10 MB/s" not in shown.stdout


@pytest.mark.parametrize("cmd", [
    ["model", "validate", "999", "-f", "tcp-40g"],
    ["model", "hpl", "-f", "tcp-40g", "--from-run", "999", "-N", "2"],
])
def test_unknown_run_ids_are_errors(tmp_path: Path, cmd: list[str]) -> None:
    with Store(tmp_path / "fabench.sqlite"):
        pass
    refused(fabench_run(*cmd, "--out", str(tmp_path), check=False), "no run 999")


def test_testbed_name_ending_in_a_newline_is_refused() -> None:
    prefix = "fbnl" + uuid.uuid4().hex[:3]
    with own_testbeds(prefix):
        refused(fabench_run("testbed", "up", "--name", "x\n", "--hosts", "2", check=False,
                            timeout=120), "name")


def test_resume_without_an_id_finds_the_older_unfinished_campaign(tmp_path: Path) -> None:
    with Store(tmp_path / "fabench.sqlite") as st:
        old = st.begin_campaign("nightly", {})
        st.end_campaign(old, "interrupted")
        new = st.begin_campaign("nightly", {})
        st.end_campaign(new, "finished")
        assert st.unfinished_campaign(name="nightly").id == old


@pytest.mark.parametrize("cmd", [["run", "{f}"], ["accept", "{f}"],
                                 ["tune", "check", "--profile", "{f}"]])
def test_a_yaml_number_of_thousands_of_digits_is_refused(tmp_path: Path,
                                                          cmd: list[str]) -> None:
    """Found by bench/hostile_audit.py: a 5,000-digit integer in a spec, acceptance spec or
    tuning profile was a ValueError traceback (Python's int() digit limit, in the loader)."""
    f = tmp_path / "s.yaml"
    f.write_text("name: x\nrepeats: " + "9" * 5000 + "\n")
    refused(fabench_run(*[w.replace("{f}", str(f)) for w in cmd], check=False), "too long")


def test_a_deeply_nested_iperf3_file_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused(fabench_run("import", "iperf3", str(deep), "--store", str(tmp_path),
                        check=False), "deep")
    assert os.path.exists(deep)


# --- found by this round's own audit of the commands (closing note: before/after) ------------

def test_an_acceptance_check_with_a_bad_transport_is_refused_before_measuring(
        tmp_path: Path) -> None:
    """It ran every other check and then failed the acceptance (exit 3), as if the cluster
    had failed, for a typo in the spec."""
    spec = tmp_path / "a.yaml"
    spec.write_text("checks:\n - check: 'latency_us <= 1 @ 8'\n   transport: ';id'\n")
    refused(fabench_run("accept", str(spec), "--out", str(tmp_path / "out"), check=False),
            "line 2", "transport ';id'")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("cmd", ["run", "accept"])
def test_a_name_with_control_characters_is_refused(tmp_path: Path, cmd: str) -> None:
    """An escape sequence in a campaign's name reached the terminal of whoever ran `history`
    or read the report; a newline forged a line of output."""
    spec = tmp_path / "s.yaml"
    body = ("runs:\n  - kernel: mpi.latency\n    sizes: '8'\n" if cmd == "run"
            else "checks: ['latency_us <= 1000 @ 8']\n")
    spec.write_text('name: "nightly\\x1b[2J\\nfake: ok"\n' + body)
    refused(fabench_run(cmd, str(spec), "--out", str(tmp_path / "out"), check=False),
            "name", "control character")


def test_an_iface_pattern_that_matches_nothing_is_refused() -> None:
    """`tune check/apply/ab --iface` with a pattern that matched no interface left the
    interface settings out and exited 0."""
    refused(fabench_run("tune", "check", "--profile", "tcp-throughput", "--iface", "zz$(id)",
                        check=False), "matches no interface")


@pytest.mark.parametrize("argv", [["store", "check", "--store", "a" * 300],
                                  ["testbed", "down", "a" * 300],
                                  ["tune", "check", "--profile", "a" * 300]])
def test_a_name_too_long_for_the_filesystem_is_an_error_not_a_traceback(argv: list[str]
                                                                        ) -> None:
    proc = fabench_run(*argv, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "too long" in proc.stderr + proc.stdout, (proc.stdout, proc.stderr)


@pytest.mark.parametrize("sub", ["down", "status"])
def test_testbed_down_and_status_take_the_name_as_up_does(sub: str) -> None:
    """`testbed up --name X` made it; `testbed down --name X` was a usage error (down and
    status took the name as an operand only): both spellings now name the same testbed."""
    name = "fbnm" + uuid.uuid4().hex[:6]  # made by nobody: refused by name either way
    for argv in (["--name", name], [name]):
        proc = fabench_run("testbed", sub, *argv, check=False)
        assert proc.returncode == 2 and f"no testbed named {name!r}" in proc.stderr, \
            (argv, proc.stderr)


@pytest.mark.parametrize(("text", "words"), [
    ("localhost\nlocalhost\n", ["line 2", "more than once", "slots="]),
    ("localhost\nLocalHost slots=2\n", ["line 2", "more than once"]),
    ("localhost slots=1000000000000\n", ["line 1", "slots=1000000000000", "65,536"]),
    ("localhost slots=0\n", ["line 1", "slots=0"]),
])
def test_hostfile_duplicates_and_slots_refused_for_every_command(tmp_path: Path, text: str,
                                                                  words: list[str]) -> None:
    """hpl nodes ran a duplicated host as two nodes (and went on to ssh); slots=1e12 was taken
    as given. The hostfile's parser refuses both, so every command that reads one does."""
    hostfile = tmp_path / "hosts"
    hostfile.write_text(text)
    for argv in (["hpl", "nodes", "--on", "hosts", str(hostfile), "--sizes", "1000"],
                 ["bench", "mpi.latency", "--on", "hosts", str(hostfile), "--sizes", "8"]):
        p = fabench_run(*argv, "--out", str(tmp_path / "out"), check=False)
        refused(p, *words)
        assert not (tmp_path / "out" / "fabench.sqlite").exists() or not \
            Store(tmp_path / "out" / "fabench.sqlite").campaigns()


def test_a_refused_timeout_stores_no_campaign(tmp_path: Path) -> None:
    """diagnose stored its campaign `running`, then the plan refused --timeout 1e300: the
    value is checked as it is read now, for every command that takes one."""
    for argv in (["diagnose", "transports"], ["diagnose", "reorder"], ["matrix", "--hosts", "2"],
                 ["bench", "tcp.latency"], ["sim", "mpi.allreduce", "--fabric", "roce-100g",
                                            "--nodes", "2"], ["hpl", "nodes"],
                 ["hpl", "scaling", "--nodes", "1"], ["congestion"]):
        p = fabench_run(*argv, "--timeout", "1e300", "--out", str(tmp_path), check=False)
        refused(p, "--timeout", "30 days")
        assert not (tmp_path / "fabench.sqlite").exists(), argv


def test_model_define_source_is_a_label(tmp_path: Path) -> None:
    p = fabench_run("model", "define", "x", "--family", "ib", "--latency-us", "1",
                    "--bandwidth-MBps", "1000", "--source", "a\nsee line 2",
                    "--out", str(tmp_path), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--source: control character" in p.stderr, p.stderr
    assert not (tmp_path / "fabrics").exists()


def test_import_of_a_fifo_is_refused_not_a_hang(tmp_path: Path) -> None:
    """bench/hostile_audit.py: `import osu FIFO` (and imb, iperf3) blocked for ever in read."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for tool in ("osu", "imb", "iperf3"):
        p = fabench_run("import", tool, str(fifo), "--store", str(tmp_path / "s.sqlite"),
                        check=False, timeout=60)
        refused(p, "not a regular file")
    p = fabench_run("run", str(fifo), "--out", str(tmp_path), check=False, timeout=60)
    refused(p, "not a regular file")


def test_model_define_refuses_a_latency_below_a_nanosecond(tmp_path: Path) -> None:
    refused(fabench_run("model", "define", "x", "--family", "ib", "--latency-us", "1e-300",
                        "--bandwidth-MBps", "1000", "--out", str(tmp_path), check=False),
            "--latency-us", "1 ns")
