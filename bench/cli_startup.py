"""How long `fabench` takes to start: whole-process wall time of `fabench --help`,
`fabench bench --help` and, for contrast, a command that loads its work (`fabench model
list`), with the bare interpreter's start as the floor. Prints min/median/max of N runs each.

    python bench/cli_startup.py [--runs 10] [--python PATH]...

Each --python is an interpreter with fabench installed (default: this one); several compare
installs (before/after a change) in one sitting, interleaved so that a burst of host load
hits all of them. Where the time goes: `python -X importtime -m fabench --help`.
"""

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": ["-c", "pass"],
    "fabench --help": ["-m", "fabench", "--help"],
    "fabench bench --help": ["-m", "fabench", "bench", "--help"],
    "fabench model list": ["-m", "fabench", "model", "list"],
}


def once(python: str, args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--python", action="append", help="interpreter with fabench installed")
    args = ap.parse_args()
    pythons = args.python or [sys.executable]
    times: dict[tuple[str, str], list[float]] = {(p, c): [] for p in pythons for c in CASES}
    for p in pythons:  # warm the page cache and the byte-code caches first
        for argv in CASES.values():
            once(p, argv)
    for _ in range(args.runs):
        for case, argv in CASES.items():
            for p in pythons:
                times[(p, case)].append(once(p, argv))
    print(f"# whole-process wall time, {args.runs} runs each: min / median / max (s)")
    for p in pythons:
        print(f"# {p}")
        for case in CASES:
            t = times[(p, case)]
            print(f"  {case:<24} {min(t):6.3f} {statistics.median(t):6.3f} {max(t):6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
