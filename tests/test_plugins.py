"""Plugins from outside fabench's source: a scheduler, a starter, an importer and a transport
kernel defined in tests/plugins/ (loaded with FABENCH_PLUGINS, as a site would), each used
through the CLI as a user would; and a broken plugin named, never skipped."""

import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT, fabench_cli
from fabench.matrix.stored import MatrixStore
from fabench.store.database import Store

PLUGINS = ROOT / "tests" / "plugins"


def plugin_env(module: str = "fbdemo_plugins") -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))
    return {"FABENCH_PLUGINS": module, "PYTHONPATH": path}


def test_doctor_lists_every_kind_with_the_site_plugins() -> None:
    p = fabench_cli("doctor", "--json", env=plugin_env())
    plugins = {c["name"]: c["detail"] for c in json.loads(p.stdout) if c["section"] == "Plugins"}
    assert set(plugins) == {"kernels", "schedulers", "starters", "MPI flavours", "importers",
                            "tune targets", "commands"}
    assert "py.echo (fbdemo_plugins)" in plugins["kernels"]
    assert "onehost (fbdemo_plugins)" in plugins["schedulers"]
    assert "nice-mpirun (fbdemo_plugins)" in plugins["starters"]
    assert "csvlat (fbdemo_plugins)" in plugins["importers"]
    assert "mpirun" in plugins["starters"] and "slurm" in plugins["schedulers"]


def test_site_scheduler_and_starter_run_an_mpi_kernel(openmpi: str, tmp_path: Path) -> None:
    p = fabench_cli("bench", "mpi.latency", "--on", "onehost", "--sizes", "8",
                    "--iterations", "50", "--out", str(tmp_path), env=plugin_env())
    assert "on=onehost" in p.stdout and "started by the nice-mpirun demo starter" in p.stdout
    with Store(tmp_path / "fabench.sqlite") as st:
        (run,) = st.runs()
    assert run.launcher == "onehost" and run.provenance["starter"] == "nice-mpirun"
    assert run.command.startswith("nice -n 5 ")


def test_site_transport_kernel_runs_through_the_pair_starter(tmp_path: Path) -> None:
    p = fabench_cli("bench", "py.echo", "--sizes", "8,64", "--iterations", "20", "--json",
                    "--out", str(tmp_path), env=plugin_env())
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["size"] for r in rows] == [8, 64]
    assert all(r["status"] == "ok" and r["selected_transport"] == "python-tcp" for r in rows)
    assert all(r["n"] == 20 and r["median"] > 0 for r in rows)


def test_site_scheduler_offering_hosts_carries_a_pair_matrix(tmp_path: Path) -> None:
    """A matrix spreads one process per host: it asks the scheduler for its hosts and how to
    start a process on one (Scheduler.host_names/host_exec), so the site's `loopbacks`
    scheduler (three hosts, one loopback address each) carries real tcp.latency and tcp.bw
    pair jobs between every ordered pair, as a testbed or a hostfile would."""
    p = fabench_cli("matrix", "--kernel", "tcp", "--on", "loopbacks", "3", "--size", "64K",
                    "--iterations", "2", "--lat-iterations", "50", "--json",
                    "--out", str(tmp_path), env=plugin_env(), check=False, timeout=600)
    assert p.returncode in (0, 3), p.stdout + p.stderr  # 3: a verdict (the host is shared)
    j = json.loads(p.stdout)
    assert j["hosts"] == ["lo2", "lo3", "lo4"]
    assert len(j["latency_us"]) == 6  # every ordered pair measured
    with MatrixStore(tmp_path / "fabench.sqlite") as st:
        run = st.runs(j["campaign_id"])[0]
        pairs = st.matrix_pairs(run.id)
    assert run.launcher == "loopbacks" and run.status == "ok"
    assert {(x.src_host, x.dst_host) for x in pairs} == {
        (a, b) for a in ("lo2", "lo3", "lo4") for b in ("lo2", "lo3", "lo4") if a != b}
    assert "127.0.0.3" in (run.command or "") or "127.0.0.4" in (run.command or "")


