#!/usr/bin/env python3
"""Where the published corpus's leave-one-system-out error sits (issue 30): per system and
per class of test row (collective x message size band x ranks per node), each one's share of
the summed |log(predicted / published)|, its median signed error (the model's bias there:
negative = too fast) and its median |error|; then the largest single misses.

    python bench/model_errors.py                  # the package's corpus
    python bench/model_errors.py --corpus FILE    # another corpus file
    python bench/model_errors.py --top 30         # more of the largest misses

Scored as `fabench model validate --published` scores: test rows (times and ratios) only,
each predicted from its own system's fit rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import fabench.model.published as pub


def size_band(r: pub.Row) -> str:
    """Latency-bound (< 8 KiB: one or a few packets per message) or bandwidth-bound."""
    if pub._innet(r):
        return "in-network"
    return "small" if r.size < 8192 else "large"


def rpn(r: pub.Row) -> str:
    return "1 rpn" if r.ppn <= 1 else ("2-31 rpn" if r.ppn < 32 else ">=32 rpn")


def table(title: str, groups: dict[str, list[pub.Row]], total: float) -> list[str]:
    lines = [f"{title:<44} {'rows':>4} {'share':>6} {'med signed':>10} {'med |err|':>9}"]
    for name, rs in sorted(groups.items(),
                           key=lambda kv: -sum(pub._log_residual(r) for r in kv[1])):
        share = sum(pub._log_residual(r) for r in rs) / total
        signed = float(np.median([r.error for r in rs]))
        lines.append(f"{name:<44} {len(rs):>4} {share * 100:>5.1f}% {signed * 100:>+9.1f}% "
                     f"{float(np.median(np.abs([r.error for r in rs]))) * 100:>8.1f}%")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=pub.CORPUS)
    ap.add_argument("--top", type=int, default=20, help="largest single misses to list")
    args = ap.parse_args()
    res = pub.run_corpus(args.corpus, band_samples=0)
    tests = [r for r in res.rows if r.split == "test" and pub._scored(r)]
    total = sum(pub._log_residual(r) for r in tests) or 1.0
    by_system: dict[str, list[pub.Row]] = {}
    by_class: dict[str, list[pub.Row]] = {}
    for r in tests:
        by_system.setdefault(r.system, []).append(r)
        what = "in-network" if pub._innet(r) else r.collective
        by_class.setdefault(f"{what} {size_band(r)} {rpn(r)}", []).append(r)
    print(f"# {len(tests)} test rows, median |error| "
          f"{float(np.median(np.abs([r.error for r in tests]))) * 100:.1f} %")
    for line in table("system", by_system, total) + [""] + \
            table("class (collective, size band, ranks/node)", by_class, total) + [""]:
        print(line)
    print(f"{'largest misses':<16} {'case':<52} {'predicted':>10} {'published':>10} {'error':>8}")
    for r in sorted(tests, key=lambda r: -pub._log_residual(r))[:args.top]:
        print(f"{r.system:<16} {r.case:<52} {r.predicted:>10.4g} {r.published:>10.4g} "
              f"{r.error * 100:>+7.0f}%")


if __name__ == "__main__":
    main()
