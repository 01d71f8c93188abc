"""`fabench model define|calibrate|list|show|predict|hpl|validate`: the analytic model
(docs/model.md).

Arguments only: fabench.actions.model does the work."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..choices import (
    BAND_SAMPLES,
    COLLECTIVES,
    FAMILIES,
    IN_NETWORK_KINDS,
    PREDICTION_LEVEL,
    TOPOLOGY_KINDS,
)
from ..util.labels import label_arg
from . import COMMANDS
from ._common import add_out_argument


def add_topology_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topology", default="fat-tree", choices=TOPOLOGY_KINDS,
                   help="fat-tree (default), torus, dragonfly, single (one switch), loopback "
                        "(one host)")
    p.add_argument("--hosts-per-leaf", type=int, default=24, help="fat tree (default 24)")
    p.add_argument("--levels", type=int, choices=(2, 3),
                   help="fat-tree levels (default: 2 up to 2 x hosts-per-leaf^2 nodes, else 3)")
    p.add_argument("--leaves-per-pod", type=int,
                   help="3-level fat tree: leaves per pod (default: hosts-per-leaf)")
    p.add_argument("--oversubscription", default="1",
                   help="fat-tree uplink tapering per level from the leaves up, e.g. 2 or "
                        "2,1.5 (default 1: non-blocking)")
    p.add_argument("--dims", help="torus dimensions, e.g. 6x8x5 (default: most cubic)")
    p.add_argument("--dragonfly", metavar="GxCxRxH",
                   help="dragonfly groups x chassis x routers x hosts per router (default: "
                        "balanced for the node count)")


def add_nics_argument(p: argparse.ArgumentParser, flag: str = "--nics-per-node") -> None:
    p.add_argument(flag, type=int, default=1,
                   help="network links (NICs) per node, each at the fabric's link rate; a "
                        "node's ranks spread over them, as MPI libraries give each rank its "
                        "nearest NIC (default 1)")


def add_cluster_arguments(p: argparse.ArgumentParser, nodes_default: int | None = None) -> None:
    p.add_argument("--fabric", "-f", required=True,
                   help="a preset (fabench model list), a saved fabric's name or a fabric file")
    p.add_argument("--nodes", "-N", type=int, default=nodes_default,
                   required=nodes_default is None, help="nodes")
    p.add_argument("--ppn", type=int, default=1, help="ranks per node (default 1)")
    add_nics_argument(p)
    add_topology_arguments(p)
    p.add_argument("--cores", type=int, default=None,
                   help="cores shared by all ranks: loopback (default: this host's), or nodes "
                        "emulated on one machine (fabench's testbed); default elsewhere: a "
                        "core per rank")
    p.add_argument("--switch-reduce-us", type=float, default=None,
                   help="in-network reduction: latency per switch level and direction "
                        "(overrides the fabric's in_network.level_us)")
    p.add_argument("--band-samples", type=int, default=BAND_SAMPLES,
                   help=f"fabric variants per prediction band (default {BAND_SAMPLES}; 0: none)")


@COMMANDS.register("model")
def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("model", help="define or calibrate a fabric model; predict collectives "
                                     "and HPL",
                       description="LogGP-family fabric models defined from published figures, "
                                   "calibrated from stored point-to-point runs, or taken from "
                                   "presets; collective algorithms (and what your MPI runs) and "
                                   "HPL predicted at any scale, with bands. See docs/model.md.")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION")
    msub.required = True

    d = msub.add_parser("define", help="a fabric from published figures")
    d.add_argument("name")
    d.add_argument("--family", required=True, choices=FAMILIES,
                   help="which defaults apply (switch hop latency, eager limit, ...)")
    d.add_argument("--latency-us", required=True,
                   help="small-message latency (half round trip), or a range LOW:HIGH")
    d.add_argument("--bandwidth-MBps", required=True,
                   help="large-message bandwidth (MB/s, 1e6 B/s), or a range LOW:HIGH")
    d.add_argument("--hop-latency-us", help="per extra switch (default: the family's)")
    d.add_argument("--eager-limit", type=int, help="bytes (default: the family's)")
    d.add_argument("--rendezvous-us", help="extra fixed cost above the eager limit")
    d.add_argument("--link-MBps", type=float, help="link rate (default: the bandwidth)")
    d.add_argument("--hops", type=int, default=1,
                   help="switches on the path the latency was measured across (default 1)")
    d.add_argument("--in-network", choices=IN_NETWORK_KINDS,
                   help="switches that reduce: sharp1 (Switch-IB 2), sharp2 (Quantum HDR, "
                        "streaming), roce-inc (document 000), generic")
    d.add_argument("--shm-latency-us", help="same-node latency (default: assumed range)")
    d.add_argument("--shm-MBps", help="same-node bandwidth (default: assumed range)")
    d.add_argument("--node-memory-MBps",
                   help="memory bandwidth a node's ranks share when they copy or reduce at "
                        "once, e.g. the node's STREAM figure (default: the published corpus's "
                        "median, assumed)")
    d.add_argument("--gamma-MBps", help="local reduction rate (default: assumed range)")
    # printed by `model show` and stored with the fabric: a label's rules (no newline that
    # forges a line, no escape sequence)
    d.add_argument("--source", default="", type=_source, help="where the figures come from "
                                                             "(cited in `model show`)")
    add_out_argument(d)
    d.set_defaults(func="fabench.actions.model:cmd_define")

    c = msub.add_parser("calibrate", help="fit a fabric to stored mpi.latency (+ mpi.bw, "
                                          "mpi.bibw, shm) runs")
    c.add_argument("runs", nargs="+", type=int, metavar="RUN", help="run ids in the store")
    c.add_argument("--name", required=True, help="name to store the calibration under")
    c.add_argument("--family", default="custom", choices=FAMILIES,
                   help="which defaults apply to what the runs cannot show (hop latency)")
    c.add_argument("--hops", type=int, default=1,
                   help="switches on the measured path (1: two hosts on a switch; 0: one host)")
    c.add_argument("--hop-latency-us", type=float,
                   help="latency per additional switch (default: the family's, with its "
                        "source)")
    c.add_argument("--link-MBps", type=float, help="nominal link rate (default: best measured)")
    c.add_argument("--max-breaks", type=int, default=2, help="protocol breakpoints (default 2)")
    c.add_argument("--gamma-MBps", type=float,
                   help="local reduction rate (default: measured on this host when the runs "
                        "were, else assumed)")
    c.add_argument("--in-network", nargs="?", const="default", choices=(*IN_NETWORK_KINDS,
                                                                        "default"),
                   help="the switches reduce in the network (default kind: the family's)")
    c.add_argument("--scale-runs", type=int, nargs="+", metavar="RUN",
                   help="stored collective runs on a few nodes (e.g. 8-16): the terms that grow "
                        "with the job (step noise, NIC gap, node memory) are fitted to them, "
                        "so that `model predict` at many nodes uses them (docs/model.md, "
                        "'Small to large')")
    c.add_argument("--scale-ppn", type=int, default=1,
                   help="ranks per node of the --scale-runs (default 1); their nodes are "
                        "ranks / ppn on a fat tree of 24 hosts per leaf")
    add_nics_argument(c, "--scale-nics-per-node")
    add_out_argument(c)
    c.set_defaults(func="fabench.actions.model:cmd_calibrate")

    ls = msub.add_parser("list", help="presets and saved fabrics")
    add_out_argument(ls)
    ls.set_defaults(func="fabench.actions.model:cmd_list")

    sh = msub.add_parser("show", help="one fabric's parameters, sources and assumptions")
    sh.add_argument("fabric")
    add_out_argument(sh)
    sh.set_defaults(func="fabench.actions.model:cmd_show")

    pr = msub.add_parser("predict", help="collective time per algorithm against size")
    add_cluster_arguments(pr)
    pr.add_argument("--collective", "-c", nargs="+", default=list(COLLECTIVES),
                    choices=list(COLLECTIVES), help="default: all")
    pr.add_argument("--algorithm", "-a", nargs="+", help="only these algorithms")
    pr.add_argument("--mpi", default="openmpi,mpich",
                    help="libraries whose default choice per size is a column: openmpi "
                         "(4.1 and later), openmpi-4.0 (3.0-4.0.x, older rules), mpich, "
                         "comma-separated, or none (default openmpi,mpich)")
    pr.add_argument("--sizes", default="8:1M", help="sizes (default 8:1M)")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--bands", choices=("interval", "parameters"), default="interval",
                    help="interval (default): a prediction interval at --level, split "
                         "conformal over the published corpus's residuals; parameters: the "
                         "5th-95th percentile over fabric variants (how well the inputs are "
                         "known, not where the truth lies)")
    pr.add_argument("--level", type=float, default=PREDICTION_LEVEL,
                    help=f"nominal level of the prediction interval (default {PREDICTION_LEVEL:g})")
    add_out_argument(pr)
    pr.set_defaults(func="fabench.actions.model:cmd_predict")

    h = msub.add_parser("hpl", help="HPL efficiency against the number of nodes")
    h.add_argument("--fabric", "-f", required=True)
    h.add_argument("--nodes", "-N", default="1,2,4,8,16,32,64,128,240",
                   help="node counts, comma-separated")
    g = h.add_mutually_exclusive_group()
    g.add_argument("--node-gflops", type=float, help="peak per node")
    g.add_argument("--peak", help="SOCKETS,CORES,GHZ,FLOPS_PER_CYCLE (doc 000: 2,12,2.7,8)")
    h.add_argument("--efficiency-1node", type=float,
                   help="single-node HPL efficiency (default: from --node-table)")
    h.add_argument("--mem-gb", type=float, help="memory per node (GB)")
    h.add_argument("--node-table", type=Path,
                   help="measured per-node HPL rates (JSON or CSV, docs/model.md): node spread, "
                        "1-node efficiency")
    h.add_argument("--mem-fraction", type=float, default=0.8)
    h.add_argument("--nb", type=int, default=192, help="block size (default 192)")
    h.add_argument("--overlap", type=float, default=0.5,
                   help="fraction of broadcast/swap time hidden by look-ahead (default 0.5)")
    h.add_argument("--node-cv", type=float,
                   help="node-to-node rate spread (default: the node table's, else 0)")
    h.add_argument("--fit-at", metavar="NODES:EFF",
                   help="solve the node spread so that efficiency at NODES is EFF: the result "
                        "is fitted, not predicted")
    h.add_argument("--band-samples", type=int, default=BAND_SAMPLES)
    h.add_argument("--from-run", type=int, metavar="RUN",
                   help="a stored 1-node hpcc.hpl run: its efficiency and per-node peak")
    h.add_argument("--measured", type=int, nargs="+", metavar="RUN",
                   help="stored hpcc.hpl runs to show beside the model's row of their node "
                        "count")
    h.add_argument("--cores", type=int,
                   help="nodes emulated on one machine (a testbed) share this many cores: a "
                        "node's rate is shared once the nodes outnumber them")
    add_out_argument(h)
    h.set_defaults(func="fabench.actions.model:cmd_hpl")

    v = msub.add_parser("validate", help="stored collective runs (measured or simulated), or "
                                         "the published corpus, against the model")
    v.add_argument("runs", nargs="*", type=int, metavar="RUN")
    v.add_argument("--published", action="store_true",
                   help="the published validation corpus (docs/model.md): fit on its fit "
                        "set, error on its test set")
    v.add_argument("--fabric", "-f", help="for stored runs")
    v.add_argument("--nodes", "-N", type=int, default=0,
                   help="default: each run's ranks / --ppn (runs of several sizes at once)")
    v.add_argument("--ppn", type=int, default=1)
    add_nics_argument(v)
    add_topology_arguments(v)
    v.add_argument("--cores", type=int, default=None)
    v.add_argument("--band-samples", type=int, default=BAND_SAMPLES)
    v.add_argument("--algorithm", "-a", help="when the runs do not record it")
    v.add_argument("--simulated", type=int, nargs="+", metavar="SIMRUN",
                   help="stored simulated runs (fabench sim) of the same collectives and "
                        "algorithms: their times become a column beside the model's")
    add_out_argument(v)
    v.set_defaults(func="fabench.actions.model:cmd_validate", switch_reduce_us=None)


def _source(text: str) -> str:
    return label_arg(text) if text else text

