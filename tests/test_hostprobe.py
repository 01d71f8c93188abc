"""The core-to-core probe: a real hand-off between two of this machine's CPUs, recorded with
every local run, and the report's warning when it changed between runs."""

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import fabench_cli, missing
from fabench.analysis.host_load import host_state_warning, load_warning
from fabench.host.native import native_root
from fabench.host.probe import core_to_core, run_core_to_core_ns, sides_differ
from fabench.store.database import Store

two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")


@two_cpus
@pytest.mark.serial  # a hand-off timed while another test loads the CPUs is a tick
def test_probe_measures_a_hand_off() -> None:
    got = core_to_core()
    assert got is not None
    a, b = got["cpus"]
    assert a != b and {a, b} <= os.sched_getaffinity(0)
    # A hand-off is a cache-coherence transaction: tens of ns on one die, hundreds across
    # sockets or under a hypervisor; never zero, never a scheduler tick.
    assert 1.0 < got["best_ns"] <= got["one_way_ns"] < 100_000
    # 20000 asked; fewer only when a busy CPU made it hit its 0.5 s budget (whole batches)
    assert got["round_trips"] in range(100, 20001, 100)


def test_probe_skips_with_one_cpu() -> None:
    exe = native_root() / "bin" / "fb-probe-c2c"
    if not shutil.which("taskset"):
        missing("taskset (util-linux) not installed")
    p = subprocess.run(["taskset", "-c", str(min(os.sched_getaffinity(0))), str(exe)],
                       capture_output=True, text=True, timeout=10, check=False)
    assert p.returncode == 77 and '"type":"skip"' in p.stdout
    bad = subprocess.run([str(exe), "--cpus", "0,0"], capture_output=True, text=True,
                         timeout=10, check=False)
    assert bad.returncode == 2 and "two different CPUs" in bad.stderr
    # and fabench treats "cannot probe here" as no record, not as a failure
    code = "from fabench.host.probe import core_to_core; print(core_to_core())"
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "None"


@two_cpus
def test_local_runs_record_it_and_the_report_warns_on_a_change(openmpi: str,
                                                              tmp_path: Path) -> None:
    for _ in range(2):
        fabench_cli("bench", "mpi.latency", "--sizes", "8", "--iterations", "200", "--out",
                    str(tmp_path))
    with Store(tmp_path / "fabench.sqlite") as st:
        runs = st.runs()
    for r in runs:
        for k in ("core_to_core_start", "core_to_core_end"):
            assert r.provenance[k]["one_way_ns"] > 0
        assert run_core_to_core_ns(r.provenance) is not None
    # Whatever this host did between the two runs, a 4x change must be named and a 1.2x one
    # not: rewrite the second run's probes to both cases.
    base = run_core_to_core_ns(runs[0].provenance) or 0.0

    def at(ns: float) -> list:
        prov = {**runs[1].provenance, "core_to_core_start": {"one_way_ns": ns},
                "core_to_core_end": {"one_way_ns": ns}}
        return [runs[0], dataclasses.replace(runs[1], provenance=prov)]

    html = tmp_path / "r.html"
    fabench_cli("report", "--store", str(tmp_path), "-o", str(html), *[str(r.id) for r in runs])
    text = html.read_text()
    assert "<th>core-to-core (ns)</th>" in text
    assert f"<td>{run_core_to_core_ns(runs[0].provenance):.0f}</td>" in text

    assert host_state_warning(at(1.2 * base)) is None
    w = host_state_warning(at(4 * base))
    assert w is not None and f"slow in runs {runs[1].id};" in w and "1 of 2" in w
    # A simulated or imported run's values are not this host's: its load and state say
    # nothing about them (the warnings box flagged host load for simulated runs: issue 28)
    for launcher, mpi in (("simgrid", "simgrid"), ("import:osu", "openmpi")):
        other = [dataclasses.replace(r, launcher=launcher, mpi=mpi) for r in at(4 * base)]
        assert host_state_warning(other) is None
        loaded = {"loadavg": [64.0, 0, 0]}
        busy = [dataclasses.replace(r, provenance={**r.provenance, "load_start": loaded,
                                                   "load_end": loaded}) for r in other]
        assert load_warning(busy, 2) is None
        assert load_warning([dataclasses.replace(r, launcher="local", mpi="openmpi")
                             for r in busy], 2) is not None


def test_compare_sides_taken_in_different_host_states() -> None:
    def prov(ns: float) -> dict:
        return {"core_to_core_start": {"one_way_ns": ns}, "core_to_core_end": {"one_way_ns": ns}}

    assert sides_differ([prov(60), prov(62)], [prov(70)]) == ""
    note = sides_differ([prov(60), prov(62), prov(240)], [prov(230), prov(240)])
    assert "A's runs saw a core-to-core hand-off of 62 ns, B's 235 ns" in note
    assert sides_differ([prov(60)], [{}]) == ""  # B unprobed (e.g. a Slurm run): no claim
