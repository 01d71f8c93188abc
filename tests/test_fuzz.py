"""A seeded fuzz test (issue 19): hostile command-line values, campaign specs and peer-tool
output files, a fixed number of each, each run through the CLI's own entry point in this
process. Every generated input is invalid by construction; each must be refused with exit
status 2 and a `fabench: error:` message (peer files may also import, status 0), and none may
escape as an exception (a traceback for the user).

FABENCH_FUZZ_CASES is the number of inputs of each kind (default 30: a run takes the same
inputs whatever the host's load, a longer fuzz asks for more), FABENCH_FUZZ_SEED picks them (a
failure prints its seed and case, so it replays).
"""

import argparse
import contextlib
import functools
import io
import os
import random
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from conftest import own_testbeds
from fabench.cli import main
from fabench.util.interrupts import CAUGHT

CASES = int(os.environ.get("FABENCH_FUZZ_CASES", "30"))
SEED = int(os.environ.get("FABENCH_FUZZ_SEED", "19"))

_NASTY = ["nan", "NaN", "inf", "-inf", "1e999", "-1", "0", "-0", "", " ", "'", '"', "\\",
          "$(touch /tmp/fuzz-pwned)", "`id`", ";id", "|id", "&& id", "-oProxyCommand=id",
          "--help-me", "0x10", "1.5.5", "9" * 40, "-" + "9" * 30, "\u00e9\u4e2d\U0001f4a5",
          "\t", "\r\n", "%s%n", "../../../etc/passwd", "a" * 300]


def _junk(rng: random.Random, n: int = 12) -> str:
    alphabet = "abcXYZ019-_.:,;'\"$`(){}[]<>|&*?!~#%^=+@ \t\\/\u00e9\u4e2d"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


def _bad_int(rng: random.Random, low: int) -> str:
    """An integer option's value below its range, or not an integer at all."""
    return rng.choice([str(rng.randint(-10**6, low - 1)), rng.choice(_NASTY[:18]),
                       _junk(rng) + "x"])


def _bad_float(rng: random.Random) -> str:
    return rng.choice(["nan", "inf", "-inf", "-1e-9", "0", "-5", "1e999", _junk(rng) + "x"])


def _bench_case(rng: random.Random, tmp: Path) -> list[str]:
    """`fabench bench` with one hostile option; the others valid."""
    cases: list[Callable[[], list[str]]] = [
        lambda: ["--ranks", _bad_int(rng, 1)],
        lambda: ["--ranks", str(rng.randint(10**5, 10**9))],  # beyond any slot count here
        lambda: ["--iterations", rng.choice([_bad_int(rng, 1), str(2**63 + rng.randint(0, 9))])],
        lambda: ["--warmup", _bad_int(rng, 0)],
        lambda: ["--window", rng.choice([_bad_int(rng, 1), str(10**6 + rng.randint(1, 10**9))])],
        lambda: ["--rounds", rng.choice([_bad_int(rng, 1), str(1001 + rng.randint(0, 10**9))])],
        lambda: ["--sizes", rng.choice(["", ",", ":", "8:1", "-8", "1T", "4G", "8,x",
                                        "x" + _junk(rng), "1:" + "9" * 30])],
        lambda: ["--timeout", _bad_float(rng)],
        lambda: ["--precision", rng.choice(["nan", "inf", "1", "2", "0", "-0.5",
                                            _junk(rng) + "x"])],
        lambda: ["--precision", "0.1", "--budget", _bad_float(rng)],
        lambda: ["--kernel-args", rng.choice(["'", '"', "--x 'y"])  # never closed
                 + _junk(rng).translate(str.maketrans("", "", "'\"\\"))],
        lambda: ["--on", rng.choice(["hosts 'x", "zz" + _junk(rng, 5).replace(" ", ""),
                                     f"hosts {tmp / 'missing'}", "testbed ../x",
                                     "testbed -" + _junk(rng, 5).replace(" ", "")])],
        lambda: ["--transport", "zz" + _junk(rng)],
        lambda: ["--mpi", "zz" + _junk(rng)],
        lambda: ["--datatype", "zz" + _junk(rng)],
    ]
    args = rng.choice(cases)()
    timeout = [] if "--timeout" in args else ["--timeout", "20"]
    # --mpi and --datatype apply to MPI kernels (collectives) only
    kernel = rng.choice(["mpi.allreduce"] if args[0] in ("--mpi", "--datatype") else
                        ["mpi.latency", "mpi.allreduce", "tcp.latency", "mpi.bw"])
    return ["bench", kernel, *args, *timeout, "--out", str(tmp / "out")]


_VALID_GROUP = {"kernel": "mpi.latency", "sizes": "8", "iterations": 5}


