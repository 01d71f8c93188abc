"""Tuning profiles: YAML data files, validated, with errors that name the key and its line.

A profile is a list of settings. Each says what to set, why, where the advice comes from and
what it risks; `tune check` compares them with a target, `tune apply` makes the system ones
true, and the run-time ones (environment, socket options) are handed to the benchmark.
"""

import fnmatch
import os
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import FabenchError
from ..util.textfile import read_text
from ..util.yamlconf import parse_yaml_model

PROFILE_DIRS_ENV = "FABENCH_PROFILE_PATH"  # extra directories of user profiles, ':'-separated

# ethtool's short names (as `ethtool -K` takes them) -> the names `ethtool -k` prints.
OFFLOAD_ALIASES = {
    "rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
    "tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload", "lro": "large-receive-offload",
    "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload", "rxhash": "receive-hashing",
}


class ProfileError(FabenchError):
    """A profile is invalid or unknown; the message names the key and the line."""


class _Setting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    why: str = Field(min_length=1)
    source: str = Field(min_length=1)
    risk: str = Field(min_length=1)

    @property
    def runtime(self) -> bool:
        """A knob of the benchmark itself (no system change)."""
        return False


class _PerInterface(_Setting):
    # Shell-style patterns; empty = every interface of the target except loopback.
    interfaces: list[str] = Field(default_factory=list)

    def matches(self, iface: str) -> bool:
        if not self.interfaces:
            return iface != "lo"
        return any(fnmatch.fnmatchcase(iface, p) for p in self.interfaces)


class SysctlSetting(_Setting):
    kind: Literal["sysctl"]
    name: str
    value: str
    # at-least/at-most compare field by field (tcp_rmem has three), so a host already above a
    # minimum is left alone.
    match: Literal["exact", "at-least", "at-most"] = "exact"

    @field_validator("name")
    @classmethod
    def _dotted_name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9_]+(\.[A-Za-z0-9_-]+)+", v):
            raise ValueError(f"not a sysctl name: {v!r} (example: net.ipv4.tcp_rmem)")
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return " ".join(str(x) for x in v) if isinstance(v, list) else str(v)


class MtuSetting(_PerInterface):
    kind: Literal["mtu"]
    value: int = Field(ge=68, le=65535)


