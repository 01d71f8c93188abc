"""Acceptance specs: YAML, validated once; every check parsed to a typed `Check` with its line.

A mistake (an unknown metric, a threshold without a unit, a check this scheduler cannot run) is
a SpecError naming the file and line: `fabench accept` exits 2 before anything runs.
"""

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import FabenchError, SpecError
from ..kernels.transport_request import parse_transport
from ..model.limits import MAX_NICS
from ..util.textfile import read_text
from ..util.units import parse_sizes
from ..util.yamlconf import Label, line_of, parse_yaml_model
from .checks import Check, Stage, parse_check


class CheckItem(BaseModel):
    """One entry of `checks:`: the expectation and, where it needs them, how to measure it."""

    model_config = ConfigDict(extra="forbid")

    check: str
    id: str | None = None  # the name `after:` refers to (default: the check's text)
    after: list[str] = Field(default_factory=list)  # checks that must pass first
    transport: str | None = None  # p2p, collectives: shm | tcp | ucx[:TLS] | ofi:PROVIDER
    hosts: list[str] | None = None  # p2p: the two hosts; hpl: the nodes; default: all/first two
    ranks_per_node: int | None = Field(default=None, ge=1)  # collectives, hpl
    iterations: int | None = Field(default=None, gt=0)
    # p2p and collectives: untimed iterations per size (default: the kernel's settled
    # warm-up, whose floor is OSU's 200 ping-pongs: 4 s on a 10 ms round trip)
    warmup: int | None = Field(default=None, ge=0, le=1_000_000_000)
    # p2p bandwidth: messages in flight per timed window (default: the kernel's, OSU's 64); on
    # a long or slow link each sample moves window x size bytes
    window: int | None = Field(default=None, ge=1, le=1_000_000)
    sizes: str | None = None  # hpl: HPL's N
    profile: str | None = None  # tune: the profile to audit against (default: the built-in)

    @field_validator("after", "hosts", mode="before")
    @classmethod
    def _listify(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


class AcceptSpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Label = "acceptance"
    description: str = ""
    launcher: str = "local"  # default for --on
    mpi: str = "openmpi"
    fabric: str | None = None  # the model's fabric for `x predicted` (saved, file or preset)
    # the model's nodes for `x predicted`: network links each, the ranks spread over them
    nics_per_node: int = Field(default=1, ge=1, le=MAX_NICS)
    repeats: int = Field(default=2, ge=1, le=100)  # runs of a measurement before its verdict
    budget_s: float = Field(default=0.0, ge=0)  # more runs for inconclusive checks (--budget)
    timeout_s: float = Field(default=600.0, gt=0)  # per run
    oversubscribe: bool = False
    checks: list[str | CheckItem] = Field(min_length=1)


@dataclass(frozen=True)
class PlannedCheck:
    """A parsed check with the options it is measured with."""

    check: Check
    item: CheckItem
    after: tuple[str, ...]

    @property
    def ident(self) -> str:
        return self.check.ident


@dataclass(frozen=True)
class AcceptSpec:
    source: str
    model: AcceptSpecModel
    checks: tuple[PlannedCheck, ...]  # in the order they run

    @property
    def name(self) -> str:
        return self.model.name

    def needs_fabric(self) -> bool:
        return any(c.check.relative for c in self.checks)


# Which schedulers a kind of check can run on; None: any.
_WHERE: dict[str, tuple[str, ...] | None] = {
    "doctor": None, "p2p": None, "collective": None, "matrix": None,
    "hpl": ("local", "testbed", "hosts", "auto"),
    "congestion": ("testbed", "auto"),
    "tune": ("testbed", "local", "auto"),
    "transport": ("local", "testbed", "hosts", "auto"),
    "reorder": ("testbed", "hosts", "auto"),
}


def load_accept_spec(path: str | Path, scheduler_name: str | None = None) -> AcceptSpec:
    path = Path(path)
    try:
        text = read_text(path, "acceptance spec", SpecError)
    except FileNotFoundError:
        raise SpecError(f"cannot read acceptance spec {path}: no such file") from None
    return parse_accept_spec(text, str(path), scheduler_name)


def parse_accept_spec(text: str, source: str = "<spec>",
                      scheduler_name: str | None = None) -> AcceptSpec:
    model = parse_yaml_model(text, source, AcceptSpecModel, what="acceptance spec",
                             hint="at least 'checks:'", docs="docs/accept.md", error=SpecError,
                             skip_loc=lambda p: p in ("str", "CheckItem"),
                             messages={"string_type": "a check is a line of text, or a mapping "
                                                      "with `check:` and its options"})
    root = yaml.compose(text)
    planned: list[PlannedCheck] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(model.checks):
        item = entry if isinstance(entry, CheckItem) else CheckItem(check=entry)
        loc: list[object] = ["checks", i] + (["check"] if isinstance(entry, CheckItem) else [])
        line = line_of(root, loc) or 0

        def fail(msg: str, line: int = line, i: int = i) -> SpecError:
            return SpecError(f"{source} line {line}: checks[{i}]: {msg}")

        try:
            check = parse_check(item.check, line)
            if item.sizes is not None:
                parse_sizes(item.sizes)
            if item.transport is not None:  # a typo is refused before anything is measured
                parse_transport(item.transport)
        except (FabenchError, ValueError) as exc:
            raise fail(str(exc)) from None
        ident = item.id or check.text
        if ident in seen:
            raise fail(f"id {ident!r} is used twice (line {seen[ident]}); give one an `id:`")
        seen[ident] = line
        for dep in item.after:
            if dep not in seen:
                raise fail(f"after: {dep!r} is not a check before this one")
        if check.relative and not model.fabric:
            raise fail("'x predicted' needs the spec's `fabric:` (a calibrated or preset fabric "
                       "model; fabench model list)")
        if check.kind == "p2p" and item.hosts is not None and len(item.hosts) != 2:
            raise fail("hosts: a point-to-point check runs between two hosts")
        if item.window is not None and check.metric.name != "bandwidth_MBps":
            raise fail("window: applies to bandwidth_MBps checks only")
        check = Check(check.text, check.metric, check.op, check.threshold, check.size, line,
                      ident)
        planned.append(PlannedCheck(check, item, tuple(item.after)))
    ordered = sorted(planned, key=lambda p: p.check.stage)  # stable: the spec's order within
    _check_order(ordered, source)
    spec = AcceptSpec(source, model, tuple(ordered))
    if scheduler_name is not None:
        check_scheduler(spec, scheduler_name)
    return spec


def check_scheduler(spec: AcceptSpec, scheduler_name: str) -> None:
    """Every check can run on this scheduler, else a SpecError naming the first that cannot."""
    for pc in sorted(spec.checks, key=lambda p: p.check.line):
        allowed = _WHERE.get(pc.check.kind)
        if allowed is not None and scheduler_name not in allowed:
            raise SpecError(f"{spec.source} line {pc.check.line}: {pc.check.text}: "
                            f"{pc.check.metric.name} cannot run on --on {scheduler_name} (it "
                            f"runs on {', '.join(allowed)})")


def _check_order(checks: list[PlannedCheck], source: str) -> None:
    """`after:` may not point at a check that runs later (a later stage)."""
    pos = {c.ident: n for n, c in enumerate(checks)}
    for n, c in enumerate(checks):
        for dep in c.after:
            if pos[dep] > n:
                raise SpecError(f"{source} line {c.check.line}: after: {dep!r} runs in a later "
                                f"stage ({Stage(checks[pos[dep]].check.stage).name.lower()})")