def _spec_case(rng: random.Random, tmp: Path) -> list[str]:
    """`fabench run SPEC` with a spec broken in one place (or not a spec at all)."""
    group = dict(_VALID_GROUP)
    top: dict[str, object] = {"name": "fuzz", "timeout_s": 20}
    kind = rng.randrange(6)
    if kind == 0:
        key, value = rng.choice([
            ("kernel", "zz." + _junk(rng)), ("ranks", rng.randint(-10**6, 0)),
            ("ranks", 10**6), ("sizes", "x" + _junk(rng)), ("iterations", rng.randint(-9, 0)),
            ("warmup", -1), ("rounds", rng.choice([0, 1001, "x"])), ("transport", "zz"),
            ("env", {_junk(rng) + ";id": "1"}), ("precision", rng.choice([0, 1, 2, "x"])),
            ("budget_s", rng.choice([0, -1, "x"])), ("zz_unknown", 1),
            ("validate", {"a": 1}), ("args", {"x": 1}), ("kernel", [])])
        group[key] = value
    elif kind == 1:
        top[rng.choice(["timeout_s", "repeats"])] = rng.choice([0, -1, "x", float("nan"),
                                                                 float("inf")])
    if kind < 2:
        text = yaml.safe_dump({**top, "runs": [group]})
    elif kind == 2:
        text = yaml.safe_dump({**top, "runs": [group]})
        text = text[:rng.randrange(1, len(text))] + rng.choice(["\n  - [", ": :", "\t{"])
    elif kind == 3:
        text = "runs: &a [*a]\n" if rng.random() < 0.5 else "a: &a [1]\nb: *a\n" * 3
    elif kind == 4:
        text = rng.choice(["", "---", "[]", "42", "runs: []", "runs: 7", _junk(rng, 80)])
    else:
        data = bytearray(yaml.safe_dump({**top, "runs": [group]}).encode())
        data[rng.randrange(len(data))] = rng.choice([0xff, 0xfe, 0xc3, 0x80])
        spec = tmp / "spec.yaml"
        spec.write_bytes(bytes(data))
        return ["run", str(spec), "--no-progress", "--out", str(tmp / "out")]
    spec = tmp / "spec.yaml"
    spec.write_text(text)
    return ["run", str(spec), "--no-progress", "--out", str(tmp / "out")]


_OSU_TITLES = ["Latency", "Bandwidth", "Bi-Directional Bandwidth", "Allreduce Latency",
               "All-to-All Personalized Exchange Latency", "Barrier Latency",
               "Multiple Bandwidth / Message Rate", "Allgatherv Latency"]


def _peer_line(rng: random.Random) -> str:
    cells = [rng.choice([str(rng.randint(-10, 10**7)), rng.choice(_NASTY[:12]),
                         f"{rng.uniform(-1e3, 1e3):.3f}", _junk(rng, 6)])
             for _ in range(rng.randint(0, 6))]
    return "   ".join(cells)


def _peer_case(rng: random.Random, tmp: Path) -> list[str]:
    """`fabench import TOOL FILE` with a file of plausible structure and hostile rows."""
    tool = rng.choice(["osu", "imb", "iperf3", "sockperf"])
    lines: list[str] = []
    if tool == "osu":
        lines += [f"# OSU MPI {rng.choice(_OSU_TITLES)} Test v7.4",
                  "# Size      Avg Latency(us)   Min Latency(us)   Iterations"]
    elif tool == "imb":
        lines += ["# Benchmarking " + rng.choice(["PingPong", "Allreduce", "Uniband", "Zz"]),
                  "# #processes = " + rng.choice(["2", "0", "-3", "x", "99999999999999999999"]),
                  "       #bytes #repetitions      t[usec]   Mbytes/sec"]
    elif tool == "iperf3":
        lines += ['{"start": {"test_start": {"protocol": "TCP"}}, "intervals": '
                  + rng.choice(["[", "[{}]", '[{"sum": {"seconds": "nan"}}]', "null"])]
    else:
        lines += ["sockperf: ====> avg-latency=" + rng.choice(_NASTY[:12]) + " (std-dev=1)"]
    lines += [_peer_line(rng) for _ in range(rng.randint(0, 8))]
    data = "\n".join(lines).encode()
    if rng.random() < 0.2:
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    f = tmp / "peer.txt"
    f.write_bytes(data)
    extra = rng.choice([[], ["--ranks", "4"], ["--strict"], ["--ranks", rng.choice(["0", "-2"])],
                        ["--size", rng.choice(["64", "-1", "x", "1T"])]])
    return ["import", tool, str(f), *extra, "--store", str(tmp / "out")]


