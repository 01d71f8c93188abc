"""Issue 31's audit, as a hostile user would run it: every case is a real `fabench` command
line (a subprocess, the installed package), on files and stores this script makes and damages
in a temporary directory. Per class it counts the cases, the clean refusals (exit 2, one
`fabench: error:` line, no traceback), the crashes (a traceback, another exit status, a hang)
and the wrong successes (exit 0 on input that must be refused, or a check after the command
that fails: a secret in the output, a good backup overwritten, a benchmark run on a damaged
store). Cases that must succeed (`store check` on a healthy store) count as passed or failed.

    .venv/bin/python bench/hostile_audit.py [--only CLASS ...] [--fabench PATH] [-v]

Each case runs in a fork of this process (fabench imported once), or under --fabench PROGRAM.

Exit status: 0 when no case crashed or wrongly succeeded, 1 otherwise. Nothing here needs the
network or a testbed: cases that would make one use names no other run uses and are cleaned up
by `testbed down` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fabench.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
OSU = ROOT / "tests" / "fixtures" / "import" / "osu_latency_z.txt"
IMB = ROOT / "tests" / "fixtures" / "import" / "imb_mpi1.txt"
SECRET = "S3cr3tOnlyRootReads"

Check = Callable[[Path, subprocess.CompletedProcess[str]], str | None]


@dataclass
class Case:
    cls: str
    name: str
    argv: Sequence[str]  # "{d}" is the case's own directory
    expect: str = "refuse"  # refuse | ok
    setup: Callable[[Path], None] | None = None
    check: Check | None = None  # a failure's words, None when it holds
    words: Sequence[str] = ()  # the refusal must say these
    timeout: float = 120.0
    env: dict[str, str] = field(default_factory=dict)


# --- files and stores the cases start from ---------------------------------------------------

def _write(rel: str, text: str | bytes, mode: int | None = None) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text.replace(b"{d}", str(d).encode()))
        else:
            p.write_text(text.replace("{d}", str(d)))
        if mode is not None:
            p.chmod(mode)
    return make


def _both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        for s in steps:
            s(d)
    return make


def invoke(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """fabench ARGV as a process of its own: with --fabench, that program; else a fork of this
    one, which has fabench imported already (a case then costs its own work, not a second of
    interpreter start and imports). The fork is fabench's process as the program's would be:
    its own stdio, cwd and environment, its exit status, a traceback on its stderr."""
    if FABENCH:
        return subprocess.run([*FABENCH, *argv], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=env, errors="replace",
                              stdin=subprocess.DEVNULL)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                os.setsid()  # its own group: a timeout ends what it started too
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the fd outlives us
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - the fd outlives us
                os.chdir(cwd)
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                sys.argv = ["fabench", *argv]
                try:
                    code = cli_main(list(argv))
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None
                                                                       else 1)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)  # the group the child made: its own work
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(["fabench", *argv], timeout)
            time.sleep(0.05)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(["fabench", *argv], code,
                                           out.read().decode("utf-8", "replace"),
                                           err.read().decode("utf-8", "replace"))


def _fabench(d: Path, *argv: str) -> None:
    p = invoke(list(argv), d, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"fabench {' '.join(argv[:3])}: exit {p.returncode}: "
                           f"{p.stderr[-300:]}")


def _healthy_store(d: Path) -> None:
    """Two imports: a store and its backup (the second import backs up the first)."""
    (d / "s").mkdir(exist_ok=True)
    _fabench(d, "import", "osu", str(OSU), "--store", str(d / "s"))
    _fabench(d, "import", "osu", str(OSU), "--store", str(d / "s"))


def _sql(*statements: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        _healthy_store(d)
        db = sqlite3.connect(d / "s" / "fabench.sqlite")
        for s in statements:
            db.execute(s)
        db.commit()
        db.close()
    return make


def _corrupt_blob(d: Path) -> None:
    _healthy_store(d)
    db = sqlite3.connect(d / "s" / "fabench.sqlite")
    rid, data = db.execute("SELECT result_id, data FROM samples LIMIT 1").fetchone()
    db.execute("UPDATE samples SET data = ? WHERE result_id = ?",
               (bytes([data[0] ^ 0xFF]) + data[1:], rid))
    db.commit()
    db.close()


def _truncated(d: Path) -> None:
    _healthy_store(d)
    p = d / "s" / "fabench.sqlite"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _store_is_dir(d: Path) -> None:
    (d / "s" / "fabench.sqlite").mkdir(parents=True)


def _store_is_symlink(d: Path) -> None:
    (d / "s").mkdir()
    (d / "s" / "fabench.sqlite").symlink_to("/etc/shadow")


def _store_is_fifo(d: Path) -> None:
    (d / "s").mkdir()
    os.mkfifo(d / "s" / "fabench.sqlite")


def _store_is_text(d: Path) -> None:
    (d / "s").mkdir()
    (d / "s" / "fabench.sqlite").write_text("not a database\n" * 100)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "corrupt-blob": _corrupt_blob,
    "dropped-samples": _sql("DROP TABLE samples"),
    "dropped-runs": _sql("DROP TABLE runs"),
    "renamed-campaigns": _sql("ALTER TABLE campaigns RENAME TO campaigns_old"),
    "schema-999": _sql("UPDATE meta SET value = '999' WHERE key = 'schema_version'"),
    "schema-text": _sql("UPDATE meta SET value = 'x' WHERE key = 'schema_version'"),
    "truncated": _truncated,
    "directory": _store_is_dir,
    "symlink": _store_is_symlink,
    "fifo": _store_is_fifo,
    "not-sqlite": _store_is_text,
}


def _backup_kept(d: Path, p: subprocess.CompletedProcess[str]) -> str | None:
    """The good backup the healthy store had is still there, byte for byte."""
    bak, saved = d / "s" / "fabench.sqlite.bak", d / "good.bak"
    if saved.exists() and (not bak.exists() or bak.read_bytes() != saved.read_bytes()):
        return "the good backup was overwritten"
    return None


def _keep_backup(step: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        step(d)
        bak = d / "s" / "fabench.sqlite.bak"
        if bak.exists():
            shutil.copy(bak, d / "good.bak")
    return make


def _no_secret(d: Path, p: subprocess.CompletedProcess[str]) -> str | None:
    if SECRET in p.stdout + p.stderr:
        return "the secret file's content is in the output"
    for f in d.rglob("*"):
        if f.is_file() and not f.name.startswith("shadow") and SECRET.encode() in f.read_bytes():
            return f"the secret file's content is in {f.relative_to(d)}"
    return None


SHADOW = _write("shadow", "".join(f"u{i}:$y$j9T${SECRET}{i}:19000:0:99999:7:::\n"
                                  for i in range(40)), 0o600)
# A file that starts as an HPL input does, the rest a secret: read, never echoed.
SHADOW_HPL = _write("shadow-hpl", "HPLinpack benchmark input file\n"
                    + "".join(f"{SECRET}{i} x\n" for i in range(40)), 0o600)


def _spec(text: str) -> Callable[[Path], None]:
    return _write("spec.yaml", text)


# --- the cases --------------------------------------------------------------------------------

def kernel_path_cases() -> list[Case]:
    c = "kernel-paths"
    out = []
    for flag, target in [("--hpccinf", "{d}/shadow"), ("--hpccinf", "{d}/shadow-hpl"),
                         ("--hpccinf", "/etc/shadow"), ("--hpccinf", "/proc/self/environ"),
                         ("--hpccinf", "/dev/zero"), ("--program", "/bin/cat"),
                         ("--program", "/usr/bin/env"), ("--program", "{d}/shadow"),
                         ("--blas", "../../../../etc/shadow"), ("--blas", "{d}/shadow")]:
        for kernel in ("hpcc.hpl", "hpcc.ptrans"):
            out.append(Case(c, f"bench {kernel} {flag} {target}",
                            ["bench", kernel, "--ranks", "1", "--sizes", "200", "--json",
                             "--timeout", "60", "--out", "{d}/o",
                             "--kernel-args", f"{flag} {target}"],
                            setup=_both(SHADOW, SHADOW_HPL), check=_no_secret))
        out.append(Case(c, f"spec args {flag} {target}", ["run", "{d}/spec.yaml",
                                                           "--no-progress", "--out", "{d}/o"],
                        setup=_both(SHADOW, SHADOW_HPL, _spec(
                            "name: x\ntimeout_s: 60\nruns:\n  - kernel: hpcc.hpl\n    ranks: 1\n"
                            f"    sizes: '200'\n    args: ['{flag}', '{target}']\n")),
                        check=_no_secret))
    # the native kernels take no path; a path-looking word is not theirs
    for kernel in ("tcp.latency", "mpi.latency", "mpi.allreduce", "udp.latency", "ucx.latency",
                   "ofi.latency", "app.halo3d"):
        out.append(Case(c, f"bench {kernel} --device /etc/shadow",
                        ["bench", kernel, "--sizes", "8", "--iterations", "5", "--timeout", "30",
                         "--out", "{d}/o", "--kernel-args", "--device {d}/shadow"],
                        setup=SHADOW, check=_no_secret))
        out.append(Case(c, f"bench {kernel} @/etc/shadow",
                        ["bench", kernel, "--sizes", "8", "--iterations", "5", "--timeout", "30",
                         "--out", "{d}/o", "--kernel-args", "@{d}/shadow"],
                        setup=SHADOW, check=_no_secret))
    out.append(Case(c, "hpl nodes --blas /etc/shadow", ["hpl", "nodes", "--sizes", "200",
                                                       "--ranks-per-node", "1", "--blas",
                                                       "{d}/shadow", "--out", "{d}/o"],
                    setup=SHADOW, check=_no_secret))
    out.append(Case(c, "model hpl --node-table /etc/shadow",
                    ["model", "hpl", "-f", "tcp-40g", "--node-table", "{d}/shadow",
                     "--out", "{d}/o"], setup=SHADOW, check=_no_secret))
    out.append(Case(c, "matrix --topology /etc/shadow",
                    ["matrix", "--hosts", "2", "--topology", "{d}/shadow", "--out", "{d}/o"],
                    setup=SHADOW, check=_no_secret))
    out.append(Case(c, "matrix advise --hwloc /etc/shadow",
                    ["matrix", "advise", "--nodes", "2", "--hwloc", "{d}/shadow",
                     "--out", "{d}/o"], setup=SHADOW, check=_no_secret))
    out.append(Case(c, "tune check --profile /etc/shadow",
                    ["tune", "check", "--profile", "{d}/shadow"], setup=SHADOW,
                    check=_no_secret))
    out.append(Case(c, "run /etc/shadow", ["run", "{d}/shadow", "--out", "{d}/o"],
                    setup=SHADOW, check=_no_secret))
    out.append(Case(c, "accept /etc/shadow", ["accept", "{d}/shadow", "--out", "{d}/o"],
                    setup=SHADOW, check=_no_secret))
    out.append(Case(c, "bench --on hosts /etc/shadow",
                    ["bench", "tcp.latency", "--on", "hosts", "{d}/shadow", "--out", "{d}/o"],
                    setup=SHADOW, check=_no_secret))
    for tool in ("osu", "imb", "iperf3", "sockperf"):
        out.append(Case(c, f"import {tool} /etc/shadow",
                        ["import", tool, "{d}/shadow", "--store", "{d}/o"],
                        setup=SHADOW, check=_no_secret))
    return out


def resource_cases() -> list[Case]:
    c = "resources"
    big = ["1e15", "1000000000000000", "1P", "1E", "8:1e15", "9" * 30, "1e12"]
    out = [
        Case(c, "hpl nodes --sizes 10000000", ["hpl", "nodes", "--sizes", "10000000",
                                               "--ranks-per-node", "1", "--out", "{d}/o"],
             words=["MemAvailable"]),
        Case(c, "hpl nodes --ranks-per-node 100000",
             ["hpl", "nodes", "--sizes", "200", "--ranks-per-node", "100000", "--out", "{d}/o"]),
        Case(c, "hpl scaling --ranks-per-node 100000",
             ["hpl", "scaling", "--sizes", "200", "--ranks-per-node", "100000",
              "--out", "{d}/o"]),
        Case(c, "hpl scaling --sizes 10000000",
             ["hpl", "scaling", "--sizes", "10000000", "--nodes", "1", "--ranks-per-node", "1",
              "--out", "{d}/o"]),
        Case(c, "bench hpcc.hpl --sizes 10000000",
             ["bench", "hpcc.hpl", "--ranks", "1", "--sizes", "10000000", "--out", "{d}/o"]),
        Case(c, "sim -N 1e9", ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "1000000000",
                               "--out", "{d}/o"]),
        Case(c, "sim --ppn 100000", ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2",
                                     "--ppn", "100000", "--out", "{d}/o"]),
        Case(c, "sim --cores 0", ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2",
                                  "--cores", "0", "--out", "{d}/o"]),
        Case(c, "model predict -N 1e18", ["model", "predict", "-f", "tcp-40g", "-N",
                                          "1000000000000000000", "--out", "{d}/o"]),
        Case(c, "model predict --ppn 1e9", ["model", "predict", "-f", "tcp-40g", "-N", "4",
                                            "--ppn", "1000000000", "--out", "{d}/o"]),
        Case(c, "model predict --band-samples 1e9",
             ["model", "predict", "-f", "tcp-40g", "-N", "4", "--band-samples", "1000000000",
              "--out", "{d}/o"]),
        Case(c, "model predict --hosts-per-leaf 1e9",
             ["model", "predict", "-f", "tcp-40g", "-N", "4", "--hosts-per-leaf",
              "1000000000", "--out", "{d}/o"]),
        Case(c, "model predict --dims 100000x100000x100000",
             ["model", "predict", "-f", "tcp-40g", "-N", "4", "--topology", "torus",
              "--dims", "100000x100000x100000", "--out", "{d}/o"]),
        Case(c, "model hpl -N 1e18", ["model", "hpl", "-f", "tcp-40g", "-N",
                                      "1000000000000000000", "--node-gflops", "100",
                                      "--mem-gb", "64", "--out", "{d}/o"]),
        Case(c, "model hpl --band-samples 1e9",
             ["model", "hpl", "-f", "tcp-40g", "-N", "4", "--node-gflops", "100",
              "--mem-gb", "64", "--band-samples", "1000000000", "--out", "{d}/o"]),
        Case(c, "model validate -N 1e18",
             ["model", "validate", "--published", "-N", "1000000000000000000",
              "--out", "{d}/o"]),
        Case(c, "matrix --hosts 1e6", ["matrix", "--hosts", "1000000", "--out", "{d}/o"]),
        Case(c, "matrix --hosts 0", ["matrix", "--hosts", "0", "--out", "{d}/o"]),
        Case(c, "matrix --groups 1e9", ["matrix", "--hosts", "2", "--groups", "1000000000",
                                        "--out", "{d}/o"]),
        Case(c, "matrix --iterations 1e12", ["matrix", "--hosts", "2", "--iterations",
                                             "1000000000000", "--out", "{d}/o"]),
        Case(c, "matrix --window 1e12", ["matrix", "--hosts", "2", "--window",
                                         "1000000000000", "--out", "{d}/o"]),
        Case(c, "matrix --lat-iterations 1e12", ["matrix", "--hosts", "2", "--lat-iterations",
                                                 "1000000000000", "--out", "{d}/o"]),
        Case(c, "matrix advise --nodes 1e9", ["matrix", "advise", "--nodes", "1000000000",
                                              "--out", "{d}/o"]),
        Case(c, "congestion --iterations 1e12", ["congestion", "--iterations",
                                                 "1000000000000", "--out", "{d}/o"]),
        Case(c, "congestion --rounds 1e9", ["congestion", "--rounds", "1000000000",
                                            "--out", "{d}/o"]),
        Case(c, "congestion --bw-window 1e12", ["congestion", "--bw-window", "1000000000000",
                                                "--out", "{d}/o"]),
        Case(c, "congestion --bw-iterations 1e12", ["congestion", "--bw-iterations",
                                                    "1000000000000", "--out", "{d}/o"]),
        Case(c, "bench --iterations 1e12", ["bench", "tcp.latency", "--sizes", "8",
                                            "--iterations", "1000000000000", "--out", "{d}/o"]),
        Case(c, "bench --ranks 1e6", ["bench", "mpi.allreduce", "--ranks", "1000000",
                                      "--out", "{d}/o"]),
        Case(c, "bench --warmup 1e12", ["bench", "tcp.latency", "--sizes", "8", "--warmup",
                                        "1000000000000", "--out", "{d}/o"]),
        Case(c, "bench tcp.bw --streams 1e6", ["bench", "tcp.bw", "--sizes", "8",
                                               "--kernel-args", "--streams 1000000",
                                               "--out", "{d}/o"]),
        Case(c, "diagnose reorder --iterations 1e12",
             ["diagnose", "reorder", "--iterations", "1000000000000", "--out", "{d}/o"]),
        Case(c, "diagnose transports --iterations 1e12",
             ["diagnose", "transports", "--iterations", "1000000000000", "--out", "{d}/o"]),
        Case(c, "testbed up --hosts 100000", ["testbed", "up", "--name", "fbau1", "--hosts",
                                              "100000"]),
        Case(c, "history --permutations 1e12", ["history", "x", "--permutations",
                                                "1000000000000", "--out", "{d}/o"]),
        Case(c, "spec repeats 1e12", ["run", "{d}/spec.yaml", "--out", "{d}/o"],
             setup=_spec("name: x\nrepeats: 1000000000000\nruns:\n  - kernel: tcp.latency\n")),
        Case(c, "spec ranks 1e9", ["run", "{d}/spec.yaml", "--out", "{d}/o"],
             setup=_spec("name: x\nruns:\n  - kernel: mpi.allreduce\n    ranks: 1000000000\n")),
        Case(c, "spec iterations 1e12", ["run", "{d}/spec.yaml", "--out", "{d}/o"],
             setup=_spec("name: x\nruns:\n  - kernel: tcp.latency\n    sizes: '8'\n"
                         "    iterations: 1000000000000\n")),
        Case(c, "run --repeats 1e12", ["run", "--quick", "--repeats", "1000000000000",
                                       "--out", "{d}/o"]),
    ]
    sizes_cmds: list[tuple[str, list[str]]] = [
        ("bench", ["bench", "tcp.latency", "--iterations", "5", "--timeout", "30", "--sizes"]),
        ("matrix --size", ["matrix", "--hosts", "2", "--size"]),
        ("hpl nodes", ["hpl", "nodes", "--ranks-per-node", "1", "--sizes"]),
        ("hpl scaling", ["hpl", "scaling", "--nodes", "1", "--ranks-per-node", "1",
                         "--sizes"]),
        ("sim", ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2", "--sizes"]),
        ("model predict", ["model", "predict", "-f", "tcp-40g", "-N", "4", "--sizes"]),
        ("diagnose reorder", ["diagnose", "reorder", "--size"]),
        ("diagnose transports", ["diagnose", "transports", "--sizes"]),
        ("import --size", ["import", "iperf3", str(OSU), "--store", "{d}/o", "--size"]),
    ]
    for label, argv in sizes_cmds:
        for v in big:
            out.append(Case(c, f"{label} sizes {v}", [*argv, v, *(
                [] if argv[0] == "import" else ["--out", "{d}/o"])]))
    out.append(Case(c, "spec sizes 1e15", ["run", "{d}/spec.yaml", "--out", "{d}/o"],
                    setup=_spec("name: x\nruns:\n  - kernel: tcp.latency\n    sizes: 1e15\n")))
    return out


# Each writing command, cheap and with the damaged store as its store: it must refuse before
# it measures or writes anything.
def _writers() -> list[tuple[str, list[str], Callable[[Path], None] | None]]:
    spec = _spec("name: r\nruns:\n  - kernel: tcp.latency\n    sizes: '8'\n    iterations: 5\n")
    accept = _spec("name: a\nchecks:\n  - kernel: tcp.latency\n    sizes: '8'\n"
                   "    iterations: 5\n    max_latency_us: 100000\n")
    return [
        ("run", ["run", "{d}/spec.yaml", "--no-progress", "--out", "{d}/s"], spec),
        ("run --resume", ["run", "{d}/spec.yaml", "--resume", "--no-progress",
                          "--out", "{d}/s"], spec),
        ("bench", ["bench", "tcp.latency", "--sizes", "8", "--iterations", "5",
                   "--timeout", "30", "--out", "{d}/s"], None),
        ("import", ["import", "osu", str(OSU), "--store", "{d}/s"], None),
        ("import imb", ["import", "imb", str(IMB), "--store", "{d}/s"], None),
        ("matrix", ["matrix", "--hosts", "2", "--kernel", "tcp", "--size", "64K",
                    "--lat-iterations", "10", "--no-retest", "--timeout", "60",
                    "--out", "{d}/s"], None),
        ("congestion", ["congestion", "--rounds", "1", "--iterations", "10",
                        "--timeout", "60", "--out", "{d}/s"], None),
        ("hpl nodes", ["hpl", "nodes", "--sizes", "200", "--ranks-per-node", "1",
                       "--timeout", "120", "--out", "{d}/s"], None),
        ("accept", ["accept", "{d}/spec.yaml", "--out", "{d}/s"], accept),
        ("history", ["history", "r", "--out", "{d}/s"], None),
        ("sim", ["sim", "mpi.latency", "-f", "tcp-40g", "-N", "2", "--sizes", "8",
                 "--out", "{d}/s"], None),
        ("model calibrate", ["model", "calibrate", "1", "--name", "c", "--out", "{d}/s"],
         None),
        ("store copy", ["store", "copy", "{d}/s", "{d}/copy"], None),
        ("store export", ["store", "export", "parquet", "{d}/pq", "--store", "{d}/s"], None),
        ("report", ["report", "--store", "{d}/s", "--out", "{d}/rep"], None),
    ]


def store_damage_cases() -> list[Case]:
    out = []
    for dmg, make in DAMAGES.items():
        for label, argv, extra in _writers():
            setup = _keep_backup(make) if extra is None else _both(_keep_backup(make), extra)
            out.append(Case("store-damage", f"{label} on {dmg}", argv, setup=setup,
                            check=_backup_kept, timeout=180))
    for url in ["postgresql://", "postgresql://h/db?sslmode=disable&options=-c%20x",
                "postgresql://u:p@/db?host=/nonexistent", "postgresql://'; DROP TABLE x;--",
                "postgresql://localhost:99999/x", "postgresql://[::1/x",
                "postgresql://a b@c/d", "postgresql://localhost/x?host=%00"]:
        out.append(Case("store-damage", f"import --store {url!r}",
                        ["import", "osu", str(OSU), "--store", url], timeout=60))
        out.append(Case("store-damage", f"store check {url!r}",
                        ["store", "check", "--store", url], timeout=60))
    return out


def _healthy_of(kind: str) -> Callable[[Path], None]:
    """A store holding one finished run of a kind, made by the command itself."""
    argv = {
        "import-osu": ["import", "osu", str(OSU), "--store", "{d}/s"],
        "import-imb": ["import", "imb", str(IMB), "--store", "{d}/s"],
        "bench": ["bench", "tcp.latency", "--sizes", "8", "--iterations", "50",
                  "--out", "{d}/s"],
        "sim": ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2", "--sizes", "8",
                "--iterations", "5", "--out", "{d}/s"],
        "matrix": ["matrix", "--hosts", "2", "--size", "64K",
                   "--lat-iterations", "20", "--no-retest", "--out", "{d}/s"],
        "congestion": ["congestion", "--on", "testbed", "fbauc", "--rounds", "1",
                       "--iterations", "50", "--settle", "0.2", "--out", "{d}/s"],
        "hpl": ["hpl", "nodes", "--sizes", "300", "--ranks-per-node", "1", "--out", "{d}/s"],
        "accept": ["accept", "{d}/acc.yaml", "--out", "{d}/s"],
    }[kind]

    def make(d: Path) -> None:
        if kind == "congestion":
            _fabench(d, "testbed", "up", "--name", "fbauc", "--hosts", "4")
        (d / "acc.yaml").write_text(
            "name: a\nchecks:\n  - check: latency_us <= 100000 @ 8\n    transport: tcp\n")
        p = invoke([a.replace("{d}", str(d)) for a in argv], d, timeout=600)
        if p.returncode not in (0, 3):  # 3: a verdict that failed; the store is still sound
            raise RuntimeError(f"making a {kind} store: exit {p.returncode}: "
                               f"{p.stderr[-400:]}")
    return make


def store_check_cases() -> list[Case]:
    return [Case("store-check", f"store check on a healthy {kind} store",
                 ["store", "check", "--store", "{d}/s"], expect="ok",
                 setup=_healthy_of(kind), timeout=600)
            for kind in ("import-osu", "import-imb", "bench", "sim", "matrix", "congestion",
                         "hpl", "accept")]


def _yaml_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return ("\n".join(lines)
            + f"\nname: bomb\nruns:\n  - kernel: tcp.latency\n    env: *a{levels - 1}\n")


def input_cases() -> list[Case]:
    c = "input"
    out: list[Case] = []
    agent = _write("agent", "#!/bin/sh\nshift\nexec \"$@\"\n", 0o755)
    env = {"FABENCH_RSH_AGENT": "{d}/agent"}
    for label, text in [("duplicate", "localhost\nlocalhost\n"), ("empty", ""),
                        ("blank lines", "\n\n   \n"), ("comment only", "# nothing\n"),
                        ("slots=0", "localhost slots=0\n"), ("slots=-1", "localhost slots=-1\n"),
                        ("slots=1e12", "localhost slots=1000000000000\n"),
                        ("slots=x", "localhost slots=x\n"), ("leading dash", "-oProxyCommand=id\n"),
                        ("NUL", "local\0host\n"), ("non-UTF-8", "h\xff\n"),
                        ("spaces", "a b c d\n"), ("case duplicate", "localhost\nLOCALHOST\n")]:
        for cmd in (["matrix", "--kernel", "tcp"], ["bench", "tcp.latency", "--sizes", "8"],
                    ["hpl", "nodes", "--sizes", "200", "--ranks-per-node", "1"]):
            out.append(Case(c, f"{cmd[0]} hostfile {label}",
                            [*cmd, "--on", "hosts", "{d}/hosts", "--timeout", "30",
                             "--out", "{d}/o"],
                            setup=_both(_write("hosts", text.encode("latin-1")), agent),
                            env=env))
    for pairs in ["", ",", "0:0", "0:1,0:1", "h1:h1", "0:", ":1", "1:2:3", "-1:0",
                  "99999999999:0", "zz:h2", "0:1,", "h1:h2,2:3", "\n", "0:1\n"]:
        out.append(Case(c, f"matrix --pairs {pairs!r}", ["matrix", "--hosts", "2", "--pairs",
                                                         pairs, "--out", "{d}/o"]))
    for flag_cmd in (["bench", "tcp.latency", "--sizes", "8", "--iterations", "5"],
                     ["matrix", "--hosts", "2"], ["congestion"],
                     ["hpl", "nodes", "--sizes", "200", "--ranks-per-node", "1"],
                     ["hpl", "scaling", "--sizes", "200", "--nodes", "1",
                      "--ranks-per-node", "1"],
                     ["sim", "mpi.allreduce", "-f", "tcp-40g", "-N", "2"],
                     ["diagnose", "transports", "--quick"], ["diagnose", "reorder"]):
        for t in ["nan", "inf", "-1", "0", "1e300", "-inf", "9.3e9"]:
            out.append(Case(c, f"{' '.join(flag_cmd[:2])} --timeout {t}",
                            [*flag_cmd, "--timeout", t, "--out", "{d}/o"]))
    for t in [".nan", ".inf", "-1", "1e300", "0"]:
        out.append(Case(c, f"spec timeout_s {t}", ["run", "{d}/spec.yaml", "--out", "{d}/o"],
                        setup=_spec(f"name: x\ntimeout_s: {t}\nruns:\n  - kernel: tcp.latency\n")))
    for t in ["nan", "inf", "-1", "1e300"]:
        out.append(Case(c, f"tune check --window {t}", ["tune", "check", "--window", t]))
        out.append(Case(c, f"accept --budget {t}", ["accept", "{d}/spec.yaml", "--budget", t,
                                                     "--out", "{d}/o"],
                        setup=_spec("name: a\nchecks:\n  - kernel: tcp.latency\n")))
        out.append(Case(c, f"congestion --settle {t}", ["congestion", "--settle", t,
                                                        "--out", "{d}/o"]))
        out.append(Case(c, f"history --tolerance {t}", ["history", "x", "--tolerance", t,
                                                        "--out", "{d}/o"]))
        out.append(Case(c, f"history --alpha {t}", ["history", "x", "--alpha", t,
                                                    "--out", "{d}/o"]))
    # model define / predict / validate
    base = ["model", "define", "mine", "--family", "ib", "--latency-us", "1.5",
            "--bandwidth-MBps", "5000"]
    for flag, v in [("--latency-us", "nan"), ("--latency-us", "0"), ("--bandwidth-MBps", "-1"),
                    ("--bandwidth-MBps", "1e999"), ("--hop-latency-us", "inf"),
                    ("--eager-limit", "-1"), ("--eager-limit", "1000000000000000000000"),
                    ("--link-MBps", "nan"), ("--hops", "0"), ("--hops", "1000000000"),
                    ("--shm-MBps", "0:0"), ("--shm-latency-us", "2:1"),
                    ("--gamma-MBps", "nan:1"), ("--rendezvous-us", "-1"),
                    ("--source", "x\n<script>alert(1)</script>"), ("--latency-us", "1e-300")]:
        out.append(Case(c, f"model define {flag} {v}",
                        [*base, flag, v, "--out", "{d}/o"]))
    for name in ["x\n", "a/b", "..", "-x", "x\0y", "tcp-40g", "", "a" * 300, ".hidden",
                 "con\u202eexe"]:
        out.append(Case(c, f"model define name {name!r}",
                        ["model", "define", name, "--family", "ib", "--latency-us", "1",
                         "--bandwidth-MBps", "100", "--out", "{d}/o"]))
    for argv in (["model", "validate", "999", "-f", "tcp-40g"],
                 ["model", "validate", "-1", "-f", "tcp-40g"],
                 ["model", "validate", "--simulated", "999"],
                 ["model", "calibrate", "999", "--name", "c"],
                 ["model", "calibrate", "1", "--name", "c", "--scale-runs", "999"],
                 ["model", "hpl", "-f", "tcp-40g", "--from-run", "999", "-N", "2"],
                 ["model", "hpl", "-f", "tcp-40g", "--measured", "999", "-N", "2",
                  "--node-gflops", "1", "--mem-gb", "1"],
                 ["model", "show", "nonexistent"], ["model", "show", "../../etc/passwd"],
                 ["model", "predict", "-f", "nonexistent", "-N", "2"],
                 ["model", "predict", "-f", "../x", "-N", "2"],
                 ["model", "predict", "-f", "tcp-40g", "-N", "2", "--level", "nan"],
                 ["model", "predict", "-f", "tcp-40g", "-N", "2", "--level", "1"],
                 ["model", "predict", "-f", "tcp-40g", "-N", "2", "--switch-reduce-us",
                  "nan"],
                 ["model", "predict", "-f", "tcp-40g", "-N", "2", "--oversubscription",
                  "0"],
                 ["model", "predict", "-f", "tcp-40g", "-N", "2", "--oversubscription",
                  "nan"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "2", "--node-gflops", "nan",
                  "--mem-gb", "1"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "2", "--node-gflops", "1",
                  "--mem-gb", "-1"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "2", "--node-gflops", "1",
                  "--mem-gb", "1", "--overlap", "nan"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "2", "--node-gflops", "1",
                  "--mem-gb", "1", "--fit-at", "x:y"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "0,-1", "--node-gflops", "1",
                  "--mem-gb", "1"],
                 ["model", "hpl", "-f", "tcp-40g", "-N", "2", "--peak", "1,1,nan,8",
                  "--mem-gb", "1"],
                 ["matrix", "compare", "998", "999"], ["matrix", "csv", "--campaign", "999"],
                 ["matrix", "advise", "--nodes", "2", "--campaign", "999"],
                 ["history", "nonexistent"], ["history", "x", "--until", "999"],
                 ["accept", "{d}/missing.yaml"], ["compare", "998", "999"],
                 ["run", "--resume", "999"], ["run", "--resume", "x"],
                 ["matrix", "--resume", "999", "--hosts", "2"]):
        store = [] if argv[:2] == ["model", "show"] else ["--out", "{d}/o"]
        out.append(Case(c, " ".join(a for a in argv if "{d}" not in a),
                        [*argv, *store], setup=_healthy_store))
    # testbed names
    # every name carries "fbau", so that one wrongly accepted is this audit's to take down
    # (never a name another user's testbed may have: no "", no default)
    for name in TESTBED_NAMES:
        out.append(Case(c, f"testbed up --name {name!r}", ["testbed", "up", "--name", name,
                                                            "--hosts", "2"]))
        out.append(Case(c, f"testbed down {name!r}", ["testbed", "down", name]))
        out.append(Case(c, f"bench --on testbed {name!r}",
                        ["bench", "tcp.latency", "--on", "testbed", name, "--out", "{d}/o"]))
    # specs
    for label, text in [("billion laughs", _yaml_bomb()),
                        ("deep nesting", "a: " + "[" * 50000 + "]" * 50000 + "\n"),
                        ("deep mapping", "a:\n" + "".join("  " * i + f"k{i}:\n"
                                                          for i in range(1, 3000))),
                        ("huge int", "name: x\nrepeats: " + "9" * 5000 + "\nruns:\n"
                         "  - kernel: tcp.latency\n"),
                        ("huge float", "name: x\ntimeout_s: 1e400\nruns:\n"
                         "  - kernel: tcp.latency\n"),
                        ("self alias", "runs: &a [*a]\n"),
                        ("tag python", "name: !!python/object/apply:os.system ['id']\n"),
                        ("name newline", "name: \"x\\ny\"\nruns:\n  - kernel: tcp.latency\n"
                         "    sizes: '8'\n    iterations: 5\n"),
                        ("name NUL", "name: \"x\\0y\"\nruns:\n  - kernel: tcp.latency\n"),
                        ("env name injection", "name: x\nruns:\n  - kernel: tcp.latency\n"
                         "    env: {'A;id': '1'}\n"),
                        ("args not list", "name: x\nruns:\n  - kernel: tcp.latency\n"
                         "    args: 7\n"),
                        ("non-UTF-8", b"name: \xff\xfe\nruns: []\n"),
                        ("10 MB", "name: x\n#" + "x" * 10_000_000 + "\nruns: []\n")]:
        data = text if isinstance(text, bytes) else text.encode()
        out.append(Case(c, f"spec {label}", ["run", "{d}/spec.yaml", "--no-progress",
                                             "--out", "{d}/o"],
                        setup=_write("spec.yaml", data)))
        if label in ("billion laughs", "deep nesting", "self alias", "non-UTF-8", "huge int"):
            out.append(Case(c, f"accept spec {label}", ["accept", "{d}/spec.yaml",
                                                        "--out", "{d}/o"],
                            setup=_write("spec.yaml", data)))
            out.append(Case(c, f"tune profile {label}", ["tune", "check", "--profile",
                                                         "{d}/spec.yaml"],
                            setup=_write("spec.yaml", data)))
    # imports: deep, huge, non-UTF-8, empty, no rows, for every importer
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    for tool in ("osu", "imb", "iperf3", "sockperf", "perftest", "hpcc", "ucx_perftest",
                 "../osu", "-x"):
        for label, data in [("deep JSON", deep), ("non-UTF-8", b"# OSU\n8 \xff\xfe 1.0\n"),
                            ("empty", b""), ("huge", b"8 1.0\n" * 3_000_000),
                            ("NUL", b"\0" * 1000), ("no rows",
                                                    b"# OSU MPI Latency Test v7.4\n"
                                                    b"# Size  Avg Latency(us)\n8 -1\n16 nan\n"),
                            ("deep object", ('{"a":' * 100_000 + "1" + "}" * 100_000).encode())]:
            out.append(Case(c, f"import {tool} {label}", ["import", tool, "{d}/f",
                                                          "--store", "{d}/o"],
                            setup=_write("f", data), timeout=180))
        out.append(Case(c, f"import {tool} a directory", ["import", tool, "{d}",
                                                          "--store", "{d}/o"]))
        out.append(Case(c, f"import {tool} a FIFO", ["import", tool, "{d}/fifo",
                                                     "--store", "{d}/o"],
                        setup=lambda d: os.mkfifo(d / "fifo"), timeout=30))
    return out


CLASSES: dict[str, Callable[[], list[Case]]] = {
    "kernel-paths": kernel_path_cases,
    "resources": resource_cases,
    "store-damage": store_damage_cases,
    "store-check": store_check_cases,
    "input": input_cases,
}


# --- running and judging ----------------------------------------------------------------------

def judge(case: Case, d: Path) -> tuple[str, str]:
    """(outcome, detail): refused | crashed | wrong-success | late-failure | unclear | ok |
    failed."""
    try:
        if case.setup is not None:
            case.setup(d)
    except Exception as exc:  # noqa: BLE001 - the setup's failure is the audit's own
        return "setup-failed", f"{type(exc).__name__}: {exc}"
    argv = [a.replace("{d}", str(d)) for a in case.argv]
    env = {**os.environ, **{k: v.replace("{d}", str(d)) for k, v in case.env.items()}}
    t0 = time.monotonic()
    if any("\0" in a for a in argv):  # no program can be given a NUL: the shell cannot either
        return "refused", "(a NUL cannot be passed in an argument)"
    try:
        p = invoke(argv, d, env, case.timeout)
    except subprocess.TimeoutExpired:
        return "crashed", f"hung past {case.timeout:.0f} s"
    took = time.monotonic() - t0
    err = p.stderr.strip()
    if "Traceback" in p.stderr or p.returncode < 0 or p.returncode not in (0, 1, 2, 3):
        return "crashed", f"exit {p.returncode}: {err[-600:]}"
    problem = case.check(d, p) if case.check is not None else None
    if case.expect == "ok":
        if p.returncode == 0 and problem is None:
            return "ok", f"{took:.1f} s"
        return "failed", f"exit {p.returncode}: {problem or (p.stdout + err)[-600:]}"
    if problem is not None:
        return "wrong-success", problem
    if p.returncode in (1, 3):
        # not a success, but not a refusal either: the bad input was found after the work
        # began (a campaign stored, a run started)
        return "late-failure", f"exit {p.returncode} ({took:.1f} s): {(p.stdout + err)[-300:]}"
    if p.returncode != 2:
        return "wrong-success", f"exit {p.returncode} ({took:.1f} s): {(p.stdout + err)[-300:]}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("fabench: error:", "usage:"))
              or ": error:" in ln]
    if case.argv[:2] == ["store", "check"]:
        # store check reports on stdout, one PROBLEM line a finding (its exit 2: unreadable)
        errors += [ln for ln in p.stdout.splitlines() if ln.startswith("PROBLEM")]
    if not errors:
        return "unclear", f"exit 2 without an error line: {err[-300:]}"
    missing = [w for w in case.words if w not in p.stdout + p.stderr]
    if missing:
        return "unclear", f"the refusal does not say {missing}: {err[-300:]}"
    return "refused", errors[-1][:200]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(CLASSES), help="these classes only")
    ap.add_argument("--match", help="only cases whose name contains this")
    ap.add_argument("--fabench", help="this program as fabench (default: a fork of this "
                    "Python, which runs the fabench it imports)")
    ap.add_argument("--json", type=Path, help="every case's outcome, as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="every case, not only faults")
    args = ap.parse_args(argv)
    global FABENCH
    FABENCH = [args.fabench] if args.fabench else []
    results = []
    for cls in args.only or list(CLASSES):
        for case in CLASSES[cls]():
            if args.match and args.match not in case.name:
                continue
            with tempfile.TemporaryDirectory(prefix="fbaudit-") as tmp:
                outcome, detail = judge(case, Path(tmp))
            results.append({"class": cls, "case": case.name, "outcome": outcome,
                            "detail": detail})
            if args.verbose or outcome not in ("refused", "ok"):
                print(f"[{cls}] {outcome:13} {case.name!r}: {detail}", flush=True)
    _cleanup_testbeds()
    print(f"\n{'class':14} {'cases':>5} {'refused':>8} {'ok':>4} {'crashed':>8} "
          f"{'wrong-ok':>8} {'late':>5} {'unclear':>8} {'failed':>7} {'setup':>6}")
    total = {"crashed": 0, "wrong-success": 0, "failed": 0}
    for cls in dict.fromkeys(r["class"] for r in results):
        rs = [r for r in results if r["class"] == cls]
        n = {k: sum(r["outcome"] == k for r in rs) for k in
             ("refused", "ok", "crashed", "wrong-success", "late-failure", "unclear", "failed",
              "setup-failed")}
        for k in total:
            total[k] += n[k]
        print(f"{cls:14} {len(rs):5} {n['refused']:8} {n['ok']:4} {n['crashed']:8} "
              f"{n['wrong-success']:8} {n['late-failure']:5} {n['unclear']:8} {n['failed']:7} "
              f"{n['setup-failed']:6}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if any(total.values()) else 0


TESTBED_NAMES = ["fbau\n", "../fbau", "-fbau", "fbau/b", "fbau\0", "fbau" + "a" * 60,
                 "fbau;id", "$(id)fbau", "fbau\t", " fbau"]


def _cleanup_testbeds() -> None:
    """A testbed a wrongly accepted name made: down again (names this audit uses only)."""
    for name in ("fbau1", "fbauc", *TESTBED_NAMES, "fbau", "fbaua"):
        if "\0" in name:
            continue
        invoke(["testbed", "down", name], Path("/"), timeout=120)


FABENCH: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
