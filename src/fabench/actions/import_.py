"""`fabench import osu|imb|iperf3|sockperf FILE...`: peer tools' output into the store."""

import argparse
import sys

from ..importers import import_file
from ..store.database import Store
from ._common import resolve_store, shown


def main(args: argparse.Namespace) -> int:
    spath = resolve_store(args.store, must_exist=False)
    with Store(spath) as store, store.transaction():  # every file, or none
        done = []
        for f in args.files:
            cid, ids = import_file(store, args.tool, f, transport=args.transport,
                                   label=args.label, mpi=args.mpi, ranks=args.ranks,
                                   size=args.size, strict=args.strict,
                                   warn=lambda m: print(f"fabench: warning: {m}",
                                                        file=sys.stderr))
            kernels = ", ".join(sorted({store.run(i).kernel for i in ids}))
            done.append(f"# {f}: campaign c{cid}, runs {' '.join(map(str, ids))} ({kernels})")
    for line in done:
        print(line)
    print(f"# store: {shown(spath)}")
    return 0