# --- the commands added since (issue 31): one hostile value each, the rest valid --------------

def _bad_size(rng: random.Random) -> str:
    # not 0: an empty message is a size MPI kernels measure
    return rng.choice(["", ",", "-8", "1T", "8,x", "x" + _junk(rng), "9" * 30])


def _matrix_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: ["--pairs", rng.choice(["", ",", "0:0", "0:", ":1", "1:2:3", "-1:0",
                                        "99999999999:0", "h1:h1", "zz:h2", _junk(rng)])],
        lambda: ["--size", _bad_size(rng)],
        lambda: ["--window", _bad_int(rng, 1)],
        lambda: ["--iterations", _bad_int(rng, 1)],
        lambda: ["--lat-iterations", _bad_int(rng, 1)],
        lambda: ["--groups", _bad_int(rng, 1)],
        lambda: ["--timeout", _bad_float(rng)],
        lambda: ["--resume", rng.choice(["-1", "0", "x", "999999"])],
        lambda: ["--topology", str(tmp / "missing-topology")],
        lambda: ["--kernel", "zz" + _junk(rng, 4)],
        lambda: ["--on", "hosts", str(tmp / "missing-hosts")],
    ]
    args = rng.choice(cases)()
    hosts = [] if "--on" in args else ["--hosts", rng.choice(["2", "1", "0", "-3"])
                                       if args[0] == "--hosts" else "2"]
    return ["matrix", *args, *hosts, "--out", str(tmp / "out")]


def _congestion_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: ["--aggressor", "zz" + _junk(rng, 4)],
        lambda: ["--victim", "zz" + _junk(rng, 4)],
        lambda: ["--rounds", _bad_int(rng, 1)],
        lambda: ["--settle", rng.choice(["nan", "inf", "-1", "61", "x"])],
        lambda: ["--iterations", _bad_int(rng, 1)],
        lambda: ["--bw-window", _bad_int(rng, 1)],
        lambda: ["--timeout", _bad_float(rng)],
        lambda: ["--victim-hosts", _junk(rng)],
        lambda: ["--on", "testbed", rng.choice(["../x", "-x", "zz\n", _junk(rng, 8)])],
    ]
    return ["congestion", *rng.choice(cases)(), "--out", str(tmp / "out")]


def _hpl_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: ["--sizes", rng.choice(["0", _bad_size(rng)])],
        lambda: ["--memory-fraction", rng.choice(["0", "1.5", "nan", "-0.1", "inf", "x"])],
        lambda: ["--nb", _bad_int(rng, 1)],
        lambda: ["--ranks-per-node", rng.choice([_bad_int(rng, 1), "100000"])],
        lambda: ["--peak", _bad_float(rng)],
        lambda: ["--threshold", rng.choice(["0", "1", "nan", "-1", "x"])],
        lambda: ["--nodes", "zz" + _junk(rng, 4).replace(",", "")],
        lambda: ["--timeout", _bad_float(rng)],
    ]
    args = rng.choice(cases)()
    # a small N and one rank unless the hostile value is one of them: an accepted input then
    # costs a second of hpcc, not a node's memory
    safe = [*([] if args[0] == "--sizes" else ["--sizes", "200"]),
            *([] if args[0] == "--ranks-per-node" else ["--ranks-per-node", "1"])]
    return ["hpl", "nodes", *args, *safe, "--out", str(tmp / "out")]


def _diagnose_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: ["transports", "--sizes", _bad_size(rng)],
        lambda: ["transports", "--iterations", _bad_int(rng, 1)],
        lambda: ["transports", "--rounds", _bad_int(rng, 1)],
        lambda: ["transports", "--mpi", "zz" + _junk(rng, 4)],
        lambda: ["transports", "--placement", "zz"],
        lambda: ["reorder", "--percentile", rng.choice(["nan", "-1", "101", "x"])],
        lambda: ["reorder", "--size", _bad_size(rng)],
        lambda: ["reorder", "--iterations", _bad_int(rng, 1)],
        lambda: ["reorder", "--window", _bad_int(rng, 1)],
        lambda: ["reorder", "--hosts", _junk(rng)],
    ]
    args = rng.choice(cases)()
    # an input wrongly accepted starts a sweep: kept short (and then the case fails)
    if args[0] == "transports":
        args += ["--quick", "--no-prove", "--path", "vader/cma", "--timeout", "5",
                 *([] if "--mpi" in args else ["--mpi", "openmpi"])]
    else:
        args += ["--rounds", "1"] if "--iterations" in args else ["--rounds", "1",
                                                                   "--iterations", "20"]
    return ["diagnose", *args, "--out", str(tmp / "out")]


