"""The fabric file: its schema, validated on every read, with errors that name line and key.

A fabric file is JSON (what `model calibrate` and `model define` write) or YAML (the same keys,
for hand-written ones with comments). Unknown keys are errors: a misspelled `hop_latency_us`
must not silently fall back to a default. The keys are documented in docs/model.md ("The
fabric file"). Files written before the schema existed (no `fabric_schema` key) are read
with their old keys mapped, and say so in their assumptions.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import FabenchError
from ..util.yamlconf import parse_yaml_model
from .fabric import Fabric, InNetwork, Provenance, Replicate, Segment
from .families import in_network_defaults
from .params import BY_NAME

SCHEMA_VERSION = 2
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
DOCS = "docs/model.md, 'The fabric file'"


class FabricFileError(FabenchError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SegmentModel(_Strict):
    start: int = Field(ge=0)
    alpha_us: float = Field(ge=0)
    beta_us_per_byte: float = Field(ge=0)
    n_points: int = Field(default=0, ge=0)
    median_rel_err: float = Field(default=0.0, ge=0)
    max_rel_err: float = Field(default=0.0, ge=0)


def _check_segments(segs: list[SegmentModel], what: str) -> list[SegmentModel]:
    if segs and segs[0].start != 0:
        raise ValueError(f"the first {what} segment starts at 0 (it covers the smallest "
                         "sizes)")
    starts = [s.start for s in segs]
    if starts != sorted(set(starts)):
        raise ValueError(f"{what} segment starts must increase")
    return segs


class InNetworkModel(_Strict):
    host_overhead_us: float = Field(ge=0)
    level_us: float = Field(ge=0)
    fragment_bytes: int = Field(ge=1)
    fragment_us: float = Field(ge=0)
    max_bytes: int = Field(ge=0)
    streaming_MBps: float = Field(default=0.0, ge=0)
    streaming_from_bytes: int = Field(default=0, ge=0)
    min_nodes: int = Field(default=2, ge=1)
    streaming_us: float = Field(default=0.0, ge=0)
    streaming_fraction: float = Field(default=0.0, ge=0, le=1)


class ProvenanceModel(_Strict):
    source: str = Field(min_length=1)
    assumed: bool = False
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _range(self) -> ProvenanceModel:
        if (self.low is None) != (self.high is None):
            raise ValueError("give both low and high, or neither")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low} > high {self.high}")
        return self


class ReplicateModel(_Strict):
    segments: list[SegmentModel] = Field(min_length=1)
    intra: list[SegmentModel] = Field(default_factory=list)


class FabricFile(_Strict):
    fabric_schema: Literal[2] = SCHEMA_VERSION
    name: str
    origin: Literal["preset", "defined", "calibrated"]
    family: Literal["ib", "roce", "ethernet", "tcp", "custom"] = "custom"
    source: str = ""
    assumptions: list[str] = Field(default_factory=list)
    segments: list[SegmentModel] = Field(min_length=1)
    intra: list[SegmentModel] = Field(default_factory=list)
    overhead_us: float = Field(default=0.0, ge=0)
    gap_us: float = Field(default=0.0, ge=0)
    nic_gap_us: float = Field(default=0.0, ge=0)
    noise_us: float = Field(default=0.0, ge=0)
    noise_exponent: float = Field(default=0.0, ge=0, le=1)
    node_memory_MBps: float = Field(default=0.0, ge=0)
    calibrated_hops: int = Field(default=1, ge=0)
    hop_latency_us: float = Field(ge=0)
    link_bandwidth_MBps: float = Field(default=0.0, ge=0)
    exchange_slowdown: list[tuple[float, float]] = Field(default_factory=list)
    contention_ranks: int = Field(default=0, ge=0)
    contention: list[tuple[float, float]] = Field(default_factory=list)
    reduce_us_per_byte: float = Field(default=0.0, ge=0)
    in_network: InNetworkModel | None = None
    provenance: dict[str, ProvenanceModel] = Field(default_factory=dict)
    fit: dict[str, Any] = Field(default_factory=dict)
    replicates: list[ReplicateModel] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v) or ".." in v:
            raise ValueError("1-64 letters, digits, '_', '.', '-', starting with a letter or "
                             "digit (it becomes a file name)")
        return v

    @field_validator("segments")
    @classmethod
    def _segs(cls, v: list[SegmentModel]) -> list[SegmentModel]:
        return _check_segments(v, "point-to-point")

    @field_validator("intra")
    @classmethod
    def _intra(cls, v: list[SegmentModel]) -> list[SegmentModel]:
        return _check_segments(v, "same-node")

    @field_validator("provenance")
    @classmethod
    def _prov_keys(cls, v: dict[str, ProvenanceModel]) -> dict[str, ProvenanceModel]:
        unknown = sorted(set(v) - set(BY_NAME))
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(unknown)}; known: "
                             f"{', '.join(BY_NAME)}")
        return v


# Keys of files written before the schema: mapped, never silently dropped.
_LEGACY_KEYS = {"in_network_reduction"}


def _from_legacy(data: dict[str, Any], source: str) -> dict[str, Any]:
    d = dict(data)
    declared = bool(d.pop("in_network_reduction", False))
    unknown = sorted(set(d) - set(FabricFile.model_fields) - _LEGACY_KEYS)
    if unknown:
        raise FabricFileError(f"{source}: unknown key(s) {', '.join(unknown)} (see {DOCS})")
    d["fabric_schema"] = SCHEMA_VERSION
    notes = list(d.get("assumptions") or [])
    notes.append("read from a fabric file without a schema version: hop latency and "
                 "reduction rate as stored there")
    d.setdefault("hop_latency_us", 0.4)
    if declared:
        inn, prov = in_network_defaults(d.get("family", "custom"))
        d["in_network"] = {k: getattr(inn, k) for k in InNetworkModel.model_fields}
        d.setdefault("provenance", {}).update(
            {k: {"source": p.source, "assumed": p.assumed, "low": p.low, "high": p.high}
             for k, p in prov.items()})
        notes.append("in-network reduction declared in an old file: family defaults")
    d["assumptions"] = notes
    return d


def parse_fabric_text(text: str, source: str) -> Fabric:
    """A fabric from the text of a file (JSON or YAML), validated; errors name line and key."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        raw = None
    if isinstance(raw, dict) and "fabric_schema" not in raw:
        model = FabricFile.model_validate(_from_legacy(raw, source))
    else:
        model = parse_yaml_model(text, source, FabricFile, what="fabric file",
                                 hint="the keys of docs/model.md ('The fabric file')",
                                 docs=DOCS, error=FabricFileError)
    return to_fabric(model)


