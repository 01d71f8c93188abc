"""A seeded fuzz test (issue 19): hostile command-line values, campaign specs and peer-tool
output files, a fixed number of each, each run through the CLI's own entry point in this
process. Every generated input is invalid by construction; each must be refused with exit
status 2 and a `fabench: error:` message (peer files may also import, status 0), and none may
escape as an exception (a traceback for the user).

FABENCH_FUZZ_CASES is the number of inputs of each kind (default 30: a run takes the same
inputs whatever the host's load, a longer fuzz asks for more), FABENCH_FUZZ_SEED picks them (a
failure prints its seed and case, so it replays).
"""

import contextlib
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


# --- the rest of the command line (issue 31): every command has hostile cases ---------------

def _label(rng: random.Random) -> str:
    return rng.choice(["", " ", "a\nb", "a\x1b[31mred", "a" * 300, "x\ty", "\x00"])


def _path(rng: random.Random, tmp: Path) -> str:
    return rng.choice([str(tmp / "missing" / "x.sqlite"), "a" * 300, str(tmp / "plain.txt"),
                       str(tmp), "postgresql://u:p@127.0.0.1:1/db", "postgresql://;id@h/d",
                       "postgresql://" + "a" * 300])


def _store_case(rng: random.Random, tmp: Path) -> list[str]:
    (tmp / "plain.txt").write_text("not a store")
    s = _path(rng, tmp)
    return rng.choice([
        ["store", "check", "--store", s],
        ["store", "copy", s, str(tmp / "copy.sqlite")],
        ["store", "export", rng.choice(["parquet", "openmetrics"]), str(tmp / "exp"),
         "--store", s],
        ["report", "--store", s, "-o", str(tmp / "r.html")],
        ["history", "nightly", "--store", s],
        ["compare", "1", "2", "--store", s],
    ])


def _read_case(rng: random.Random, tmp: Path) -> list[str]:
    """history, compare and report over a real (empty) store, one hostile value each."""
    from fabench.store.database import Store

    store = tmp / "s.sqlite"
    if not store.exists():
        Store(store).close()
    st = ["--store", str(store)]
    return rng.choice([
        lambda: ["history", _label(rng), *st],
        lambda: ["history", "n", "--last", _bad_int(rng, 2), *st],
        lambda: ["history", "n", "--tolerance", _bad_float(rng), *st],
        lambda: ["history", "n", "--alpha", rng.choice(["0", "1", "1.5", "nan", "x"]), *st],
        lambda: ["history", "n", "--min-nights", _bad_int(rng, 1), *st],
        lambda: ["history", "n", "--permutations", _bad_int(rng, 1), *st],
        lambda: ["compare", _junk(rng) + "zz", "2", *st],
        lambda: ["compare", "1", "2", "--tolerance", _bad_float(rng), *st],
        lambda: ["report", _junk(rng) + "zz", *st, "-o", str(tmp / "r.html")],
        lambda: ["report", "--fabric", "zz" + _junk(rng, 4), *st, "-o", str(tmp / "r.html")],
    ])()


ACCEPT_BAD = [
    "checks: 5", "name: x\nchecks: []", "a: &a [*a]",
    'name: "a\\nb\\x1b[31m"\nchecks: [\'latency_us <= 1 @ 8\']',
    "checks:\n - check: 'latency_us <= nan @ 8'", "checks:\n - check: 'zz <= 1 @ 8'",
    "checks:\n - check: 'latency_us <= 1 @ -8'",
    "checks:\n - check: 'latency_us <= 1 @ 8'\n   transport: ';id'",
    "checks:\n - check: 'latency_us <= 1 @ 8'\n   iterations: 0",
    "checks:\n - check: 'latency_us <= 1 @ 8'\n   hosts: [a, b, c]",
    "checks:\n - check: 'latency_us <= 1 @ 8'\n   after: [nothing]",
    "checks:\n - check: 'latency_us <= 1 x predicted @ 8'",
    "repeats: 0\nchecks: ['latency_us <= 1 @ 8']",
    "timeout_s: nan\nchecks: ['latency_us <= 1 @ 8']",
]


def _accept_case(rng: random.Random, tmp: Path) -> list[str]:
    (tmp / "plain.txt").write_text("not a store")
    spec = tmp / f"a{rng.randrange(10**6)}.yaml"
    if rng.random() < 0.7:
        spec.write_text(rng.choice(ACCEPT_BAD))
        return ["accept", str(spec), "--out", str(tmp / "out")]
    spec.write_text("checks: ['latency_us <= 1000 @ 8']\n")
    return ["accept", str(spec), "--out", str(tmp / "out"), *rng.choice([
        ["--budget", rng.choice(["nan", "-1", "x", "1e999"])],
        ["--baseline", "zz" + _junk(rng, 6)],
        ["--on", "zz" + _junk(rng, 6)],
        ["--on", "testbed", rng.choice(["../x", "-x", "zz\n"])],
        ["--on", "hosts", str(tmp / "missing-hosts")],
        # not a missing directory: a store given there is made
        ["--store", rng.choice(["a" * 300, str(tmp / "plain.txt"), "postgresql://;id@h/d"])],
    ])]


