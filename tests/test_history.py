"""`fabench history`: ten nightly-like campaigns of real MPI runs, a change planted at night 7
(the site's environment starts steering Open MPI onto TCP, as a changed module file would),
and a second series without a change, interleaved with the first so both see the same load."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import fabench_cli, fabench_run
from fabench.analysis.history import Night, detect
from fabench.metrics import Better

SPEC = """\
name: {name}
runs:
  - kernel: [mpi.latency]
    transport: [auto]
    ranks: 2
    sizes: "4K"
    iterations: 300
    warmup: 20
"""

# What a site's module file might start exporting: Open MPI's ob1 over TCP instead of its
# shared-memory default, a change of several times in on-node latency.
PLANTED = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self"}
NIGHTS = 10
CHANGE_AT = 7


def _night(spec: Path, store: Path, out: Path, env: dict[str, str]) -> None:
    # in this process (its environment, the planted one included, is what mpirun inherits):
    # twenty nights without twenty interpreters' start-up
    fabench_run("run", str(spec), "--store", str(store), "--out", str(out), "--no-progress",
                env=env)


@pytest.mark.timing
@pytest.mark.slow
def test_a_change_planted_at_night_7_is_called_there_and_nowhere_else(
        openmpi: str, tmp_path: Path) -> None:
    store = tmp_path / "nightly.sqlite"
    specs = {}
    for name in ("nightly", "control"):
        specs[name] = tmp_path / f"{name}.yaml"
        specs[name].write_text(SPEC.format(name=name))
    if any(k in os.environ for k in PLANTED):
        pytest.skip("the caller's environment already steers Open MPI (OMPI_MCA_pml/btl)")
    for night in range(1, NIGHTS + 1):
        _night(specs["nightly"], store, tmp_path / "out",
               PLANTED if night >= CHANGE_AT else {})
        _night(specs["control"], store, tmp_path / "out", {})
    # campaign ids: nightly night k is 2k - 1, control 2k
    night_id = {k: 2 * k - 1 for k in range(1, NIGHTS + 1)}

    # The tolerance is the policy a series is watched with (docs/history.md). On this shared
    # test host the nightly medians of one configuration at 4 KiB were measured up to 1.6x
    # and 1.9x apart within ten nights without a change (two runs of this test), and the
    # planted change at +315 % and +369 %: changes under 2x are not asked for here.
    tol = ("--tolerance", "1.0")
    proc = fabench_run("history", "nightly", "--store", str(store), "--json", *tol,
                       "--html", str(tmp_path / "trend.html"), check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    h = json.loads(proc.stdout)
    assert h["campaigns"] == [night_id[k] for k in range(1, NIGHTS + 1)]
    assert [s["size"] for s in h["series"]] == [4096]
    for s in h["series"]:
        (ch,) = s["changes"]
        assert ch["kind"] == "regression" and ch["campaign"] == night_id[CHANGE_AT]
        assert ch["standing"] and ch["nights_before"] == CHANGE_AT - 1
        assert ch["ratio_low"] > 1.5 and ch["ratio_low"] <= ch["ratio"] <= ch["ratio_high"]
        assert ch["p_value"] < 0.05
        changed = "\n".join(ch["provenance_changed"])
        assert "environment.OMPI_MCA_btl: (unset) -> \"tcp,self\"" in changed
        assert "environment.OMPI_MCA_pml" in changed
    page = (tmp_path / "trend.html").read_text()
    assert page.count('<svg class="trend"') == 1 and page.count('data-kind="regression"') == 1
    # the report of the newest night carries the series' trend chart, the change marked
    fabench_run("report", f"c{night_id[NIGHTS]}", "--store", str(store), "-o",
                str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Trends</h2>" in page and page.count('<svg class="trend"') == 1
    assert page.count('data-kind="regression"') == 1
    text = fabench_run("history", "nightly", "--store", str(store), *tol, check=False).stdout
    assert f"REGRESSION at c{night_id[CHANGE_AT]}" in text and "changed with it" in text

    # the series as it stood after night 6: nothing to call
    proc = fabench_run("history", "nightly", "--store", str(store), "--json", *tol,
                       "--until", str(night_id[CHANGE_AT - 1]))
    assert all(not s["changes"] for s in json.loads(proc.stdout)["series"])

    # the series without a planted change: nothing called
    proc = fabench_run("history", "control", "--store", str(store), "--json", *tol)
    ctrl = json.loads(proc.stdout)
    assert len(ctrl["campaigns"]) == NIGHTS
    assert all(not s["changes"] for s in ctrl["series"]), ctrl


def test_one_campaign_is_no_history_yet(openmpi: str, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.format(name="once").replace("300", "50").replace('"8,4K"', '"8"'))
    fabench_cli("run", str(spec), "--out", str(tmp_path), "--no-progress")
    proc = fabench_run("history", "once", "--store", str(tmp_path))
    assert "no history yet (1 campaign;" in proc.stdout
    bad = fabench_run("history", "never", "--store", str(tmp_path), check=False)
    assert bad.returncode == 2 and "names there: once" in bad.stderr


def _nights(medians: list[float], rng: np.random.Generator) -> list[Night]:
    out = []
    for i, m in enumerate(medians):
        runs = [m * rng.lognormal(0, 0.05, 200) for _ in range(2)]
        med = float(np.median(np.concatenate(runs)))
        out.append(Night(i + 1, 1000.0 * i, [i], runs, med, med, med))
    return out


def test_detection_calls_a_step_where_it_is_and_noise_nowhere() -> None:
    """The method alone, on series drawn with night-to-night spread of 8 % (lognormal): a step
    of +50 % at night 7 is called in every draw, at night 7 but where noise moved a night
    next to it as far (a night at +3 sigma); a series without one is called in at
    most a few draws of 40 (alpha 0.05, tolerance 10 %)."""
    rng = np.random.default_rng(7)
    false_calls = exact = 0
    for _ in range(40):
        base = list(10.0 * rng.lognormal(0, 0.08, 10))
        step = [v * (1.5 if i >= 6 else 1.0) for i, v in enumerate(base)]
        changes = detect(_nights(step, rng), Better.LOWER, permutations=199)
        (change,) = changes
        assert change.kind == "regression" and abs(change.index - 6) <= 1
        exact += change.index == 6
        assert change.ratio_low > 1.0
        false_calls += bool(detect(_nights(base, rng), Better.LOWER, permutations=199))
    assert false_calls <= 4 and exact >= 38
    # higher is better: the same step down is a regression, up an improvement
    up = detect(_nights([10.0] * 6 + [20.0] * 4, rng), Better.HIGHER, permutations=199)
    assert [c.kind for c in up] == ["improvement"]