def _model_case(rng: random.Random, tmp: Path) -> list[str]:
    fig = lambda: rng.choice(["nan", "inf", "-1", "1e999", "x", "nan:1", "2:1", ""])  # noqa: E731
    cases: list[Callable[[], list[str]]] = [
        lambda: ["predict", "-f", "tcp-40g", "-N", rng.choice(["0", "-4", "x", "1000000000",
                                                             "1e18"])],
        lambda: ["predict", "-f", "tcp-40g", "-N", "4", "--ppn", _bad_int(rng, 1)],
        lambda: ["predict", "-f", "tcp-40g", "-N", "4", "--sizes", _bad_size(rng)],
        lambda: ["predict", "-f", "zz" + _junk(rng, 4), "-N", "4"],
        lambda: ["predict", "-f", "tcp-40g", "-N", "4", "--dims", rng.choice(["0x1", "x",
                                                                             "-2x2"])],
        lambda: ["predict", "-f", "tcp-40g", "-N", "4", "--oversubscription",
                 rng.choice(["x", "1,x", ""])],
        lambda: ["define", "fz", "--family", "ib", "--latency-us", fig(),
                 "--bandwidth-MBps", "100"],
        lambda: ["define", "fz", "--family", "ib", "--latency-us", "1",
                 "--bandwidth-MBps", fig()],
        lambda: ["define", "fz", "--family", "ib", "--latency-us", "1", "--bandwidth-MBps",
                 "100", rng.choice(["--shm-MBps", "--gamma-MBps", "--hop-latency-us",
                                    "--rendezvous-us", "--shm-latency-us"]), fig()],
        lambda: ["define", rng.choice(["tcp-40g", "ib-fdr", "a/b", "x\n", ".."]),
                 "--family", "ib", "--latency-us", "1", "--bandwidth-MBps", "100"],
        lambda: ["validate", str(rng.randint(10**5, 10**9)), "-f", "tcp-40g"],
    ]
    return ["model", *rng.choice(cases)(), "--out", str(tmp / "out")]


def _sim_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: ["-N", rng.choice(["0", "-2", "x", "1000000000", "70000"])],
        lambda: ["-N", "4", "--ppn", rng.choice(["0", "-1", "100000"])],
        lambda: ["-N", "4", "--sizes", _bad_size(rng)],
        lambda: ["-N", "4", "--iterations", _bad_int(rng, 1)],
        lambda: ["-N", "4", "--warmup", _bad_int(rng, 0)],
        lambda: ["-N", "4", "--algorithm", "zz" + _junk(rng, 4)],
        lambda: ["-N", "4", "--topology", "zz"],
        lambda: ["-N", "4", "--timeout", _bad_float(rng)],
    ]
    fabric = "zz" + _junk(rng, 3) if rng.random() < 0.1 else "tcp-40g"
    return ["sim", "mpi.allreduce", "-f", fabric, *rng.choice(cases)(),
            "--out", str(tmp / "out")]


def _impair_case(rng: random.Random, tmp: Path) -> list[str]:
    spec = rng.choice([
        "h9:rate=1mbit", "h1:rate=-1mbit", "h1:rate=0", "h1:rate=nanmbit", "h1:delay=xms",
        "h1:loss=200%", "h1:loss=-1%", "h1:queue=0", "h1-h1:rate=1mbit", "h1:zz=1",
        "h1:ecn=x", "h1:dir=sideways", "h0:rate=1mbit", "",
        "h1:" + _junk(rng), _junk(rng)])
    return ["testbed", "up", "--name", "fz", "--hosts", "2", "--impair", spec]


def _bad_id(rng: random.Random) -> str:
    """A run or campaign id that is none: not a number, below 1, or never stored."""
    return rng.choice(["x", "-1", "0", "", "1.5", "9" * 30, str(rng.randint(10**5, 10**9)),
                       "1;id", _junk(rng, 5) + "x"])


def _bad_name(rng: random.Random) -> str:
    """A name that is no name: a path, an option, a newline, empty."""
    return rng.choice(["", "../x", "a/b", "-x", "x\n", ".", "..", "a" * 300, "x\ty",
                       "$(id)", "zz" + _junk(rng, 5).replace(" ", "")])