def _tune_case(rng: random.Random, tmp: Path) -> list[str]:
    (tmp / "plain.txt").write_text("not a journal")
    prof = tmp / f"p{rng.randrange(10**6)}.yaml"
    prof.write_text(rng.choice(["settings: 5", "a: &a [*a]", "name: x\nsettings:\n - {kind: zz}",
                                "name: x\nsettings:\n - {kind: sysctl, name: ';id', value: 1}"]))
    target = ["--netns", "fbfz-none-" + _junk(rng, 3).replace(" ", "")]
    return rng.choice([
        lambda: ["tune", "check", "--profile", rng.choice([str(prof), "zz" + _junk(rng, 4),
                                                           "a" * 300])],
        lambda: ["tune", "check", "--profile", "tcp-throughput", "--iface", _label(rng)],
        lambda: ["tune", "check", "--profile", "tcp-throughput", "--iface", "zz$(id)"],
        lambda: ["tune", "check", "--window", rng.choice(["nan", "-1", "1e9", "x"])],
        lambda: ["tune", "apply", str(prof), *target, "--dry-run"],
        lambda: ["tune", "apply", "tcp-throughput", *target, "--dry-run"],
        lambda: ["tune", "revert", "--journal", str(tmp / "plain.txt")],
        lambda: ["tune", "ab", "tcp-throughput", "--bench", "zz" + _junk(rng, 3), *target],
        lambda: ["tune", "ab", "tcp-throughput", "--bench", "tcp.latency", "--rounds",
                 _bad_int(rng, 1), *target],
    ])()


def _testbed_case(rng: random.Random, tmp: Path) -> list[str]:
    return rng.choice([
        lambda: ["testbed", "up", "--name", rng.choice(["", "a" * 300, "A-B", "x\n", "../x",
                                                        "-x", "a b"])],
        lambda: ["testbed", "up", "--name", "fz", "--hosts", _bad_int(rng, 1)],
        lambda: ["testbed", "up", "--name", "fz", "--mtu", rng.choice(["0", "-1", "x",
                                                                       "100000"])],
        lambda: ["testbed", "up", "--name", "fz", "--rate", "zz" + _junk(rng, 4)],
        lambda: ["testbed", "up", "--name", "fz", "--rate", "1gbit", "--burst", "-1"],
        lambda: ["testbed", "up", "--name", "fz", "--rate", "1gbit", "--queue", "xms"],
        lambda: ["testbed", "up", "--name", "fz", "--sysctl", rng.choice(["x", "=1", "a/b=1",
                                                                          "net.x=1;id"])],
        lambda: ["testbed", "up", "--name", "fz", "--switches", _bad_int(rng, 1)],
        lambda: ["testbed", "down", rng.choice(["a" * 300, "x\n", "../x"])],
    ])()


def _doctor_case(rng: random.Random, tmp: Path) -> list[str]:
    return ["doctor", rng.choice(["--zz", "--json=x", _junk(rng) + "zz"])]


NEWER = {"matrix": _matrix_case, "congestion": _congestion_case, "hpl": _hpl_case,
         "diagnose": _diagnose_case, "model": _model_case, "sim": _sim_case,
         "impair": _impair_case, "store": _store_case, "read": _read_case,
         "accept": _accept_case, "tune": _tune_case, "testbed": _testbed_case,
         "doctor": _doctor_case}
# Which kinds reach each command of `fabench --help` (the older three kinds included):
# a command added without hostile cases fails test_fuzz_covers_every_command.
COVERS = {"bench": "bench", "run": "spec", "import": "peer", "matrix": "matrix",
          "congestion": "congestion", "hpl": "hpl", "diagnose": "diagnose", "model": "model",
          "sim": "sim", "testbed": "impair testbed", "store": "store", "report": "store read",
          "history": "store read", "compare": "store read", "accept": "accept",
          "tune": "tune", "doctor": "doctor"}
NEWER_CASES = int(os.environ.get("FABENCH_FUZZ_NEWER_CASES", "6"))


@pytest.mark.parametrize("kind", list(NEWER))
def test_fuzz_refuses_hostile_input_to_newer_commands(tmp_path: Path, kind: str) -> None:
    """A bounded count of cases per command (FABENCH_FUZZ_NEWER_CASES, default 6): each
    refused with exit 2 and a message, never a traceback, before anything runs."""
    rng = random.Random(f"{SEED}-{kind}")
    with _testbeds_of(kind):
        for n in range(NEWER_CASES):
            argv = NEWER[kind](rng, tmp_path)
            where = f"seed {SEED} case {n}: fabench {argv!r}"
            try:
                code, err, out = _run(argv)
            except BaseException as exc:
                raise AssertionError(f"{where} raised {type(exc).__name__}: {exc}") from exc
            assert "Traceback" not in err, f"{where}\n{err}"
            assert code == 2, f"{where} exited {code}\n{err}"
            # `store check` reports its finding as its report's PROBLEM line
            assert "error:" in err or "PROBLEM" in out, f"{where}: no message\n{err}"
    print(f"fuzz {kind}: {NEWER_CASES} inputs, seed {SEED}")


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


def test_fuzz_covers_every_command() -> None:
    """Every command of the parser has hostile cases here (COVERS names their kinds)."""
    from fabench.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = set(sub.choices)  # type: ignore[union-attr]
    assert commands == set(COVERS), (sorted(commands - set(COVERS)),
                                     sorted(set(COVERS) - commands))
    kinds = set(NEWER) | {"bench", "spec", "peer"}
    assert {k for v in COVERS.values() for k in v.split()} <= kinds
