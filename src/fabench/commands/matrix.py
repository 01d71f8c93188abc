"""`fabench matrix`: measure every pair of hosts, flag bad links and slow nodes (exit 3), infer
the switch groups; `fabench matrix advise --nodes K`: where a K-host job should run;
`fabench matrix csv`: a stored matrix as CSV.

Arguments only: fabench.actions.matrix does the work."""

import argparse
from pathlib import Path

from . import COMMANDS
from ._common import (
    add_on_argument,
    add_out_argument,
    add_store_argument,
)


@COMMANDS.register("matrix")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "matrix", help="all-pairs latency and bandwidth: bad links, slow nodes, switch groups",
        description="Measure every ordered pair of hosts with mpi.matrix (one rank per host, "
                    "N-1 round-robin rounds; --kernel tcp: tcp.latency and tcp.bw pair jobs in "
                    "the same rounds, for hosts without MPI), judge each link and node by a "
                    "robust score (modified z-score > 3.5, Iglewicz & Hoaglin), retest the "
                    "suspects one pair at a time, print one line per verdict. Exit status: 0 "
                    "nothing flagged, 3 a link or node flagged, 1 the measurement failed, 2 "
                    "usage (docs/matrix.md).")
    add_on_argument(p)
    p.add_argument("--size", default="1M", help="bandwidth message size (default: 1M)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--concurrent", dest="mode", action="store_const", const="concurrent",
                      help="all pairs of a round at once (default)")
    mode.add_argument("--isolated", dest="mode", action="store_const", const="isolated",
                      help="one pair at a time, the others wait at a barrier")
    p.add_argument("--kernel", choices=("mpi", "tcp"), default="mpi",
                   help="mpi: one mpi.matrix job per pass (default); tcp: a tcp.latency and "
                        "a tcp.bw client/server job per direction, round by round, started "
                        "through the scheduler's agent (no MPI needed; --on testbed or hosts)")
    p.add_argument("--pairs", metavar="I:J,...",
                   help="only these ordered pairs (rank numbers or host names)")
    p.add_argument("--no-retest", action="store_true",
                   help="flag on the first pass alone (no isolated retest of the suspects)")
    p.add_argument("--hosts", type=int, metavar="N",
                   help="hosts in the allocation (Slurm; a testbed or hostfile says itself)")
    p.add_argument("--window", type=int, default=4, help="messages per window (default: 4)")
    p.add_argument("--iterations", type=int, default=4,
                   help="bandwidth windows per direction (default: 4)")
    p.add_argument("--lat-iterations", type=int, default=200,
                   help="8-byte ping-pongs per direction (default: 200)")
    p.add_argument("--mpi", default="openmpi", help="openmpi | mpich (default: openmpi)")
    p.add_argument("--transport", default="tcp", help="MPI transport (default: tcp)")
    p.add_argument("--topology", metavar="FILE",
                   help="declared topology (Slurm topology.conf or `SWITCH: HOST ...` lines) "
                        "to compare the inferred groups with")
    p.add_argument("--groups", type=int, metavar="K",
                   help="cut the clustering into K switch groups (default: inferred)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per pass")
    p.add_argument("--resume", type=int, metavar="CAMPAIGN",
                   help="measure only the directions a stored matrix lacks (a host died "
                        "mid-matrix, or fabench was killed before its verdicts), then judge "
                        "them all")
    p.add_argument("--json", action="store_true", help="the whole judgement as one JSON object")
    add_out_argument(p)
    p.set_defaults(func="fabench.actions.matrix:main", mode="concurrent")

    sp = p.add_subparsers(dest="matrix_action", metavar="{advise,csv,compare}")
    a = sp.add_parser("advise", help="the K hosts with the best measured connectivity")
    a.add_argument("--nodes", type=int, required=True, metavar="K")
    a.add_argument("--campaign", type=int, help="the matrix's campaign id (default: latest)")
    a.add_argument("--hwloc", type=Path, metavar="FILE",
                   help="a node's topology (`lstopo-no-graphics --of xml` run there; default: "
                        "this machine's) for the NIC's NUMA locality and the binding")
    a.add_argument("--nic", metavar="IFACE", help="the NIC (default: the only one hwloc lists)")
    a.add_argument("--ppn", type=int, default=1,
                   help="ranks per node to bind near the NIC (default: 1)")
    add_store_argument(a)
    a.set_defaults(func="fabench.actions.matrix:main_advise")
    c = sp.add_parser("csv", help="a stored matrix as CSV (one row per direction)")
    c.add_argument("--campaign", type=int, help="the matrix's campaign id (default: latest)")
    add_store_argument(c)
    c.set_defaults(func="fabench.actions.matrix:main_csv")
    d = sp.add_parser("compare", help="two stored matrices (before and after a repair), per link")
    d.add_argument("before", type=int, help="campaign id of the first matrix")
    d.add_argument("after", type=int, help="campaign id of the second")
    d.add_argument("--all", action="store_true", help="also the links that stayed the same")
    add_store_argument(d)
    d.set_defaults(func="fabench.actions.matrix:main_compare")