def _accept_case(rng: random.Random, tmp: Path) -> list[str]:
    spec = tmp / "accept.yaml"
    good = "name: a\nchecks:\n  - kernel: tcp.latency\n    sizes: '8'\n    max_latency_us: 100\n"
    broken = rng.choice([
        "", "checks: 7\n", "name: a\nchecks: []\n", "checks: &a [*a]\n",
        good.replace("100", rng.choice([".nan", "-1", ".inf", "x", "0"])),
        good.replace("tcp.latency", "zz." + _junk(rng, 4).replace("'", "")),
        good + "    zz_unknown: 1\n", good.replace("'8'", rng.choice(["'x'", "'-8'", "''"]))])
    spec.write_text(broken)
    cases: list[Callable[[], list[str]]] = [
        lambda: [str(spec)],
        lambda: [str(tmp / "missing.yaml")],
        lambda: [str(tmp)],  # a directory
        lambda: [str(spec), "--budget", _bad_float(rng)],
        lambda: [str(spec), "--baseline", _bad_id(rng)],
    ]
    args = rng.choice(cases)()
    if args[0] == str(spec) and len(args) > 1:
        spec.write_text(good)
    return ["accept", *args, "--out", str(tmp / "out")]


def _compare_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: [_bad_id(rng), "1"], lambda: ["1", _bad_id(rng)],
        lambda: ["1", "2", "--metric", "zz" + _junk(rng, 4)],
        lambda: ["1", "2", "--tolerance", _bad_float(rng)],
    ]
    return ["compare", *rng.choice(cases)(), "--store", str(tmp / "out")]


def _history_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: [_bad_name(rng)],
        lambda: ["x", "--until", _bad_id(rng)],
        lambda: ["x", "--last", _bad_int(rng, 1)],
        lambda: ["x", "--tolerance", _bad_float(rng)],
        lambda: ["x", "--alpha", rng.choice(["nan", "0", "1", "-0.5", "inf", "x"])],
        lambda: ["x", "--min-nights", _bad_int(rng, 1)],
        lambda: ["x", "--permutations", rng.choice([_bad_int(rng, 1), "1000000000000"])],
    ]
    return ["history", *rng.choice(cases)(), "--store", str(tmp / "out")]


def _hpl_scaling_case(rng: random.Random, tmp: Path) -> list[str]:
    argv = _hpl_case(rng, tmp)
    argv[1] = "scaling"
    if rng.random() < 0.3:
        argv[2:2] = ["--fabric", "zz" + _junk(rng, 3)]
    return argv


def _matrix_sub_case(rng: random.Random, tmp: Path) -> list[str]:
    out = ["--store", str(tmp / "out")]
    cases: list[Callable[[], list[str]]] = [
        lambda: ["advise", "--nodes", _bad_int(rng, 2), *out],
        lambda: ["advise", "--nodes", "4", "--campaign", _bad_id(rng), *out],
        lambda: ["advise", "--nodes", "4", "--hwloc", str(tmp / "missing.xml"), *out],
        lambda: ["advise", "--nodes", "4", "--ppn", _bad_int(rng, 1), *out],
        lambda: ["csv", "--campaign", _bad_id(rng), *out],
        lambda: ["compare", _bad_id(rng), "1", *out],
        lambda: ["compare", "1", _bad_id(rng), *out],
    ]
    return ["matrix", *rng.choice(cases)()]


def _model_more_case(rng: random.Random, tmp: Path) -> list[str]:
    fig = lambda: rng.choice(["nan", "inf", "-1", "1e999", "x", "0", ""])  # noqa: E731
    hpl = ["hpl", "-f", "tcp-40g", "-N", "4"]
    cases: list[Callable[[], list[str]]] = [
        lambda: ["calibrate", _bad_id(rng), "--name", "fzc"],
        lambda: ["calibrate", "1", "--name", _bad_name(rng)],
        lambda: ["calibrate", "1", "--name", "fzc", "--max-breaks", _bad_int(rng, 0)],
        lambda: ["calibrate", "1", "--name", "fzc", "--scale-runs", _bad_id(rng)],
        lambda: ["show", rng.choice(["zz" + _junk(rng, 4), "../tcp-40g", "", "/etc/passwd",
                                     "-x", "x\n"])],
        lambda: ["list", rng.choice(["--zz", "extra", "--store"])],
        lambda: ["hpl", "-f", "tcp-40g", "-N", rng.choice(["0", "-2", "x", "1e18", "4,x"]),
                 "--node-gflops", "100", "--mem-gb", "64"],
        lambda: [*hpl, "--node-gflops", fig(), "--mem-gb", "64"],
        lambda: [*hpl, "--node-gflops", "100", "--mem-gb", fig()],
        lambda: [*hpl, "--node-gflops", "100", "--mem-gb", "64",
                 rng.choice(["--overlap", "--node-cv", "--mem-fraction", "--efficiency-1node"]),
                 fig()],
        lambda: [*hpl, "--node-gflops", "100", "--mem-gb", "64", "--fit-at",
                 rng.choice(["x:y", "", ":", "1:nan", "-1:2"])],
        lambda: [*hpl, "--node-gflops", "100", "--mem-gb", "64", "--band-samples",
                 rng.choice([_bad_int(rng, 1), "1000000000"])],
        lambda: [*hpl, "--node-table", str(tmp / "missing.csv")],
        lambda: [*hpl, "--from-run", _bad_id(rng)],
    ]
    return ["model", *rng.choice(cases)(), "--out", str(tmp / "out")]


