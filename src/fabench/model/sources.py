"""The publications the model's defaults and its validation corpus cite, by key.

Figures taken from them are their authors'; docs/model.md ("Sources") lists the same keys.
Keys in brackets ([G16]) appear in provenance strings and in the corpus file.
"""

from __future__ import annotations

SOURCES: dict[str, str] = {
    "000": "Long, Fu, Li, Gong, Wu, Fan (Peking University, Huawei), 'Performance evaluation of "
           "lossless RoCEv2 network in HPC cluster', Journal on Communications, 2024, "
           "DOI 10.11959/j.issn.1000-436x.2024244 (docs/sources.md [000])",
    "004": "'40G Ethernet performance on an Intel ONS switch', blog (docs/sources.md [004]): "
           "IMB PingPong per fabric; switch cut-through latency 400 ns",
    "G16": "R. L. Graham et al., 'Scalable Hierarchical Aggregation Protocol (SHArP): A "
           "Hardware Architecture for Efficient Data Reduction', COMHPC workshop at SC16, "
           "DOI 10.1109/COMHPC.2016.006: 128 hosts, Switch-IB 2 EDR, MPI_Allreduce 8 B "
           "6.01 us host-based vs 2.83 us SHArP, 4096 B 46.93 vs 14.48 us",
    "B17": "G. Bloch, D. Bureddy, R. L. Graham, G. Shainer, B. Smith, 'Towards A Data Centric "
           "System Architecture: SHARP', Supercomputing Frontiers and Innovations 4(4), 2017, "
           "DOI 10.14529/jsfi170401: UD multicast of the result cuts the 8-byte allreduce on "
           "128 nodes by 16 %",
    "R20": "B. Ramesh et al., 'Scalable MPI Collectives using SHARP: Large Scale Performance "
           "Evaluation on the TACC Frontera System', ExaMPI workshop 2020, "
           "DOI 10.1109/ExaMPI52011.2020.00007: SHARP allreduce up to 5.1x faster than "
           "host-based at 7,861 nodes (HDR)",
    "G20": "R. L. Graham et al., 'Scalable Hierarchical Aggregation and Reduction Protocol "
           "(SHARP) Streaming-Aggregation Hardware Design and Evaluation', ISC High "
           "Performance 2020, LNCS 12151, DOI 10.1007/978-3-030-50743-5_3: MPI_Allreduce "
           "bandwidth with streaming aggregation on HDR InfiniBand about 95 % of the network "
           "bandwidth (abstract; 96 % of point-to-point in the conference's summary)",
    "NVSHARP": "NVIDIA, 'Using NVIDIA SHARP with Open MPI', SHARP documentation Rev 3.8.0, "
               "https://docs.nvidia.com/networking/display/sharpv380/using+nvidia+sharp+with+"
               "open+mpi: osu_allreduce 5.6.2, 128 nodes x 1 rank, SHARP with streaming "
               "aggregation (SAT); HCOLL_SHARP_NP default 4 node leaders",
    "SHARPv1": "'SHARP' (Chinese overview), http://www.visionstone.net/jsshow.php?id=903: "
               "SHARPv1 on Switch-IB 2 EDR offloads aggregations up to 256 bytes, SHARPv2 on "
               "Quantum HDR up to 2 GB (streaming)",
    "SUNIB": "Sun IB Switch 9P Administration Guide, specifications, "
             "https://docs.oracle.com/cd/E19049-01/ib.switch/819-7247-10/specifications.html:"
             " 86 ns port-to-port latency",
    "OMPI41": "Open MPI v4.1.x source: ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (the "
              "fixed decision rules), ompi/mca/coll/base/coll_base_allreduce.c (fallbacks), "
              "coll_tuned_bcast_decision.c (k-nomial radix 4); btl_tcp_eager_limit 65536",
    "OMPI40": "Open MPI v3.0.x-v4.0.x source: ompi/mca/coll/tuned/coll_tuned_decision_fixed.c "
              "(the fixed decision rules before v4.1 replaced them: allreduce recursive "
              "doubling below 10,000 B, then the ring; alltoall Bruck below 200 B per rank on "
              "more than 12 ranks, basic linear below 3,000 B, then pairwise) and "
              "coll_tuned_component.c (alltoall_small_msg 200, intermediate_msg 3000)",
    "MPICH40": "MPICH v4.0.2 source: maint/tuning/coll/mpir/generic.json and "
               "maint/tuning/coll/ch4/generic.json (default collective selection)",
    "PS24": "converged-computing/performance-study (GitHub, commit 6f3df687, Zenodo DOI "
            "10.5281/zenodo.13738495), experiments/azure/cyclecloud/cpu: Azure CycleCloud "
            "HPC VMs on InfiniBand, HPC-X, OSU 5.8: osu_latency and osu_bw between node pairs, "
            "osu_allreduce on 32-256 nodes x 96 ranks, 5 iterations each; and "
            "analysis/osu-benchmarks/data (the parsed osu_latency, osu_bw and osu_allreduce "
            "tables) for the AWS EKS and ParallelCluster (hpc6a.48xlarge, EFA, Open MPI "
            "4.1.2), Azure AKS (HB120-96rs_v3, HPC-X 2.19) and Google GKE and Compute Engine "
            "(c2d-standard-112, TCP, Open MPI 4.1.2) CPU jobs",
    "CNS": "CSCS, eth-cscs/cray-network-stack (GitHub): examples/container/osu-ompi/README.md "
           "(commit 527cde9f, Open MPI 5) and examples/container/osu-mpich/README.md (commit "
           "3025bd45, MPICH 4.2.1): OSU 7.5 on Alps (clariden), HPE Slingshot through "
           "libfabric's CXI provider; osu_latency on 2 nodes and osu_alltoall, 8 ranks on 2 "
           "nodes, host buffers",
    "EXC": "ukri-excalibur/excalibur-tests (GitHub), ReFrame outputs committed under output/ "
           "(commits adf1e35e and 1809e5d8, October 2020; removed in a1f66d46, read at its "
           "parent): output/alaska/{ib,roce}-gcc9-openmpi4-ucx/omb and "
           "output/csd3/cclake-{ib,roce}-gcc9-ompi3-ucx/omb: osu_latency and osu_bw on 2 "
           "nodes x 1 rank, osu_allreduce, osu_alltoall and osu_allgather on 2 nodes x 32 "
           "ranks, each job "
           "script beside its output",
    "CSCSDOCS": "CSCS user documentation, eth-cscs/cscs-docs (GitHub, commit 43d52c2c), "
                "docs/software/container-engine/guidelines-images/image-ompi.md ('OpenMPI "
                "image'): OSU 7.5.1 with Open MPI 5.0.8 on Alps GH200 nodes, osu_latency and "
                "osu_bw on 2 nodes, osu_alltoall 8 ranks on 2 nodes, with and without the "
                "Container Engine's CXI hook",
    "ALPSHW": "CSCS user documentation, eth-cscs/cscs-docs (GitHub, commit 80abed13), "
              "docs/alps/hardware.md (docs.cscs.ch/alps/hardware, 'NVIDIA GH200 GPU Nodes', "
              "written in May 2025): each GH200 node holds four Grace-Hopper modules and four "
              "corresponding NICs; docs/clusters/clariden.md: clariden is made of those nodes",
    "SARUS": "eth-cscs/sarus (GitHub, commit 4a4d07f3), doc/cookbook/osu_mb/osu_mb.rst: OSU "
             "5.3.2 in an MPICH 3.1.4 container on Piz Daint with the native MPICH hook, "
             "osu_latency and osu_alltoall on 2 nodes x 1 rank",
    "ABCI": "aistabci/abci2.0benchmark (GitHub, commit f0aa27f2, AIST, 2021; Takizawa et "
            "al., 'ABCI 2.0: Advances in Open AI Computing Infrastructure at AIST', IPSJ SIG "
            "Technical Report HPC-180): pt2pt/inter_{anode,vnode} (osu_multi_lat and "
            "osu_mbw_mr, 1 pair, host buffers) and allreduce/inter_{anode,vnode} "
            "(osu_allreduce -r cpu, 8 ranks per node on 2-16 A nodes, 4 per node on 2-32 V "
            "nodes), Open MPI 4.0.5 with UCX",
}


def cite(key: str, detail: str = "") -> str:
    """'[KEY] detail' for a provenance string; the key must exist."""
    if key not in SOURCES:
        raise KeyError(f"no source {key!r}")
    return f"[{key}] {detail}".rstrip()
