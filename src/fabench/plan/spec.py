"""Campaign specs: YAML, validated, with errors that name the key and the line."""

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator

from ..errors import FabenchError, SpecError
from ..kernels import get_kernel
from ..kernels.transport_request import transport_for
from ..util.textfile import read_text
from ..util.units import parse_sizes
from ..util.yamlconf import Label, parse_yaml_model
from .kernel_settings import KERNEL_OPTIONS, KernelOption

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# repeats of a campaign: a nightly takes a few; 10,000 is past any budget
MAX_REPEATS = 10_000


def _listify(v: Any) -> Any:
    return v if isinstance(v, list) else [v]


class _RunGroupBase(BaseModel):
    """One block of a campaign: the cross product of its lists becomes runs. The kernel
    options (sizes, iterations, window, hugepages...) are added from their declaration in
    plan.KernelSettings, as RunGroup below."""

    model_config = ConfigDict(extra="forbid")

    kernel: list[str] = Field(min_length=1)
    transport: list[str] = Field(default_factory=lambda: ["shm"], min_length=1)
    ranks: list[int] = Field(default_factory=lambda: [2], min_length=1)
    mpi: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    args: list[str] = Field(default_factory=list)  # kernel options, e.g. [--streams, "8"]
    precision: float | None = Field(default=None, gt=0, lt=1)  # see docs/statistics.md
    budget_s: float | None = Field(default=None, gt=0)

    _listify_kernel = field_validator("kernel", "transport", "ranks", "mpi",
                                      mode="before")(_listify)

    @field_validator("kernel")
    @classmethod
    def _known_kernels(cls, v: list[str]) -> list[str]:
        for name in v:
            try:
                get_kernel(name)
            except FabenchError as exc:
                raise ValueError(str(exc)) from None
        return v

    @field_validator("transport")
    @classmethod
    def _transports_apply(cls, v: list[str], info: ValidationInfo) -> list[str]:
        for name in info.data.get("kernel") or []:
            kernel = get_kernel(name)
            for t in v:
                try:
                    transport_for(kernel, t)  # its message names the accepted forms
                except FabenchError as exc:
                    raise ValueError(str(exc)) from None
        return v

    @field_validator("ranks")
    @classmethod
    def _positive_ranks(cls, v: list[int]) -> list[int]:
        for r in v:
            if r < 1:
                raise ValueError(f"ranks must be >= 1, got {r}")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        # A name becomes `export NAME=...` in a Slurm job script and `-x NAME` on mpirun's
        # line: only a shell variable name is one.
        for k, val in v.items():
            if not ENV_NAME_RE.match(k):
                raise ValueError(f"env name {k[:60]!r}: letters, digits and '_', not starting "
                                 "with a digit")
            if "\0" in val:
                raise ValueError(f"env {k}: a NUL byte cannot be in a value")
        return v

    @field_validator("sizes", check_fields=False)
    @classmethod
    def _sizes_parse(cls, v: str | None) -> str | None:
        if v is not None:
            parse_sizes(v)
        return v

    def kernel_options(self) -> dict[str, Any]:
        """The group's kernel options by name (None: not given)."""
        return {o.name: getattr(self, _field_name(o)) for o in KERNEL_OPTIONS}


def _field_name(opt: KernelOption) -> str:
    # `validate` is a BaseModel method: the field takes another name, the key stays.
    return f"{opt.name}_data" if hasattr(BaseModel, opt.name) else opt.name


def _option_field(opt: KernelOption) -> tuple[Any, Any]:
    alias = opt.name if _field_name(opt) != opt.name else None
    kind: Any = {"int": int, "float": float, "flag": bool, "sizes": str}.get(opt.kind)
    if opt.kind == "choice":
        kind = Literal[opt.choices]  # type: ignore[valid-type]
    bounded = opt.kind in ("int", "float")
    return kind | None, Field(default=None, ge=opt.lo, le=opt.hi if bounded else None,
                              alias=alias, description=opt.help)


RunGroup = create_model("RunGroup", __base__=_RunGroupBase, __module__=__name__,
                        **{_field_name(o): _option_field(o) for o in KERNEL_OPTIONS})


Aggressor = Literal["incast", "alltoall", "bcast", "bulk"]  # congestion/aggressors.PATTERNS
VictimName = Literal["latency", "allreduce", "bandwidth"]  # congestion/victims.VICTIMS


class CongestionBlock(BaseModel):
    """`congestion:` in a spec: `fabench congestion`'s options, run after the spec's runs on
    the same launcher (a testbed) and stored in the same campaign (docs/congestion.md)."""

    model_config = ConfigDict(extra="forbid")

    aggressor: list[Aggressor] = Field(default_factory=lambda: ["incast"], min_length=1)
    victim: list[VictimName] = Field(default_factory=lambda: ["latency", "allreduce",
                                                              "bandwidth"], min_length=1)
    victim_hosts: list[str] = Field(default_factory=list)
    aggressor_hosts: list[str] = Field(default_factory=list)
    target: str = ""
    rounds: int = Field(default=3, ge=1, le=100)
    settle: float = Field(default=1.0, ge=0, le=60)
    iterations: int = Field(default=1000, gt=0)
    bw_iterations: int = Field(default=10, gt=0)
    bw_window: int = Field(default=4, gt=0)
    transport: str = "tcp"

    _listify = field_validator("aggressor", "victim", "victim_hosts", "aggressor_hosts",
                               mode="before")(_listify)


class CampaignSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Label = "campaign"
    description: str = ""
    # a plan holds every repeat of every run: 1e12 of them filled memory before the first ran
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    mpi: str = "openmpi"
    launcher: str = "local"
    timeout_s: float = Field(default=1800.0, gt=0)
    oversubscribe: bool = False  # consent to more ranks than the launcher's slots
    runs: list[RunGroup] = Field(min_length=1)
    congestion: CongestionBlock | None = None


DEFAULT_SPEC: dict[str, Any] = {
    "name": "default",
    "description": "The core experiment of the source documents at laptop scale: "
                   "point-to-point over shared memory and TCP, collectives at 2 and 4 ranks.",
    # It must run on any host, a 2-core laptop included: its 4-rank collectives may have more
    # ranks than cores there, and are then flagged `oversubscribed` in every output.
    "oversubscribe": True,
    "runs": [
        # Each size stops once its median is known to +-1 % (a tenth of OSU's count at least,
        # OSU's count at most): docs/statistics.md, "Precision stop".
        {"kernel": ["mpi.latency", "mpi.bw", "mpi.bibw"], "transport": ["shm", "tcp"],
         "ranks": [2], "stop_precision": 0.01},
        {"kernel": ["mpi.allreduce", "mpi.alltoall", "mpi.allgather", "mpi.gather"],
         "transport": ["shm"], "ranks": [2, 4]},
    ],
}


def load_spec(path: str | Path | None) -> CampaignSpec:
    if path is None:
        return CampaignSpec.model_validate(DEFAULT_SPEC)
    path = Path(path)
    try:
        text = read_text(path, "spec", SpecError)
    except FileNotFoundError:
        raise SpecError(f"cannot read spec {path}: no such file") from None
    return parse_spec(text, str(path))


def parse_spec(text: str, source: str = "<spec>") -> CampaignSpec:
    return parse_yaml_model(text, source, CampaignSpec, what="campaign spec",
                            hint="at least 'runs:'", docs="docs/campaign-spec.md",
                            error=SpecError)
