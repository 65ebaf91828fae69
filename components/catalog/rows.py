"""The instance rows: each cloud's GPU instance types (catalog/<cloud>.yaml), validated, and the GPU model names
(gpus.yaml). The bottom of the catalog: availability, spot and resolution read it; it reads nothing of them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..datafile import load_yaml

Cloud = Literal["aws", "azure", "gcp", "alicloud", "tencentcloud", "huaweicloud"]
CLOUDS: tuple[Cloud, ...] = get_args(Cloud)  # a new cloud: its value in `Cloud`, its row in clouds.yaml
GpuVendor = Literal["nvidia", "amd"]
# The host CPU architecture, named as the catalogs' sources name it (DLAMI SSM paths, `uname -m`): GB200 hosts
# are NVIDIA Grace (arm64); every other row is x86_64. Debian's names (`dpkg --print-architecture`) in DEBIAN_ARCH.
Arch = Literal["x86_64", "arm64"]
DEBIAN_ARCH: dict[str, str] = {"x86_64": "amd64", "arm64": "arm64"}
# How image references spell each architecture: DLAMI SSM paths (x86_64, arm64), Canonical's SSM paths and GCP's Ubuntu
# families (amd64, arm64), Alibaba's public image names (x64, arm64), `uname -m` (aarch64). `image_arch` reads them.
ARCH_NAMES: dict[Arch, tuple[str, ...]] = {"x86_64": ("x86_64", "amd64", "x64"), "arm64": ("arm64", "aarch64")}
Fabric = Literal["efa", "infiniband", "gpudirect-tcpx", "gpudirect-tcpxo", "gpudirect-rdma", "erdma", "none"]
_DIR = Path(__file__).parent
# The keys of `gpu-cluster catalog --format json` rows, in order: a stable format.
PUBLIC_KEYS = (
    "cloud", "instanceType", "gpu", "gpus", "gpuMemoryGiB", "vcpus", "memoryGiB", "localNvmeCount", "localNvmeGb",
    "networkGbps", "fabric", "fabricDevices", "fabricGbps", "hourlyUsd", "source", "priceVerified", "priceNote",
)  # fmt: skip


class InstanceType(BaseModel):
    """One catalog row. Field names are the JSON keys of `gpu-cluster catalog --format json`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cloud: Cloud
    instanceType: str
    gpu: str | None
    gpuDescription: str | None = None
    gpus: int = Field(ge=1)
    # a vGPU slice (AWS g6f, Azure NVadsA10 v5 partial sizes): the share of one physical GPU the node gets, as the
    # cloud writes it ("1/8"); gpus is then 1 (one virtual GPU) and gpuMemoryGiB the slice's. None: whole GPUs.
    gpuFraction: str | None = Field(None, pattern=r"^1/[1-9][0-9]?$")
    gpuMemoryGiB: float | None
    vcpus: int | None
    memoryGiB: float | None
    localNvmeCount: int = Field(ge=0)
    localNvmeGb: float | None
    networkGbps: float | None
    fabric: Fabric
    fabricDevices: int = Field(ge=0)
    fabricGbps: float = Field(ge=0)
    networkCards: int | None
    arch: Arch = "x86_64"  # not in PUBLIC_KEYS: `catalog --format json` keeps its stable keys
    hourlyUsd: float | None
    source: str = Field(min_length=1)
    # False when no source independent of the row's own confirms hourlyUsd, or sources disagree:
    # the plan then says so in its cost row (with priceNote) and reports hourlyUsdVerified: false.
    priceVerified: bool = True
    priceNote: str | None = None
    notes: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _price_caveat(self) -> InstanceType:
        if not self.priceVerified and (self.hourlyUsd is None or not self.priceNote):
            raise ValueError(f"{self.instanceType}: priceVerified false needs an hourlyUsd and a priceNote saying why")
        if self.priceVerified and self.priceNote:
            raise ValueError(f"{self.instanceType}: priceNote says why a price is unverified; set priceVerified false")
        if self.gpuFraction is not None and (self.gpus != 1 or self.fraction >= 1):
            raise ValueError(f"{self.instanceType}: a gpuFraction row has gpus 1 and a fraction below 1")
        return self

    @property
    def fraction(self) -> Fraction:
        """The share of a physical GPU each of the row's GPUs is: 1 for whole GPUs, 1/8 for a g6f.large."""
        return Fraction(self.gpuFraction) if self.gpuFraction else Fraction(1)

    @property
    def gpu_equivalents(self) -> float:
        """Whole GPUs the node's GPUs add up to (a 1/8 slice: 0.125): what a price per GPU-hour divides by."""
        return float(self.gpus * self.fraction)

    @property
    def usd_per_gpu_hour(self) -> float | None:
        """USD per whole-GPU-hour: a vGPU slice's node price over its share (g6f.large: $0.202/h for 1/8 -> $1.616)."""
        return None if self.hourlyUsd is None else self.hourlyUsd / self.gpu_equivalents

    @property
    def gpu_request(self) -> str:
        """The `gpu:` value that asks for this row: `L4:1/8` for a slice, `H100:8` for whole GPUs."""
        return f"{self.gpu}:{self.gpuFraction or self.gpus}"

    @property
    def slice_text(self) -> str | None:
        """`1/8 of an L4, 3 GB` for a slice (the plan and compare say it), None for whole GPUs."""
        if self.gpuFraction is None:
            return None
        memory = "" if self.gpuMemoryGiB is None else f", {self.gpuMemoryGiB:g} GB"
        return f"{self.gpuFraction} of {with_article(self.gpu or self.gpuDescription or 'GPU')}{memory}"

    @property
    def has_fabric(self) -> bool:
        return self.fabric != "none"

    @property
    def gbps_per_fabric_device(self) -> float:
        return self.fabricGbps / self.fabricDevices if self.fabricDevices else 0.0

    @property
    def gpu_vendor(self) -> GpuVendor:
        """The GPU vendor (gpus.yaml `vendors:`). A row whose source does not name the model (Alibaba's unnamed
        96 GB HBM3 parts) keeps the NVIDIA stack every such row is built with today (Alibaba's NVIDIA driver script)."""
        return gpu_vendors()[self.gpu] if self.gpu else "nvidia"

    @property
    def label(self) -> str:
        model = self.gpu or self.gpuDescription or "GPU"
        if self.gpuFraction is not None:
            return f"{self.instanceType} ({self.slice_text})"
        return f"{self.instanceType} ({self.gpus} x {model})"

    def public_row(self) -> dict[str, Any]:
        """The stable JSON row of `gpu-cluster catalog --format json`."""
        return {k: getattr(self, k) for k in PUBLIC_KEYS}


