"""`fabench model define|calibrate|list|show|predict|hpl|validate`: the analytic model
(docs/model.md)."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import replace

from ..errors import FabenchError
from ..model.apps import APPS, compare_app_run
from ..model.calibrate import calibrate
from ..model.catalog import list_fabrics, load_fabric, save_fabric
from ..model.collectives import ALGORITHMS, predict_all
from ..model.cost import Cluster
from ..model.decisions import MPI_LIBRARIES
from ..model.define import Figure, Published, define_fabric
from ..model.fabric import Fabric
from ..model.families import in_network_defaults
from ..model.hpl import (
    MeasuredHpl,
    fit_node_cv,
    hpl_curve,
    load_node_table,
    measured_hpl,
    params_from,
    peak_gflops,
)
from ..model.intervals import (
    SCALE_FIT_KEY,
    add_intervals,
    corpus_scores,
    fabric_sigma,
    interval,
    user_cache_dir,
)
from ..model.limits import MODEL_MAX_NODES, check_cores, check_model_scale, check_nics
from ..model.published import corpus_lines, run_corpus
from ..model.scale import extrapolation_error, fit_scale
from ..model.tables import (
    calibration_lines,
    comparison_lines,
    fabric_lines,
    hpl_lines,
    hpl_measured_lines,
    prediction_json,
    prediction_lines,
    validation_lines,
    validation_summary,
)
from ..model.topology import TopologySpec
from ..model.uncertainty import add_bands, band_of
from ..model.validate import (
    barrier_exit_skew,
    compare_run,
    merge_repeats,
    run_algorithm,
    scale_observations,
    simulated_as_prediction,
)
from ..store.database import Store
from ..util.units import parse_sizes
from ._common import store_of


def _dims(text: str | None, what: str, n: int | None = None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        out = tuple(int(x) for x in text.lower().replace(",", "x").split("x"))
    except ValueError:
        raise FabenchError(f"{what} {text!r}: expected e.g. 6x8x5") from None
    if n is not None and len(out) != n or any(x < 1 for x in out):
        raise FabenchError(f"{what} {text!r}: {n or 'positive'} numbers")
    if math.prod(out) > MODEL_MAX_NODES:
        # 100000x100000x100000 was taken (and built) for a 4-node question
        raise FabenchError(f"{what} {text!r}: {math.prod(out):,} nodes; the model takes up "
                           f"to {MODEL_MAX_NODES:,}")
    return out


def parse_dims(text: str | None) -> tuple[int, ...] | None:
    return _dims(text, "--dims")


def topology_spec(args: argparse.Namespace) -> TopologySpec:
    try:
        over = tuple(float(x) for x in str(args.oversubscription).split(","))
    except ValueError:
        raise FabenchError(f"--oversubscription {args.oversubscription!r}: e.g. 2 or 2,1.5") \
            from None
    if not all(0 < x < math.inf for x in over):
        # nan was taken (no comparison with nan is true) and predicted from
        raise FabenchError(f"--oversubscription {args.oversubscription!r}: finite ratios > 0")
    fly = _dims(getattr(args, "dragonfly", None), "--dragonfly", 4)
    check_cores(getattr(args, "cores", None))
    if not 1 <= args.hosts_per_leaf <= MODEL_MAX_NODES:
        raise FabenchError(f"--hosts-per-leaf must be 1..{MODEL_MAX_NODES:,}, got "
                           f"{args.hosts_per_leaf}")
    cores = getattr(args, "cores", None) or os.cpu_count() or 1
    return TopologySpec(args.topology, args.hosts_per_leaf, over, getattr(args, "levels", None),
                        getattr(args, "leaves_per_pod", None), parse_dims(args.dims),
                        fly if fly is None else (fly[0], fly[1], fly[2], fly[3]), cores=cores)


def cluster_from_args(args: argparse.Namespace, nodes: int | None = None) -> Cluster:
    n = nodes or args.nodes
    check_model_scale(n, args.ppn)
    check_nics(args.nics_per_node)
    spec = topology_spec(args)
    return Cluster(n, args.ppn, spec.build(n),
                   cores=args.cores if args.topology != "loopback" else None,
                   nics=args.nics_per_node)


MAX_HOPS = 64  # switches on a path: no fabric has more
# Parameter variants per band (default 32): each is a model run, 1e9 ran until killed.
MAX_BAND_SAMPLES = 10_000


def check_band_samples(args: argparse.Namespace) -> None:
    samples = getattr(args, "band_samples", None)
    if samples is not None and not 0 <= samples <= MAX_BAND_SAMPLES:
        raise FabenchError(f"--band-samples must be 0..{MAX_BAND_SAMPLES:,}, got {samples}")


def fabric_for(args: argparse.Namespace) -> Fabric:
    check_band_samples(args)
    fabric = load_fabric(args.fabric, args.out)
    level = getattr(args, "switch_reduce_us", None)
    if level is not None and not 0 <= level < math.inf:
        raise FabenchError(f"--switch-reduce-us must be a finite time >= 0, got {level}")
    if getattr(args, "switch_reduce_us", None) is not None and fabric.in_network:
        fabric.in_network.level_us = args.switch_reduce_us
        fabric.provenance.pop("in_network.level_us", None)
    return fabric


def _fig(text: str | None, what: str) -> Figure | None:
    return Figure.parse(text, what) if text is not None else None


def cmd_define(args: argparse.Namespace) -> int:
    if not 1 <= args.hops <= MAX_HOPS:
        # --hops 0 was written into the fabric (a path through no switch)
        raise FabenchError(f"--hops must be 1..{MAX_HOPS}, got {args.hops}")
    lat = Figure.parse(args.latency_us, "--latency-us")
    bw = Figure.parse(args.bandwidth_MBps, "--bandwidth-MBps")
    fabric = define_fabric(Published(
        args.name, args.family, lat, bw, source=args.source,
        hop_latency_us=_fig(args.hop_latency_us, "--hop-latency-us"),
        eager_limit=args.eager_limit, rendezvous_us=_fig(args.rendezvous_us, "--rendezvous-us"),
        link_MBps=args.link_MBps, calibrated_hops=args.hops, in_network=args.in_network,
        shm_latency_us=_fig(args.shm_latency_us, "--shm-latency-us"),
        shm_MBps=_fig(args.shm_MBps, "--shm-MBps"),
        gamma_MBps=_fig(args.gamma_MBps, "--gamma-MBps"),
        node_memory_MBps=_fig(args.node_memory_MBps, "--node-memory-MBps")))
    path = save_fabric(fabric, args.out)
    for line in fabric_lines(fabric):
        print(line)
    print(f"# fabric {fabric.name!r} written: {path}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.scale_runs:  # refused before the calibration's work, not after it
        if args.scale_ppn < 1:
            raise FabenchError(f"--scale-ppn {args.scale_ppn}: at least 1")
        check_nics(args.scale_nics_per_node, "--scale-nics-per-node")
    with Store(store_of(args)) as store:
        cal = calibrate(store, args.runs, args.name, family=args.family,
                        max_breaks=args.max_breaks, calibrated_hops=args.hops,
                        hop_latency_us=args.hop_latency_us, link_bandwidth_MBps=args.link_MBps,
                        gamma_MBps=args.gamma_MBps)
    if args.in_network:
        # declared, not measured: point-to-point runs cannot show what the switches compute
        kind = None if args.in_network == "default" else args.in_network
        inn, prov = in_network_defaults(args.family, kind)
        cal.fabric.in_network = inn
        cal.fabric.provenance.update(prov)
        cal.fabric.assumptions.append(f"in-network reduction: declared (--in-network "
                                      f"{args.in_network})")
    for line in calibration_lines(cal):
        print(line)
    if args.scale_runs:
        with Store(store_of(args)) as store:
            obs = scale_observations(store, args.scale_runs, args.scale_ppn,
                                     TopologySpec("fat-tree", 24), args.scale_nics_per_node)
        extrap = extrapolation_error(cal.fabric, obs)
        fit = fit_scale(cal.fabric, obs)
        runs = ", ".join(map(str, args.scale_runs))
        cal.fabric = fit.apply(cal.fabric, f"collective runs {runs}")
        cal.fabric.fit[SCALE_FIT_KEY] = {"runs": args.scale_runs, "ppn": args.scale_ppn,
                                         "nics_per_node": args.scale_nics_per_node,
                                         "observations": fit.n,
                                         "rms_log_error": fit.rms_log_error,
                                         "extrapolation_rms_log_error": extrap}
        print(f"# scale terms fitted to runs {runs} ({fit.n} times): noise "
              f"{fit.noise_us:.3g} us/step x n^{fit.noise_exponent:g}, NIC gap "
              f"{fit.nic_gap_us:.3g} us/message, node memory {fit.node_memory_MBps:.3g} MB/s "
              f"(0: unlimited), rms log error {fit.rms_log_error:.2f}"
              + (f", {extrap:.2f} extrapolated from the smallest node count"
                 if extrap is not None else ""))
    path = save_fabric(cal.fabric, args.out)
    print(f"# calibration stored as fabric {args.name!r}: {path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for name in list_fabrics(args.out):
        f = load_fabric(name, args.out)
        print(f"{name:<16} {f.origin:<10} {f.family:<9} {f.latency_us:>7.2f} us @8B "
              f"{f.peak_bandwidth_MBps:>9,.0f} MB/s  {f.source[:60]}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    for line in fabric_lines(load_fabric(args.fabric, args.out)):
        print(line)
    return 0


def _libraries(text: str) -> tuple[str, ...]:
    if text.strip().lower() in ("", "none"):
        return ()
    libs = tuple(x.strip().lower() for x in text.split(",") if x.strip())
    bad = [x for x in libs if x not in MPI_LIBRARIES]
    if bad:
        raise FabenchError(f"--mpi {text!r}: {', '.join(MPI_LIBRARIES)} or none")
    return libs


def cmd_predict(args: argparse.Namespace) -> int:
    fabric = fabric_for(args)
    cluster = cluster_from_args(args)
    try:
        sizes = parse_sizes(args.sizes)
    except ValueError as exc:
        raise FabenchError(f"--sizes: {exc}") from None
    if not sizes:
        raise FabenchError(f"--sizes {args.sizes!r}: no size")
    libs = _libraries(args.mpi)
    title = (f"{fabric.name} on {cluster.topology.describe()}, {cluster.nodes} nodes x "
             f"{cluster.ppn} ppn" + (f", {cluster.nics} NICs a node" if cluster.nics > 1 else ""))
    iv = None
    if args.bands == "interval" and args.band_samples != 0:
        if not 0 < args.level < 1:
            raise FabenchError(f"--level {args.level}: between 0 and 1")
        iv = interval(corpus_scores(user_cache_dir()), fabric_sigma(fabric), args.level)
    for coll in args.collective:
        only = [a for a in (args.algorithm or []) if a in ALGORITHMS[coll]] or None
        if args.algorithm and not only:
            continue
        pred = predict_all(fabric, cluster, coll, sizes, only, libraries=libs)
        if iv is not None:
            add_intervals(pred, iv)
        else:
            add_bands(pred, fabric, cluster, args.band_samples)
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
    check_band_samples(args)
    fabric = load_fabric(args.fabric, args.out)
    peak = args.node_gflops
    if args.peak:
        try:
            s, c, ghz, fpc = args.peak.split(",")
            peak = peak_gflops(int(s), int(c), float(ghz), int(fpc))
        except ValueError:
            raise FabenchError(f"--peak {args.peak!r}: expected SOCKETS,CORES,GHZ,FPC") from None
    table = load_node_table(args.node_table) if args.node_table else None
    efficiency = args.efficiency_1node
    measured: list[MeasuredHpl] = []
    if args.from_run is not None or args.measured:
        with Store(store_of(args)) as store:
            if args.from_run is not None:
                one = measured_hpl(store, args.from_run)
                if one.nodes != 1:
                    raise FabenchError(f"--from-run {args.from_run} ran on {one.nodes} nodes; "
                                       "it must be a 1-node run")
                peak = peak if peak is not None else one.node_peak_gflops
                efficiency = efficiency if efficiency is not None else one.efficiency
            measured = [measured_hpl(store, r) for r in args.measured or []]
    prm = params_from(peak=peak, efficiency=efficiency, mem_gb=args.mem_gb,
                      table=table, mem_fraction=args.mem_fraction, nb=args.nb,
                      overlap=args.overlap, node_cv=args.node_cv)
    if args.from_run is not None:
        src = f"stored run {args.from_run} (1 node)"
        prm.sources.update({k: src for k in ("peak", "efficiency_1node")
                            if prm.sources.get(k) == "given" and not (
                                k == "peak" and (args.node_gflops or args.peak)) and not (
                                k == "efficiency_1node" and args.efficiency_1node)})
    check_cores(args.cores)
    if args.cores:
        prm = replace(prm, cores=args.cores,
                      sources={**prm.sources, "cores": f"given: {args.cores} shared cores"})
    fitted = None
    if args.fit_at:
        try:
            n_s, e_s = args.fit_at.split(":")
            n_fit, e_fit = int(n_s), float(e_s)
        except ValueError:
            raise FabenchError(f"--fit-at {args.fit_at!r}: NODES:EFFICIENCY, e.g. 240:0.7299") \
                from None
        cv = fit_node_cv(fabric, n_fit, e_fit, prm)
        if cv is None:
            raise FabenchError(f"no node spread in [0, 20 %] gives {e_fit} at {n_fit} nodes")
        prm = replace(prm, node_cv=cv, sources={**prm.sources,
                                                "node_cv": f"fitted to {e_fit} at {n_fit} nodes"})
        fitted = (f"the node spread ({cv * 100:.2f} %) was solved so that {n_fit} nodes give "
                  f"{e_fit * 100:.2f} %: that row reproduces its input; the others follow "
                  "from the fit")
    try:
        nodes = [int(x) for x in str(args.nodes).split(",") if x]
    except ValueError:
        raise FabenchError(f"--nodes {args.nodes!r}: node counts, e.g. 1,2,4,8") from None
    if not nodes:
        raise FabenchError(f"--nodes {args.nodes!r}: no node count")
    for n in nodes:
        check_model_scale(n, 1)
    points = hpl_curve(fabric, nodes, prm)
    for pt in points:
        pt.band = band_of(fabric, lambda f, n=pt.nodes: hpl_curve(f, [n], prm)[0].efficiency,
                          args.band_samples)
    title = (f"HPL on {fabric.name}: peak {prm.node_peak_gflops:.1f} GFLOPS/node, 1-node "
             f"efficiency {prm.efficiency_1node:.4f}, {prm.mem_per_node_gb:g} GB x "
             f"{prm.mem_fraction:g}, NB {prm.nb}, overlap {prm.overlap:g}, node spread "
             f"{prm.node_cv * 100:.2f} %")
    for line in hpl_lines(points, title, prm, fitted):
        print(line)
    if measured:
        for line in hpl_measured_lines(points, measured):
            print(line)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    check_band_samples(args)
    if args.nodes:  # 0: each run's own node count
        check_model_scale(args.nodes, args.ppn)
    if args.published:
        for line in corpus_lines(run_corpus(band_samples=args.band_samples)):
            print(line)
        return 0
    if not args.runs or not args.fabric:
        raise FabenchError("model validate: give stored RUNs and --fabric, or --published")
    fabric = load_fabric(args.fabric, args.out)
    with Store(store_of(args)) as store:
        comps = []
        for rid in args.runs:
            nodes = args.nodes or max(1, store.run(rid).ranks // args.ppn)
            cluster = cluster_from_args(args, nodes)
            comps.append(compare_app_run(store, rid, fabric, cluster, args.band_samples)
                         if store.run(rid).kernel in APPS else
                         compare_run(store, rid, fabric, cluster, args.algorithm,
                                     args.band_samples))
        merged = merge_repeats(comps)
        sims = {}
        for sid in args.simulated or []:
            srun = store.run(sid)
            if "simulated" not in srun.flags:
                raise FabenchError(f"run {sid} is not a simulated run (fabench sim)")
            coll = srun.kernel.partition(".")[2]
            sims[(srun.kernel, run_algorithm(srun, coll), srun.ranks)] = sid
        tables = []
        for c in merged:
            cluster = cluster_from_args(args, args.nodes or max(1, c.ranks // args.ppn))
            sim_skew = barrier_exit_skew(fabric, cluster) if cluster.cores else 0.0
            sid = None if c.simulated else sims.get((c.kernel, c.algorithm, c.ranks))
            sim = simulated_as_prediction(store, c, sid, sim_skew) if sid is not None else None
            tables.append((c, sim))
    for c, sim in tables:
        for line in validation_lines(c, sim) if sim else comparison_lines(c):
            print(line)
    if len(tables) > 1:
        for line in validation_summary(tables):
            print(line)
    return 0
