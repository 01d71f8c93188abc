"""`fabench accept SPEC.yaml --on ...`: argument handling; the work is in fabench/accept/."""

import argparse
import json
import sys
from pathlib import Path

from ..accept.baseline import saved_path
from ..accept.output import junit_xml, text_lines, write_html
from ..accept.session import run_acceptance
from ..accept.spec import check_scheduler, load_accept_spec
from ..errors import FabenchError
from ..schedulers import split_on
from ..store.database import Store
from ._common import scheduler_from, store_of


def _campaign(text: str | None) -> int | None:
    if text is None:
        return None
    t = text[1:] if text[:1] in ("c", "C") else text
    if not (t.isascii() and t.isdigit()) or int(t) < 1:  # '²' is a digit to isdigit()
        raise FabenchError(f"--baseline {text!r}: a campaign id (12 or c12)")
    return int(t)


def main(args: argparse.Namespace) -> int:
    if args.budget is not None and not 0 <= args.budget <= 7 * 86400:
        raise FabenchError(f"--budget {args.budget}: 0 .. 604800 seconds")
    baseline = _campaign(args.baseline)
    on = args.on
    if on == ["local"]:  # not given: the spec's launcher
        on = None
    spec = load_accept_spec(args.spec)  # parsed once; a bad spec stops here (exit 2)
    words = on or [spec.model.launcher]
    check_scheduler(spec, split_on(words).name)
    scheduler = scheduler_from(words, args.out, args.oversubscribe or spec.model.oversubscribe)
    spath = store_of(args)
    if not isinstance(spath, Path):
        # the acceptance keeps its fabric files and JSON beside an SQLite store; a central
        # PostgreSQL store takes a finished acceptance by `fabench store copy`
        raise FabenchError("accept writes an SQLite store in --out (or --store FILE); copy it "
                           "to a PostgreSQL store afterwards with `fabench store copy`")
    try:
        acc = run_acceptance(spec, scheduler, spath, budget_s=args.budget, baseline=baseline)
    finally:
        scheduler.close()
    saved = saved_path(spath, acc.campaign_id)
    saved.write_text(json.dumps(acc.to_json(), indent=1) + "\n", encoding="utf-8")
    files = [saved]
    if args.junit:
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        args.junit.write_text(junit_xml(acc), encoding="utf-8")
        files.append(args.junit)
    with Store(spath) as store:
        files.append(write_html(acc, store, args.html or
                                args.out / f"accept-c{acc.campaign_id}.html"))
    if args.json:
        print(json.dumps(acc.to_json()))
    else:
        for line in text_lines(acc):
            print(line)
        for f in files:
            print(f"# wrote {f}")
    if acc.exit_code:
        print(f"fabench: acceptance {acc.outcome}", file=sys.stderr)
    return acc.exit_code