def _report_case(rng: random.Random, tmp: Path) -> list[str]:
    cases: list[Callable[[], list[str]]] = [
        lambda: [_bad_id(rng)],
        lambda: ["--fabric", "zz" + _junk(rng, 4)],
        lambda: ["-o", str(tmp / "missing-dir" / "x" / "r.html")],
        lambda: ["--title", "x\0y"],
    ]
    return ["report", *rng.choice(cases)(), "--store", str(tmp / "out")]


def _store_case(rng: random.Random, tmp: Path) -> list[str]:
    notstore = tmp / "notstore"
    notstore.mkdir(exist_ok=True)
    (notstore / "fabench.sqlite").write_bytes(rng.choice([b"", b"not a database\n" * 50,
                                                         bytes(range(256)) * 8]))
    cases: list[Callable[[], list[str]]] = [
        lambda: ["check", "--store", str(notstore)],
        lambda: ["check", "--store", rng.choice(["postgresql://[::1/x", "zz://x",
                                                 "postgresql://a b@c/d"])],
        lambda: ["copy", str(tmp / "missing"), str(tmp / "dst")],
        lambda: ["copy", str(notstore), str(tmp / "dst")],
        lambda: ["copy", str(notstore), str(notstore)],
        lambda: ["export", "zz" + _junk(rng, 4), str(tmp / "x"), "--store", str(notstore)],
        lambda: ["export", "parquet", str(tmp / "pq"), "--store", str(notstore)],
    ]
    return ["store", *rng.choice(cases)()]


def _testbed_case(rng: random.Random, tmp: Path) -> list[str]:
    # names this test's own (the fuzz prefix) and hostile: nothing of anybody else's is named
    name = lambda: rng.choice(["../fz", "-fz", "fz\n", "fz/x", "fz;id", "fz" + "a" * 60,  # noqa: E731
                               " fz", "fz\t"])
    cases: list[Callable[[], list[str]]] = [
        lambda: ["down", name()],
        lambda: ["status", name()],
        lambda: ["exec", "--name", name(), "h1", "true"],
        lambda: ["exec", "--name", "fz", rng.choice(["h0", "h99", "-h1", "../h1", ""]),
                 "true"],
        lambda: ["up", "--name", "fz", "--hosts", rng.choice(["0", "1", "-2", "x", "100000"])],
        lambda: ["up", "--name", "fz", "--hosts", "2",
                 rng.choice(["--mtu", "--rate", "--burst", "--queue", "--switches"]),
                 rng.choice(["0", "-1", "x", "nan", "1e999", "99999999999"])],
    ]
    return ["testbed", *rng.choice(cases)()]


def _tune_case(rng: random.Random, tmp: Path) -> list[str]:
    # never --host-wide: a hostile value must be refused before anything is written, and a
    # wrongly accepted one then touches a namespace that does not exist, not the host
    netns = ["--netns", "fzmissing" + str(os.getpid())]
    profile = tmp / "profile.yaml"
    profile.write_text(rng.choice(["", "sysctl: 7\n", "a: &a [*a]\n",
                                   "sysctl:\n  net.ipv4.tcp_rmem: '$(id)'\n",
                                   "sysctl:\n  ../../etc/x: 1\n", _junk(rng, 60)]))
    cases: list[Callable[[], list[str]]] = [
        lambda: ["check", "--profile", rng.choice(["zz" + _junk(rng, 3), str(profile),
                                                   str(tmp / "missing")]), *netns],
        lambda: ["check", "--window", _bad_float(rng), *netns],
        lambda: ["check", "--netns", _bad_name(rng)],
        lambda: ["apply", rng.choice(["zz" + _junk(rng, 3), str(profile),
                                      str(tmp / "missing")]), *netns],
        lambda: ["apply", "latency", "--netns", _bad_name(rng)],
        lambda: ["revert", "--journal", rng.choice([str(tmp / "missing"), str(profile),
                                                    str(tmp)])],
        lambda: ["ab", "zz" + _junk(rng, 3), *netns],
        lambda: ["ab", "latency", "--rounds", _bad_int(rng, 1), *netns],
        lambda: ["ab", "latency", "--tolerance", _bad_float(rng), *netns],
        lambda: ["profiles", rng.choice(["extra", "--zz"])],
    ]
    return ["tune", *rng.choice(cases)()]