@dataclass(frozen=True)
class CloudCatalog:
    """One cloud's data file: its instance types, and the rules and images the layers above read."""

    cloud: Cloud
    types: tuple[InstanceType, ...]
    sources: dict[str, str]
    prices: dict[str, Any]
    rules: dict[str, Any]
    images: dict[str, Any]


def with_article(model: str) -> str:
    """`an L4`, `an A10`, `a T4`: models are read letter by letter, so the article follows the first letter's name."""
    return f"{'an' if model[:1].upper() in 'AEFHILMNORSX' else 'a'} {model}"


def _canon(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


_VENDORS_KEY = "vendors"  # the one key of gpus.yaml that is not a model


@cache
def _gpus_file() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(_DIR / "gpus.yaml")
    return data


@cache
def gpu_aliases() -> dict[str, str]:
    """Every accepted spelling (normalised) -> canonical GPU model name."""
    table: dict[str, str] = {}
    for canonical, aliases in _gpus_file().items():
        if canonical == _VENDORS_KEY:
            continue
        for spelling in [canonical, *aliases]:
            table[_canon(spelling)] = canonical
    return table


@cache
def gpu_vendors() -> dict[str, GpuVendor]:
    """Canonical GPU model -> its vendor (gpus.yaml `vendors:`)."""
    table: dict[str, GpuVendor] = {}
    for vendor, models in _gpus_file()[_VENDORS_KEY].items():
        if vendor not in ("nvidia", "amd"):
            raise ValueError(f"gpus.yaml: vendors: unknown vendor {vendor!r}")
        for model in models:
            if model in table:
                raise ValueError(f"gpus.yaml: vendors: {model} is listed under {table[model]} and {vendor}")
            table[model] = vendor
    return table


def normalize_gpu(model: str) -> str | None:
    """`a100_80gb`, `A100-80GB`, `nvidia-a100-80gb` -> `A100-80GB`; None when unknown."""
    return gpu_aliases().get(_canon(model))


@cache
def load(cloud: Cloud) -> CloudCatalog:
    """Load and validate one cloud's catalog file (cached: the files never change at run time)."""
    path = _DIR / f"{cloud}.yaml"
    data = load_yaml(path) or {}
    rows = tuple(InstanceType(cloud=cloud, **row) for row in data.get("types") or [])
    known = set(gpu_aliases().values())
    seen: set[tuple[str, str | None, int]] = set()
    for row in rows:
        if row.gpu is not None and row.gpu not in known:
            raise ValueError(f"{path.name}: {row.instanceType}: gpu {row.gpu!r} is not in gpus.yaml")
        if row.gpu is not None and row.gpu not in gpu_vendors():
            raise ValueError(f"{path.name}: {row.instanceType}: gpu {row.gpu!r} has no vendor in gpus.yaml")
        key = (row.instanceType, row.gpu, row.gpus)
        if key in seen:
            raise ValueError(f"{path.name}: duplicate row {key}")
        seen.add(key)
    return CloudCatalog(
        cloud,
        rows,
        dict(data.get("sources") or {}),
        dict(data.get("prices") or {}),
        dict(data.get("rules") or {}),
        dict(data.get("images") or {}),
    )


def all_types(cloud: Cloud | None = None) -> list[InstanceType]:
    clouds = CLOUDS if cloud is None else (cloud,)
    return [row for c in clouds for row in load(c).types]


def find(cloud: Cloud, instance_type: str) -> list[InstanceType]:
    """Rows for an instance type name (several only for GCP n1 types with different GPUs)."""
    return [row for row in load(cloud).types if row.instanceType == instance_type]
