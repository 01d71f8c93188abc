"""`fabench tune check|apply|revert|ab|profiles`: argument handling; the work is in tune/.

Arguments only: fabench.actions.tune does the work."""

import argparse
from pathlib import Path

from ..plan.kernel_settings import add_kernel_options
from . import COMMANDS
from ._common import add_out_argument


@COMMANDS.register("tune")
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "tune", help="audit a host against a profile, apply/revert it, prove it by A/B",
        description="Tuning profiles (tcp-throughput, low-latency, hpc-default, or your own "
                    "YAML) checked against a host or testbed, applied with a journal that "
                    "restores every previous value exactly, and A/B-tested. See "
                    "docs/tuning.md.")
    tsub = p.add_subparsers(dest="tune_command", metavar="ACTION")
    tsub.required = True

    c = tsub.add_parser("check", help="audit (read-only): current vs recommended, why, risk")
    c.add_argument("--profile", default="hpc-default", help="profile name or YAML file "
                   "(default: hpc-default)")
    _targets(c, default_host=True)
    c.add_argument("--json", action="store_true", help="one JSON object per finding")
    c.add_argument("--brief", action="store_true", help="no why/source/risk lines")
    c.add_argument("--window", type=float, default=0.0, metavar="SECONDS",
                   help="read NIC counters twice, SECONDS apart, and judge the interval "
                        "(lossless-roce: a pause storm on an idle link shows only this way)")
    c.set_defaults(func="fabench.actions.tune:check_main")

    a = tsub.add_parser("apply", help="apply a profile's system settings (journaled)")
    a.add_argument("profile", help="profile name or YAML file")
    _targets(a)
    a.add_argument("--dry-run", action="store_true", help="show the changes, change nothing")
    a.set_defaults(func="fabench.actions.tune:apply_main")

    r = tsub.add_parser("revert", help="restore every value the journal holds")
    r.add_argument("--journal", type=Path, help="journal file (default: "
                   "$FABENCH_TUNE_JOURNAL or ~/.local/state/fabench/tune-journal.json)")
    r.set_defaults(func="fabench.actions.tune:revert_main")

    b = tsub.add_parser("ab", help="baseline, apply, measure, revert, compare")
    b.add_argument("profile", help="profile name or YAML file")
    what = b.add_mutually_exclusive_group(required=True)
    what.add_argument("--bench", metavar="KERNEL", help="one kernel, e.g. tcp.bw, mpi.latency")
    what.add_argument("--campaign", metavar="SPEC", help="a campaign spec (YAML)")
    _targets(b)
    b.add_argument("--rounds", type=int, default=3,
                   help="A/B rounds, alternating the order (default: 3)")
    b.add_argument("--transport", default="tcp", help="(--bench) transport (default: tcp)")
    b.add_argument("--mpi", default="openmpi", help="(--bench) openmpi | mpich")
    b.add_argument("--ranks", "-n", type=int, default=2, help="(--bench) ranks (default: 2)")
    # --rounds here have counted A/B rounds since the command exists: the kernel's own
    # --rounds is spelled --kernel-rounds
    add_kernel_options(b, rename={"rounds": "--kernel-rounds"})
    b.add_argument("--kernel-arg", action="append", default=[], metavar="ARG",
                   help="(--bench) extra kernel option for both sides, e.g. --kernel-arg=-x")
    b.add_argument("--quick", action="store_true", help="(--campaign) fewer iterations")
    b.add_argument("--tolerance", type=float, default=0.03,
                   help="'no change' band around A (default: 0.03 = 3 %%)")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    b.add_argument("--json", action="store_true", help="one JSON object per size")
    add_out_argument(b)
    b.set_defaults(func="fabench.actions.tune:ab_main")

    pr = tsub.add_parser("profiles", help="list the profiles (built-in and $FABENCH_PROFILE_PATH)")
    pr.set_defaults(func="fabench.actions.tune:profiles_main")


def _targets(p: argparse.ArgumentParser, default_host: bool = False) -> None:
    p.add_argument("--on", nargs="+", metavar="WHERE",
                   help="testbed [NAME] (default for apply/ab)" +
                        ("; default for check: this host" if default_host else ""))
    p.add_argument("--netns", nargs="+", metavar="NS", help="these network namespaces")
    p.add_argument("--host-wide", action="store_true",
                   help="this host itself (changes affect everything running here)")
    p.add_argument("--iface", nargs="+", metavar="PATTERN",
                   help="interfaces for MTU/offload/quickack settings (needed on the host)")
    p.add_argument("--journal", type=Path, help="journal file (default: $FABENCH_TUNE_JOURNAL "
                   "or ~/.local/state/fabench/tune-journal.json)")