def _doctor_case(rng: random.Random, tmp: Path) -> list[str]:
    return ["doctor", rng.choice(["extra", "--zz", "--json=x", _junk(rng, 4) + "x"])]


def _run_case(rng: random.Random, tmp: Path) -> list[str]:
    """`fabench run` by its options (the spec's own words are the `spec` kind's)."""
    spec = tmp / "run.yaml"
    spec.write_text("name: r\nruns:\n  - kernel: tcp.latency\n    sizes: '8'\n")
    cases: list[Callable[[], list[str]]] = [
        lambda: [str(spec), "--repeats", rng.choice([_bad_int(rng, 1), "1000000000000"])],
        lambda: [str(spec), "--resume", _bad_id(rng)],
        lambda: [str(tmp / "missing.yaml")],
        lambda: [str(spec), "--on", rng.choice(["zz", "hosts", "testbed ../x"])],
    ]
    return ["run", *rng.choice(cases)(), "--no-progress", "--out", str(tmp / "out")]


def _import_case(rng: random.Random, tmp: Path) -> list[str]:
    """`fabench import` by its tool and options (the files' words are the `peer` kind's)."""
    f = tmp / "osu.txt"
    f.write_text("# OSU MPI Latency Test v7.4\n# Size  Avg Latency(us)\n8 1.5\n")
    cases: list[Callable[[], list[str]]] = [
        lambda: ["zz" + _junk(rng, 4), str(f)],
        lambda: [rng.choice(["osu", "imb", "iperf3", "sockperf"]), str(tmp / "missing")],
        lambda: ["osu", str(f), "--ranks", _bad_int(rng, 1)],
        lambda: ["osu", str(f), "--label", rng.choice(["x\n", "a" * 300])],
        # a free name of what the results ran over (ib, ucx:rc,sm): a label's rules
        lambda: ["osu", str(f), "--transport", rng.choice(["x\n", "a" * 300, "\x1b[2J", " "])],
        lambda: ["iperf3", str(f), "--size", rng.choice(["-1", "x", "1e15", ""])],
    ]
    return ["import", *rng.choice(cases)(), "--store", str(tmp / "out")]


NEWER = {"matrix": _matrix_case, "congestion": _congestion_case, "hpl": _hpl_case,
         "diagnose": _diagnose_case, "model": _model_case, "sim": _sim_case,
         "impair": _impair_case, "accept": _accept_case, "compare": _compare_case,
         "history": _history_case, "hpl scaling": _hpl_scaling_case,
         "matrix sub": _matrix_sub_case, "model more": _model_more_case,
         "report": _report_case, "store": _store_case, "testbed": _testbed_case,
         "tune": _tune_case, "doctor": _doctor_case, "run": _run_case,
         "import": _import_case}
NEWER_CASES = int(os.environ.get("FABENCH_FUZZ_NEWER_CASES", "6"))

# The commands each kind's cases reach; with the three older kinds, every command of
# `fabench --help` (test_every_command_has_fuzz_cases walks the parser).
COVERS = {
    "bench": ["bench"], "spec": ["run"], "peer": ["import"], "matrix": ["matrix"],
    "congestion": ["congestion"], "hpl": ["hpl nodes"],
    "diagnose": ["diagnose transports", "diagnose reorder"],
    "model": ["model predict", "model define", "model validate"], "sim": ["sim"],
    "impair": ["testbed up"], "accept": ["accept"], "compare": ["compare"],
    "history": ["history"], "hpl scaling": ["hpl scaling"],
    "matrix sub": ["matrix advise", "matrix csv", "matrix compare"],
    "model more": ["model calibrate", "model show", "model list", "model hpl"],
    "report": ["report"], "store": ["store check", "store copy", "store export"],
    "testbed": ["testbed down", "testbed status", "testbed exec", "testbed up"],
    "tune": ["tune check", "tune apply", "tune revert", "tune ab", "tune profiles"],
    "doctor": ["doctor"], "run": ["run"], "import": ["import"],
}
MAX_DRAWS = 60  # a kind draws until each command it covers had a case (or this many)


@functools.cache
def _commands() -> frozenset[str]:
    """Every command of `fabench --help`, subcommands as "model predict"; a command whose
    subcommand may be left out (`matrix`) is a command of its own too."""
    from fabench.cli import build_parser

    out: set[str] = set()

    def walk(p: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not all(a.required for a in subs):
            out.add(" ".join(path))
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, [*path, name])

    walk(build_parser(), [])
    out.discard("")
    return frozenset(out)


def _command_of(argv: list[str]) -> str:
    two = " ".join(argv[:2])
    return two if two in _commands() else argv[0]


