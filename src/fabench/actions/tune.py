"""`fabench tune check|apply|revert|ab|profiles`: argument handling; the work is in tune/."""

import argparse
import json
import sys
from pathlib import Path

from ..errors import FabenchError
from ..host.target import Target
from ..kernels import get_kernel
from ..plan.plan import make_plan, plan_run, settings_from_args
from ..plan.spec import load_spec
from ..schedulers import split_on
from ..tune.ab import deltas_json, run_ab
from ..tune.apply import apply, check_ifaces, revert
from ..tune.apply import make_plan as changes_plan
from ..tune.audit import check
from ..tune.journal import default_journal_path
from ..tune.lines import finding_lines, plan_lines, revert_lines
from ..tune.profiles import available_profiles, load_profile
from ..tune.targets import resolve
from ..util.units import check_timeout
from ._common import scheduler_from, store_of


def _resolve(args: argparse.Namespace, default_host: bool = False):  # type: ignore[no-untyped-def]

    on = split_on(args.on) if args.on else None
    if default_host and on is None and not args.netns:
        targets = [Target.host()]
    else:
        targets = resolve(on, args.netns, args.host_wide)
    check_ifaces(targets, args.iface)
    return targets


def _journal(args: argparse.Namespace) -> Path:

    return args.journal or default_journal_path()


def check_main(args: argparse.Namespace) -> int:

    if not 0 <= args.window <= 3600:  # also refuses nan and inf
        raise FabenchError(f"--window {args.window}: give 0..3600 seconds")
    profile = load_profile(args.profile)
    findings = check(profile, _resolve(args, default_host=True), window=args.window)
    if args.json:
        for f in findings:
            print(json.dumps(f.as_dict()))
    else:
        print(f"# fabench tune check: profile {profile.name} ({profile.source_file})")
        for line in finding_lines(findings, verbose=not args.brief):
            print(line)
    # Exit 3: a diagnosis flagged something (a named verdict), as every diagnosing command.
    return 3 if any(f.verdict for f in findings) else 0


def apply_main(args: argparse.Namespace) -> int:

    profile = load_profile(args.profile)
    plan = changes_plan(profile, _resolve(args), ifaces=args.iface)
    for line in plan_lines(plan, args.dry_run):
        print(line)
    if profile.runtime_settings:
        print("# run-time knobs (no system change; `tune ab` passes them to the benchmark):")
        for k, v in profile.runtime_env().items():
            print(f"  export {k}={v}")
        for k in profile.runtime_unset():
            print(f"  unset {k}")
        if profile.kernel_args():
            print(f"  tcp.* kernel options: {' '.join(profile.kernel_args())}")
    if args.dry_run or not plan.changes:
        return 0
    journal = _journal(args)
    res = apply(plan, journal, on_step=lambda c: print(f"  done: {c.tgt.name}: {c.label}",
                                                       flush=True))
    print(f"# applied {len(res.applied)} change(s); previous values in {journal}; "
          "undo with `fabench tune revert`")
    return 0


def revert_main(args: argparse.Namespace) -> int:

    rep = revert(_journal(args))
    for line in revert_lines(rep):
        print(line)
    return 1 if rep.failed else 0


def ab_main(args: argparse.Namespace) -> int:

    profile = load_profile(args.profile)
    targets = _resolve(args)
    if args.bench:
        k = get_kernel(args.bench)
        settings = settings_from_args(k, args, extra=args.kernel_arg)
        planned = [plan_run(k.name, transport=args.transport, ranks=args.ranks, mpi=args.mpi,
                            settings=settings, timeout_s=check_timeout(args.timeout))]
        tb = targets[0].meta.get("testbed")
        on = ["testbed", tb] if tb else ["local"]
        consent = False
    else:
        spec = load_spec(args.campaign)
        planned = [p for p in make_plan(spec, quick=args.quick) if p.repeat == 0]
        on = [spec.launcher]
        consent = spec.oversubscribe
    launcher = scheduler_from(on, args.out, consent)
    launcher_name = launcher.name
    if args.netns and not targets[0].meta.get("testbed"):
        print("fabench: note: the benchmark runs through the "
              f"{launcher_name} launcher, not inside --netns namespaces", file=sys.stderr)
    res = run_ab(profile, targets, planned, launcher, store_of(args), _journal(args),
                 rounds=args.rounds, ifaces=args.iface, tolerance=args.tolerance,
                 on_progress=lambda m: print(f"# {m}", file=sys.stderr, flush=True))
    if args.json:
        for d in deltas_json(res):
            print(json.dumps(d))
    else:
        print(f"# tune ab {profile.name}: {res.changes} system change(s) per round, "
              f"{args.rounds} round(s); campaign {res.campaign_id} in {store_of(args)}")
        for d in res.deltas:
            print(f"  {d.sentence()}")
        for s in res.summaries:
            print(f"# {s}")
    for f in res.failed:
        print(f"fabench: {f}", file=sys.stderr)
    if not res.deltas:
        raise FabenchError("no comparison: no size measured on both sides")
    return 1 if res.failed else 0


def profiles_main(args: argparse.Namespace) -> int:

    for name, path in available_profiles().items():
        try:
            desc = " ".join(load_profile(str(path)).description.split())
        except FabenchError as exc:
            desc = f"INVALID: {exc}"
        print(f"{name:<16} {path}\n  {desc}")
    return 0