def validate_dict(d: dict[str, Any], source: str) -> Fabric:
    """A fabric from an in-memory dict (a simulated run's provenance), validated."""
    if "fabric_schema" not in d:
        d = _from_legacy(d, source)
    try:
        return to_fabric(FabricFile.model_validate(d))
    except Exception as exc:
        raise FabricFileError(f"{source}: not a valid fabric: {exc}") from None


def _seg(s: SegmentModel) -> Segment:
    return Segment(**s.model_dump())


def to_fabric(m: FabricFile) -> Fabric:
    return Fabric(
        name=m.name, segments=[_seg(s) for s in m.segments], origin=m.origin, family=m.family,
        source=m.source, assumptions=list(m.assumptions), overhead_us=m.overhead_us,
        gap_us=m.gap_us, nic_gap_us=m.nic_gap_us, noise_us=m.noise_us,
        noise_exponent=m.noise_exponent, node_memory_MBps=m.node_memory_MBps,
        calibrated_hops=m.calibrated_hops, hop_latency_us=m.hop_latency_us,
        link_bandwidth_MBps=m.link_bandwidth_MBps,
        exchange_slowdown=[list(x) for x in m.exchange_slowdown],
        contention_ranks=m.contention_ranks, contention=[list(x) for x in m.contention],
        reduce_us_per_byte=m.reduce_us_per_byte, intra=[_seg(s) for s in m.intra],
        fit=dict(m.fit),
        in_network=InNetwork(**m.in_network.model_dump()) if m.in_network else None,
        provenance={k: Provenance(**p.model_dump()) for k, p in m.provenance.items()},
        replicates=[Replicate([_seg(s) for s in r.segments], [_seg(s) for s in r.intra])
                    for r in m.replicates],
    )


def fabric_json(f: Fabric) -> str:
    """The file form, validated before it is written (a fabric that would not read back is
    an error here, not at the next `model predict`)."""
    d = {"fabric_schema": SCHEMA_VERSION, **f.to_dict()}
    FabricFile.model_validate(d)
    return json.dumps(d, indent=1) + "\n"