def _draw(kind: str, make: Callable[[random.Random, Path], list[str]], rng: random.Random,
          tmp: Path, least: int) -> Iterator[list[str]]:
    """At least `least` cases, and more until every command of COVERS[kind] had one."""
    want, seen = set(COVERS[kind]), set()
    for n in range(max(least, MAX_DRAWS)):
        if n >= least and want <= seen:
            return
        argv = make(rng, tmp)
        seen.add(_command_of(argv))
        yield argv


def test_every_command_has_fuzz_cases(tmp_path: Path) -> None:
    """A command added to fabench without hostile cases here fails this test; each kind's
    generator must reach the commands it claims (drawn, not run: cheap)."""
    kinds: dict[str, Callable[[random.Random, Path], list[str]]] = {
        "bench": _bench_case, "spec": _spec_case, "peer": _peer_case, **NEWER}
    assert set(kinds) == set(COVERS)
    claimed = {c for cs in COVERS.values() for c in cs}
    assert _commands() - claimed == set(), "commands without fuzz cases"
    assert claimed - _commands() == set(), "fuzz cases for commands that are gone"
    for kind, make in kinds.items():
        rng = random.Random(f"{SEED}-{kind}")
        reached = {_command_of(a) for a in _draw(kind, make, rng, tmp_path, 1)}
        assert reached == set(COVERS[kind]), (kind, reached)
    print(f"fuzz coverage: {len(claimed)} of {len(_commands())} commands")


# Found by this test's cases for the commands it did not cover before (issue 31 audit),
# left for their owners: see the closing note's list.
_FOUND = {
}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=_FOUND[k]) if k in _FOUND else k
                                  for k in NEWER])
def test_fuzz_refuses_hostile_input_to_newer_commands(tmp_path: Path, kind: str) -> None:
    """A bounded count of cases per command (FABENCH_FUZZ_NEWER_CASES, default 6): each
    refused with exit 2 and a message, never a traceback, before anything runs."""
    rng = random.Random(f"{SEED}-{kind}")
    with _testbeds_of(kind):
        for n, argv in enumerate(_draw(kind, NEWER[kind], rng, tmp_path, NEWER_CASES)):
            where = f"seed {SEED} case {n}: fabench {argv!r}"
            try:
                code, err, out = _run(argv)
            except BaseException as exc:
                raise AssertionError(f"{where} raised {type(exc).__name__}: {exc}") from exc
            assert "Traceback" not in err, f"{where}\n{err}"
            assert code == 2, f"{where} exited {code}\n{err}"
            # `store check` reports its finding as its report's PROBLEM line
            assert "error:" in err or "PROBLEM" in out, f"{where}: no message\n{err}"
    print(f"fuzz {kind}: {n + 1} inputs, seed {SEED}")


@contextlib.contextmanager
def _testbeds_of(kind: str) -> Iterator[None]:
    """`testbed up --impair`: a testbed an accepted input would make is the test's own."""
    if kind not in ("impair", "testbed"):
        yield
        return
    with own_testbeds("fbfz" + str(os.getpid() % 10000)):
        yield


@contextlib.contextmanager
def _own_signals() -> Iterator[None]:
    """main() installs fabench's signal handlers; pytest's own come back after each call."""
    saved = {s: signal.getsignal(s) for s in CAUGHT}
    unraisable = sys.unraisablehook
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
        sys.unraisablehook = unraisable


def _run(argv: list[str]) -> tuple[int, str, str]:
    err, out = io.StringIO(), io.StringIO()
    with _own_signals(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue(), out.getvalue()


@pytest.mark.parametrize("kind", ["bench", "spec", "peer"])
def test_fuzz_refuses_hostile_input(tmp_path: Path, kind: str) -> None:
    make = {"bench": _bench_case, "spec": _spec_case, "peer": _peer_case}[kind]
    rng = random.Random(f"{SEED}-{kind}")
    n = 0
    while n < CASES:
        argv = make(rng, tmp_path)
        try:
            code, err, _ = _run(argv)
        except BaseException as exc:  # what the user would see as a traceback
            raise AssertionError(f"seed {SEED} case {n}: fabench {argv!r} raised "
                                 f"{type(exc).__name__}: {exc}") from exc
        where = f"seed {SEED} case {n}: fabench {argv!r}"
        assert "Traceback" not in err, f"{where}\n{err}"
        if kind == "peer" and code == 0:
            n += 1
            continue
        assert code == 2, f"{where} exited {code}\n{err}"
        assert "error:" in err and len(err.strip()) > 10, f"{where}: no message\n{err}"
        n += 1
    print(f"fuzz {kind}: {n} inputs, seed {SEED}")
