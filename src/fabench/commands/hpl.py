"""`fabench hpl nodes|scaling`: single-node HPL on every node (the node-consistency table);
HPL on 1, 2, 4 .. N nodes (efficiency against N, the model beside each).

Arguments only: fabench.actions.hpl does the work."""

import argparse

from ..choices import HPL_NODE_THRESHOLD
from ..hpc.hpccinf import DEFAULT_MEMORY_FRACTION, DEFAULT_NB
from . import COMMANDS
from ._common import add_on_argument, add_out_argument


@COMMANDS.register("hpl")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("hpl", help="HPL (hpcc) per node: the node-consistency check",
                       description="Run HPL through Debian's hpcc. See docs/hpc.md.")
    hsub = p.add_subparsers(dest="hpl_cmd", required=True)
    n = hsub.add_parser("nodes", help="single-node HPL on every node, min/max/spread/CV, "
                                      "slow nodes flagged")
    add_on_argument(n)
    n.add_argument("--nodes", help="comma-separated node names (default: every node)")
    n.add_argument("--sizes", help="HPL's N (default: --memory-fraction of each node's "
                                    "memory)")
    n.add_argument("--memory-fraction", type=float, default=DEFAULT_MEMORY_FRACTION,
                   help=f"N fills this fraction of the node's memory (default "
                        f"{DEFAULT_MEMORY_FRACTION}, document 000's rule)")
    n.add_argument("--nb", type=int, default=DEFAULT_NB, help=f"HPL's NB (default {DEFAULT_NB})")
    n.add_argument("--ranks-per-node", type=int,
                   help="ranks on each node (default: its physical cores)")
    n.add_argument("--peak", type=float, metavar="GFLOPS",
                   help="the node's Rpeak (default: sockets x cores x GHz x FLOPs/cycle, "
                        "read from the node)")
    n.add_argument("--blas", default="openblas",
                   help="openblas (default), system (the host's alternative), or a directory "
                        "holding libblas.so.3")
    n.add_argument("--threshold", type=float, default=HPL_NODE_THRESHOLD, metavar="FRACTION",
                   help=f"flag nodes this fraction below the median (default "
                        f"{HPL_NODE_THRESHOLD}: ~70x the 0.07 %% spread of document 000's "
                        "consistent nodes)")
    n.add_argument("--sequential", action="store_true",
                   help="one node after the other (default: all at once)")
    n.add_argument("--mpi", default="openmpi", help="MPI flavour (Debian's hpcc: openmpi)")
    n.add_argument("--timeout", type=float, default=1800.0, help="seconds per node")
    n.add_argument("--json", action="store_true",
                   help="the table as JSON (a node table `model hpl --node-table` reads)")
    add_out_argument(n)
    n.set_defaults(func="fabench.actions.hpl:cmd_nodes")

    s = hsub.add_parser("scaling", help="HPL on 1, 2, 4 .. N hosts as one campaign: "
                                        "efficiency against N, the model beside each")
    add_on_argument(s)
    s.add_argument("--nodes", help="node counts, comma-separated (default: 1, 2, 4 .. up to "
                                   "every host, and every host)")
    s.add_argument("--sizes", help="HPL's N: one for every count, or one per count (default: "
                                   "--memory-fraction of the memory of the machines the ranks "
                                   "are on)")
    s.add_argument("--memory-fraction", type=float, default=DEFAULT_MEMORY_FRACTION,
                   help=f"N fills this fraction of each node's memory (default "
                        f"{DEFAULT_MEMORY_FRACTION})")
    s.add_argument("--nb", type=int, default=DEFAULT_NB, help=f"HPL's NB (default {DEFAULT_NB})")
    s.add_argument("--ranks-per-node", type=int,
                   help="ranks on each node (default: its physical cores; 1 when the hosts "
                        "are one machine, a testbed)")
    s.add_argument("--peak", type=float, metavar="GFLOPS", help="the node's Rpeak (default: "
                                                                "read from the node)")
    s.add_argument("--blas", default="openblas",
                   help="openblas (default), system, or a directory holding libblas.so.3")
    s.add_argument("--fabric", "-f", metavar="NAME",
                   help="a calibrated fabric (saved, file or preset): the model's efficiency "
                        "beside each count, from the 1-node run (stored with the campaign, so "
                        "its report shows it too)")
    s.add_argument("--mpi", default="openmpi", help="MPI flavour (Debian's hpcc: openmpi)")
    s.add_argument("--transport", default="auto",
                   help="at every count (default auto: MPI's own choice, shared memory within "
                        "a node and the network across)")
    s.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    s.add_argument("--json", action="store_true", help="the section as JSON (as the "
                                                       "report's 'hpl')")
    add_out_argument(s)
    s.set_defaults(func="fabench.actions.hpl:cmd_scaling")
