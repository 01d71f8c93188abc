"""`fabench model calibrate|list|show|predict|hpl|validate`: the analytic model (docs/model.md)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import FabenchError
from ..model.calibrate import calibrate
from ..model.collectives import ALGORITHMS, Cluster, predict_all
from ..model.fabric import save_fabric
from ..model.hpl import HplParams, fit_node_cv, hpl_curve, peak_gflops
from ..model.presets import list_fabrics, load_fabric
from ..model.tables import (
    calibration_lines,
    comparison_lines,
    fabric_lines,
    hpl_lines,
    prediction_json,
    prediction_lines,
    validation_lines,
    validation_summary,
)
from ..model.topology import make_topology
from ..model.validate import (
    barrier_exit_skew,
    compare_run,
    merge_repeats,
    run_algorithm,
    simulated_as_prediction,
)
from ..store import Store
from ..units import parse_sizes
from . import COMMANDS
from ._common import add_out_argument, store_path


def add_cluster_arguments(p: argparse.ArgumentParser, nodes_default: int | None = None) -> None:
    p.add_argument("--fabric", "-f", required=True,
                   help="a preset (fabench model list) or a calibration name or JSON file")
    p.add_argument("--nodes", "-N", type=int, default=nodes_default,
                   required=nodes_default is None, help="nodes")
    p.add_argument("--ppn", type=int, default=1, help="ranks per node (default 1)")
    p.add_argument("--topology", default="fat-tree",
                   help="fat-tree (default), torus, single (one switch), loopback (one host)")
    p.add_argument("--hosts-per-leaf", type=int, default=24, help="fat tree (default 24)")
    p.add_argument("--oversubscription", type=float, default=1.0,
                   help="fat-tree uplink oversubscription (default 1: non-blocking)")
    p.add_argument("--dims", help="torus dimensions, e.g. 6x8x5 (default: most cubic)")
    p.add_argument("--cores", type=int, default=None,
                   help="cores shared by all ranks: loopback (default 2), or nodes emulated "
                        "on one machine (fabench's testbed); default elsewhere: a core per rank")
    p.add_argument("--switch-reduce-us", type=float, default=None,
                   help="in-network reduction: latency per reducing switch level (0.2)")


def parse_dims(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.lower().replace(",", "x").split("x"))
    except ValueError:
        raise FabenchError(f"--dims {text!r}: expected e.g. 6x8x5") from None


def cluster_from_args(args: argparse.Namespace) -> Cluster:
    topo = make_topology(args.topology, args.nodes, hosts_per_leaf=args.hosts_per_leaf,
                         oversubscription=args.oversubscription, dims=parse_dims(args.dims),
                         cores=args.cores or 2)
    c = Cluster(args.nodes, args.ppn, topo,
                cores=args.cores if args.topology != "loopback" else None)
    if args.switch_reduce_us is not None:
        c.switch_reduce_us = args.switch_reduce_us
    return c


@COMMANDS.register("model")
def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("model", help="calibrate a fabric model; predict collectives and HPL",
                       description="LogGP-family fabric models calibrated from stored "
                                   "point-to-point runs or taken from published presets; "
                                   "collective algorithms and HPL predicted at any scale. "
                                   "See docs/model.md.")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION")
    msub.required = True

    c = msub.add_parser("calibrate", help="fit a fabric to stored mpi.latency (+ mpi.bw, "
                                          "mpi.bibw) runs")
    c.add_argument("runs", nargs="+", type=int, metavar="RUN", help="run ids in the store")
    c.add_argument("--name", required=True, help="name to store the calibration under")
    c.add_argument("--hops", type=int, default=1,
                   help="switches on the measured path (1: two hosts on a switch; 0: one host)")
    c.add_argument("--hop-latency-us", type=float, default=0.4,
                   help="latency per additional switch (default 0.4: doc 004 cut-through)")
    c.add_argument("--link-MBps", type=float, help="nominal link rate (default: best measured)")
    c.add_argument("--max-breaks", type=int, default=2, help="protocol breakpoints (default 2)")
    c.add_argument("--in-network", action="store_true",
                   help="the switches reduce in the network (SHARP-class IB, doc 000's RoCE): "
                        "`model predict` then offers in-network reduction on a fat tree")
    add_out_argument(c)
    c.set_defaults(func=cmd_calibrate)

    ls = msub.add_parser("list", help="presets and calibrations")
    add_out_argument(ls)
    ls.set_defaults(func=cmd_list)

    sh = msub.add_parser("show", help="one fabric's parameters, sources and assumptions")
    sh.add_argument("fabric")
    add_out_argument(sh)
    sh.set_defaults(func=cmd_show)

    pr = msub.add_parser("predict", help="collective time per algorithm against size")
    add_cluster_arguments(pr)
    pr.add_argument("--collective", "-c", nargs="+", default=list(ALGORITHMS),
                    choices=list(ALGORITHMS), help="default: all")
    pr.add_argument("--algorithm", "-a", nargs="+", help="only these algorithms")
    pr.add_argument("--sizes", default="8:1M", help="sizes (default 8:1M)")
    pr.add_argument("--json", action="store_true")
    add_out_argument(pr)
    pr.set_defaults(func=cmd_predict)

    h = msub.add_parser("hpl", help="HPL efficiency against the number of nodes")
    h.add_argument("--fabric", "-f", required=True)
    h.add_argument("--nodes", "-N", default="1,2,4,8,16,32,64,128,240",
                   help="node counts, comma-separated")
    g = h.add_mutually_exclusive_group()
    g.add_argument("--node-gflops", type=float, help="peak per node (default 518.4, doc 000)")
    g.add_argument("--peak", help="SOCKETS,CORES,GHZ,FLOPS_PER_CYCLE (doc 000: 2,12,2.7,8)")
    h.add_argument("--efficiency-1node", type=float, default=0.7727,
                   help="single-node HPL efficiency (default 0.7727: doc 000, RoCEv2)")
    h.add_argument("--mem-gb", type=float, default=64.0, help="memory per node (default 64)")
    h.add_argument("--mem-fraction", type=float, default=0.8)
    h.add_argument("--nb", type=int, default=192, help="block size (default 192)")
    h.add_argument("--overlap", type=float, default=0.5,
                   help="fraction of broadcast/swap time hidden by look-ahead (default 0.5)")
    h.add_argument("--node-cv", type=float, default=0.005,
                   help="node-to-node rate spread (default 0.005)")
    h.add_argument("--fit-at", metavar="NODES:EFF",
                   help="solve --node-cv so that efficiency at NODES is EFF (e.g. 240:0.7299)")
    add_out_argument(h)
    h.set_defaults(func=cmd_hpl)

    v = msub.add_parser("validate", help="stored collective runs (measured or simulated) "
                                         "against the model's prediction")
    v.add_argument("runs", nargs="+", type=int, metavar="RUN")
    add_cluster_arguments(v, nodes_default=0)
    v.add_argument("--algorithm", "-a", help="when the runs do not record it")
    v.add_argument("--simulated", type=int, nargs="+", metavar="SIMRUN",
                   help="stored simulated runs (fabench sim) of the same collectives and "
                        "algorithms: their times become a column beside the model's")
    add_out_argument(v)
    v.set_defaults(func=cmd_validate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    with Store(store_path(args.out)) as store:
        cal = calibrate(store, args.runs, args.name, max_breaks=args.max_breaks,
                        calibrated_hops=args.hops, hop_latency_us=args.hop_latency_us,
                        link_bandwidth_MBps=args.link_MBps)
    for line in calibration_lines(cal):
        print(line)
    if args.in_network:
        # declared, not measured: point-to-point runs cannot show what the switches compute
        cal.fabric.in_network_reduction = True
        cal.fabric.assumptions.append("in-network reduction: declared (--in-network)")
    path = save_fabric(cal.fabric, args.out)
    print(f"# calibration stored as fabric {args.name!r}: {path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for name in list_fabrics(args.out):
        f = load_fabric(name, args.out)
        print(f"{name:<16} {f.origin:<10} {f.latency_us:>7.2f} us @8B "
              f"{f.peak_bandwidth_MBps:>9.0f} MB/s  {f.source[:60]}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    for line in fabric_lines(load_fabric(args.fabric, args.out)):
        print(line)
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    fabric = load_fabric(args.fabric, args.out)
    cluster = cluster_from_args(args)
    sizes = parse_sizes(args.sizes)
    title = (f"{fabric.name} on {cluster.topology.describe()}, {cluster.nodes} nodes x "
             f"{cluster.ppn} ppn")
    for coll in args.collective:
        only = [a for a in (args.algorithm or []) if a in ALGORITHMS[coll]] or None
        if args.algorithm and not only:
            continue
        pred = predict_all(fabric, cluster, coll, sizes, only)
        if args.json:
            ctx = {"fabric": fabric.name, "nodes": cluster.nodes, "ppn": cluster.ppn,
                   "topology": cluster.topology.name}
            for line in prediction_json(pred, ctx):
                print(line)
        else:
            for line in prediction_lines(pred, title):
                print(line)
    return 0


def cmd_hpl(args: argparse.Namespace) -> int:
    fabric = load_fabric(args.fabric, args.out)
    if args.peak:
        try:
            s, c, ghz, fpc = args.peak.split(",")
            node = peak_gflops(int(s), int(c), float(ghz), int(fpc))
        except ValueError:
            raise FabenchError(f"--peak {args.peak!r}: expected SOCKETS,CORES,GHZ,FPC") from None
    else:
        node = args.node_gflops or peak_gflops(2, 12, 2.7, 8)
    prm = HplParams(node_peak_gflops=node, efficiency_1node=args.efficiency_1node,
                    mem_per_node_gb=args.mem_gb, mem_fraction=args.mem_fraction, nb=args.nb,
                    overlap=args.overlap, node_cv=args.node_cv)
    if args.fit_at:
        n_s, e_s = args.fit_at.split(":")
        cv = fit_node_cv(fabric, int(n_s), float(e_s), prm)
        if cv is None:
            raise FabenchError(f"no node spread in [0, 20 %] gives {e_s} at {n_s} nodes")
        prm = replace(prm, node_cv=cv)
        print(f"# fitted node-to-node spread: {cv * 100:.2f} % (efficiency {e_s} at {n_s})")
    nodes = [int(x) for x in str(args.nodes).split(",") if x]
    title = (f"HPL on {fabric.name}: peak {node:.1f} GFLOPS/node, 1-node efficiency "
             f"{prm.efficiency_1node:.4f}, {prm.mem_per_node_gb:g} GB x {prm.mem_fraction:g}, "
             f"NB {prm.nb}, overlap {prm.overlap:g}, node spread {prm.node_cv * 100:.2f} %")
    for line in hpl_lines(hpl_curve(fabric, nodes, prm), title):
        print(line)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    fabric = load_fabric(args.fabric, args.out)
    with Store(store_path(args.out)) as store:
        comps = []
        for rid in args.runs:
            if not args.nodes:
                args.nodes = store.run(rid).ranks // args.ppn
            comps.append(compare_run(store, rid, fabric, cluster_from_args(args),
                                     args.algorithm))
        merged = merge_repeats(comps)
        sims = {}
        for sid in args.simulated or []:
            srun = store.run(sid)
            if "simulated" not in srun.flags:
                raise FabenchError(f"run {sid} is not a simulated run (fabench sim)")
            coll = srun.kernel.partition(".")[2]
            sims[(srun.kernel, run_algorithm(srun, coll))] = sid
        tables = []
        cluster = cluster_from_args(args)
        sim_skew = barrier_exit_skew(fabric, cluster) if cluster.cores else 0.0
        for c in merged:
            sid = None if c.simulated else sims.get((c.kernel, c.algorithm))
            sim = simulated_as_prediction(store, c, sid, sim_skew) if sid is not None else None
            tables.append((c, sim))
    for c, sim in tables:
        for line in validation_lines(c, sim) if sim else comparison_lines(c):
            print(line)
    if len(tables) > 1:
        for line in validation_summary(tables):
            print(line)
    return 0