def test_site_importer(tmp_path: Path) -> None:
    f = tmp_path / "lat.csv"
    f.write_text("# size,us\n8,1.5\n1024,3.25\n")
    fabench_cli("import", "csvlat", str(f), "--out", str(tmp_path), env=plugin_env())
    with Store(tmp_path / "fabench.sqlite") as st:
        (run,) = st.runs()
        got = [(r.size, r.times) for r in st.results(run.id)]
    assert run.kernel == "mpi.latency" and got == [(8, [1.5]), (1024, [3.25])]


def test_a_broken_plugin_is_named_not_skipped(tmp_path: Path) -> None:
    p = fabench_cli("bench", "mpi.latency", "--out", str(tmp_path), check=False,
                    env=plugin_env("fbdemo_broken"))
    assert p.returncode == 2 and "fbdemo_broken" in p.stderr and "no_such_name" in p.stderr
    assert "Traceback" not in p.stderr
    p = fabench_cli("doctor", env=plugin_env("fbdemo_broken"), check=False)
    assert "fbdemo_broken" in p.stdout


def test_site_collective(openmpi: str, tmp_path: Path) -> None:
    """A collective outside fabench's source: one engine row in a C file of its own, compiled
    against the collective engine, registered by a plugin, run through the CLI."""
    exe = tmp_path / "site-scan"
    src = ROOT / "native"
    build = subprocess.run(
        ["mpicc.openmpi", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
         "-D_POSIX_C_SOURCE=200809L", '-DFB_MPI_FLAVOUR="openmpi"', f"-I{src / 'mpi'}",
         f"-I{src / 'common'}", str(PLUGINS / "site_scan.c"), str(src / "mpi" / "coll.c"),
         str(src / "mpi" / "fb_mpi_common.c"), *map(str, sorted((src / "common").glob("*.c"))),
         "-lm", "-o", str(exe)], capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr
    env = {**plugin_env("fbdemo_collective"), "FBDEMO_SCAN_EXE": str(exe)}
    p = fabench_cli("bench", "site.scan", "--ranks", "2", "--sizes", "4,1K", "--iterations",
                    "20", "--json", "--out", str(tmp_path), env=env)
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["size"] for r in rows] == [4, 1024]
    assert all(r["status"] == "ok" and r["n"] == 20 and r["median"] > 0 for r in rows)
    assert all(r["median_rank_mean"] is not None and r["datatype"] == "MPI_FLOAT" for r in rows)


SLOW_PACKAGE = {
    "__init__.py": ('from fabench.util.registry import Registry\n'
                    'REG = Registry("slowthing", __name__)\n'),
    # a plugin module that takes a moment to import, as one that loads a library does
    "slow.py": "import time\ntime.sleep(0.3)\nfrom . import REG\nREG.add('it', 1)\n",
}


def test_registry_loaded_from_threads_at_once_is_complete_in_each(tmp_path: Path) -> None:
    """The first use of a registry from several threads at once (a matrix's pair jobs of one
    round): each thread waits for the load another started, none sees it half done."""
    import importlib
    import sys
    import threading

    from fabench.util import registry

    pkg = tmp_path / "fbslowplug"
    pkg.mkdir()
    for name, text in SLOW_PACKAGE.items():
        (pkg / name).write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        reg = importlib.import_module("fbslowplug").REG
        got: list[object] = []

        def use() -> None:
            try:
                got.append(reg.get("it"))
            except Exception as exc:  # noqa: BLE001 - the failure is the result
                got.append(exc)

        threads = [threading.Thread(target=use) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert got == [1] * 6
    finally:
        sys.path.remove(str(tmp_path))
        for m in [m for m in sys.modules if m.startswith("fbslowplug")]:
            mod = sys.modules.pop(m)
            if m == "fbslowplug":  # its registry is not listed among fabench's kinds later
                registry._ALL.remove(mod.REG)
