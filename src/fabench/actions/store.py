"""`fabench store check|copy|export`: look after the result store, move it, export it."""

import argparse
import json

from ..errors import FabenchError
from ..report.store_export import export_openmetrics, export_parquet
from ..store.check import check_store
from ..store.check_server import check_server_store
from ..store.copy import copy_store
from ..store.database import Store
from ._common import resolve_store


def check_main(args: argparse.Namespace) -> int:
    if isinstance(args.store, str):  # a postgresql:// URL: what SQL can check on a server
        rep = check_server_store(args.store)
    else:
        rep = check_store(resolve_store(args.store))
    if args.json:
        print(json.dumps(rep.to_json(), indent=1))
        return rep.exit_code
    print(f"# fabench store check: {rep.path}")
    if rep.version is not None:
        names = {"campaigns": "campaigns", "runs": "runs", "results": "results",
                 "samples": "sample series"}
        counts = ", ".join(f"{rep.counts[k]} {n}" for k, n in names.items() if k in rep.counts)
        print(f"# schema version {rep.version}; {counts}; {rep.counts.get('bytes', 0)} bytes")
        if rep.server:
            print("# on a server: sample bytes and JSON columns are not read (`fabench store "
                  "copy URL FILE` and a check of FILE reads them)")
    for check in rep.checks:
        found = [f for f in rep.findings if f.check == check and f.level == "problem"]
        print(f"{'PROBLEM' if found else 'ok':<8} {check}")
        for f in found:
            print(f"         {f.text}")
    for f in rep.findings:
        if f.check not in rep.checks and f.level == "problem":
            print(f"PROBLEM  {f.check}: {f.text}")
    for f in rep.findings:
        if f.level == "note":
            print(f"note     {f.text}")
    verdict = {0: "sound", 3: f"{len(rep.problems)} problem(s) found",
               2: "unreadable"}[rep.exit_code]
    print(f"# {verdict} (exit status {rep.exit_code})")
    return rep.exit_code


def copy_main(args: argparse.Namespace) -> int:
    src_loc = resolve_store(args.src)
    dst_loc = resolve_store(args.dst, must_exist=False)
    if src_loc == dst_loc:
        raise FabenchError("SRC and DST are the same store")
    with Store(src_loc) as src, Store(dst_loc) as dst:
        rep = copy_store(src, dst)
    rows = ", ".join(f"{n} {t}" for t, n in rep.rows.items())
    print(f"# copied {rep.source} -> {rep.target}: {rows}; {rep.sample_values} sample values; "
          "compared row by row: identical")
    return 0


def export_main(args: argparse.Namespace) -> int:
    with Store(resolve_store(args.store)) as store:
        if args.format == "parquet":
            files = export_parquet(store, args.target)
        else:
            files = [export_openmetrics(store, args.target)]
    for f in files:
        print(f"# wrote {f}")
    return 0