class OffloadSetting(_PerInterface):
    kind: Literal["offload"]
    feature: str
    value: Literal["on", "off"]

    @field_validator("value", mode="before")
    @classmethod
    def _onoff(cls, v: Any) -> Any:
        return {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v

    @property
    def long_name(self) -> str:
        return OFFLOAD_ALIASES.get(self.feature, self.feature)


class QuickackSetting(_PerInterface):
    kind: Literal["quickack"]
    value: Literal[0, 1]


_RTO_MIN = re.compile(r"(\d{1,7})(ms|s)")


def rto_min_ms(text: str) -> int:
    """`5ms` or `1s` as milliseconds; iproute2 takes raw jiffies for a bare number, so a
    unit is required."""
    m = _RTO_MIN.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a time for rto_min: {text!r} (examples: 5ms, 1s)")
    return int(m.group(1)) * (1000 if m.group(2) == "s" else 1)


class RtoMinSetting(_PerInterface):
    """Per-route minimum RTO; on kernels that derive the delayed-ACK ceiling from it (the
    audit measures whether this one does), it also bounds the delayed ACK ([001] opt. 4)."""

    kind: Literal["rto_min"]
    value: str

    @field_validator("value", mode="before")
    @classmethod
    def _time(cls, v: Any) -> str:
        ms = rto_min_ms(str(v))
        if not 1 <= ms <= 120_000:
            raise ValueError(f"rto_min {v!r} is outside 1ms..120s")
        return f"{ms}ms"

    @property
    def ms(self) -> int:
        return rto_min_ms(self.value)


class CpuSetting(_Setting):
    kind: Literal["cpu"]
    name: Literal["governor", "turbo", "smt"]
    value: str


class NumaSetting(_Setting):
    kind: Literal["numa"]
    value: Literal["nic-local"] = "nic-local"


class LosslessSetting(_PerInterface):
    """Audit only: what makes RoCE traffic lossless on a host, for the priority it travels
    on (PFC, trust mode and DSCP mapping, ECN/DCQCN, MTU) and the NIC counters that show
    whether the fabric behaves (pauses, ECN marks, CNPs, drops)."""

    kind: Literal["lossless"]
    priority: int = Field(default=3, ge=0, le=7)  # the lossless priority RoCE should use
    trust: Literal["pcp", "dscp"] | None = None  # None: either, as long as RoCE lands on it
    dscp: int | None = Field(default=None, ge=0, le=63)  # the DSCP RoCE should carry
    ecn: bool = True  # ECN/DCQCN wanted on the RoCE priority
    mtu: int | None = Field(default=None, ge=256, le=65535)  # the fabric's MTU, if fixed


class EnvSetting(_Setting):
    kind: Literal["env"]
    name: str
    value: str | None  # None: the variable should be unset

    @field_validator("name")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(f"not an environment variable name: {v!r}")
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return v if v is None else str(v)

    @property
    def runtime(self) -> bool:
        return True


class SocketSetting(_Setting):
    """A socket option of fabench's own TCP kernels, passed as a kernel option."""

    kind: Literal["socket"]
    name: Literal["nodelay", "quickack", "sndbuf", "rcvbuf"]
    value: int = Field(ge=0)

    @property
    def runtime(self) -> bool:
        return True

    def kernel_args(self) -> list[str]:
        if self.name in ("nodelay", "quickack"):
            return [f"--{self.name}"] if self.value else []
        return [f"--{self.name}", str(self.value)]


Setting = Annotated[
    SysctlSetting | MtuSetting | OffloadSetting | QuickackSetting | RtoMinSetting | CpuSetting
    | NumaSetting | EnvSetting | SocketSetting | LosslessSetting,
    Field(discriminator="kind"),
]
KINDS = ("sysctl", "mtu", "offload", "quickack", "rto_min", "cpu", "numa", "env", "socket",
         "lossless")


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    settings: list[Setting] = Field(min_length=1)
    source_file: str | None = Field(default=None, exclude=True)

    @property
    def system_settings(self) -> list[Any]:
        return [s for s in self.settings if not s.runtime]

    @property
    def runtime_settings(self) -> list[Any]:
        return [s for s in self.settings if s.runtime]

    def runtime_env(self) -> dict[str, str]:
        return {s.name: s.value for s in self.settings
                if isinstance(s, EnvSetting) and s.value is not None}

    def runtime_unset(self) -> list[str]:
        return [s.name for s in self.settings if isinstance(s, EnvSetting) and s.value is None]

    def kernel_args(self) -> list[str]:
        out: list[str] = []
        for s in self.settings:
            if isinstance(s, SocketSetting):
                out += s.kernel_args()
        return out


def builtin_dir() -> Path:
    return Path(str(resources.files("fabench.tune") / "profiles"))


def _search_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(PROFILE_DIRS_ENV, "").split(":") if p]
    return [*extra, builtin_dir()]


def available_profiles() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in reversed(_search_dirs()):  # user directories override built-in names
        for f in sorted(d.glob("*.yaml")) if d.is_dir() else []:
            found[f.stem] = f
    return dict(sorted(found.items()))


def load_profile(name_or_path: str) -> Profile:
    """A built-in or user profile by name, or a YAML file by path."""
    path = Path(name_or_path)
    if not (name_or_path.endswith((".yaml", ".yml")) or path.is_file()):
        known = available_profiles()
        if name_or_path not in known:
            raise ProfileError(f"unknown profile {name_or_path!r}; known: "
                               f"{', '.join(known) or 'none'} (or give a YAML file)")
        path = known[name_or_path]
    try:
        text = read_text(path, "profile", ProfileError)
    except FileNotFoundError:
        raise ProfileError(f"cannot read profile {path}: no such file") from None
    return parse_profile(text, str(path))


def parse_profile(text: str, source: str = "<profile>") -> Profile:
    # Union-member tags ("sysctl") are dropped from reported keys: the user wrote
    # settings[2].value, not settings[2].sysctl.value.
    prof = parse_yaml_model(
        text, source, Profile, what="tuning profile", hint="'name:' and 'settings:'",
        docs="docs/tuning.md", error=ProfileError, skip_loc=lambda p: p in KINDS,
        messages={"union_tag_invalid": f"unknown kind; one of {', '.join(KINDS)}",
                  "union_tag_not_found": f"'kind:' is missing; one of {', '.join(KINDS)}"})
    return prof.model_copy(update={"source_file": source})
