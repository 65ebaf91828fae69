"""Choosing the GPU: `compare` (one GPU across clouds) and `recommend` (a workload -> ranked options).

Pure: catalog rows and availability data in, plain data out; the CLI only parses flags and renders.
Every formula and constant is documented, with its source, in docs/recommend.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from . import catalog
from .catalog import CLOUDS, InstanceType, availability, fixed_prices, spot
from .errors import ConfigError

Workload = Literal["training", "fine-tuning", "inference", "rendering", "hpc"]
WORKLOADS: tuple[str, ...] = ("training", "fine-tuning", "inference", "rendering", "hpc")
Precision = Literal["bf16", "fp8", "int4"]
PRECISIONS: tuple[str, ...] = ("bf16", "fp8", "int4")

GIB = 1024**3
# Bytes per parameter of the weights (bf16 2, fp8 1, int4 0.5): the formats' widths (docs/recommend.md [W]).
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "int4": 0.5}
# Mixed-precision Adam: bf16 weights and gradients (2 + 2) plus fp32 master weights, momentum and variance
# (4 + 4 + 4) = 16 bytes per parameter, sharded across the GPUs (ZeRO-3 / FSDP) (docs/recommend.md [Z]).
TRAIN_BYTES_PER_PARAM = 16.0
# The share of a GPU's memory a plan may fill; the rest is the runtime's (CUDA context, activations,
# fragmentation): the default of vLLM's gpu_memory_utilization and TensorRT-LLM's free_gpu_memory_fraction [H].
USABLE_FRACTION = 0.9
# Inference defaults when the model's shape is not given: the context and batch (Llama 2's 4096-token
# context, one sequence), and the nearest Llama 2 shape (layers, KV heads, head size) [L].
DEFAULT_CONTEXT = 4096
DEFAULT_BATCH = 1
LLAMA2_SHAPES: tuple[tuple[float, int, int, int], ...] = (
    (7e9, 32, 32, 128),  # up to 10B parameters: Llama-2-7B (multi-head attention)
    (13e9, 40, 40, 128),  # up to 30B: Llama-2-13B
    (70e9, 80, 8, 128),  # above: Llama-2-70B (grouped-query attention, 8 KV heads)
)
# GPUs fit for a workload that is not a model in memory, with why (docs/recommend.md [R], [F]).
# Only models a source places there; others join with a source (docs/recommend.md lists what is missing).
RENDERING_GPUS = ("T4", "A10", "L40S")  # RT cores (T4, A10) / NVIDIA's visualization line (L40S)
HPC_GPUS = ("A100", "A100-80GB", "B200")  # FP64 at half the FP32 rate (A100) / "for those who need FP64" (B200)


def parse_size(text: str, flag: str, suffixes: dict[str, float]) -> float:
    """`70B`, `7.5b`, `32k`, `1M` -> a number; exit-2 ConfigError naming the flag otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]?)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in suffixes):
        allowed = ", ".join(f"{k.upper()}" for k in suffixes)
        raise ConfigError(flag, f"got {text!r}; expected a number with an optional suffix ({allowed}), e.g. 70B or 32k")
    value = float(match.group(1)) * suffixes.get(unit, 1.0)
    if value <= 0:
        raise ConfigError(flag, f"got {text!r}; must be more than 0")
    return value


PARAM_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
TOKEN_SUFFIXES = {"k": 1024.0, "m": 1024.0**2}


# --- compare ----------------------------------------------------------------------------------------


def _price_key(row: InstanceType) -> tuple[float, float, str, str]:
    per = row.usd_per_gpu_hour
    return (per if per is not None else math.inf, row.hourlyUsd or math.inf, row.cloud, row.instanceType)


def compare_row(row: InstanceType, region: str | None = None) -> dict[str, Any]:
    """One type of `compare --format json` (keys only ever added)."""
    gpu = row.gpu  # per-GPU availability (GCP n1)
    found = availability.offer(row.cloud, row.instanceType, gpu=gpu)
    per = row.usd_per_gpu_hour
    return {
        "cloud": row.cloud,
        "instanceType": row.instanceType,
        "gpu": row.gpu,
        "gpus": row.gpus,
        "gpuMemoryGiB": row.gpuMemoryGiB,
        "vcpus": row.vcpus,
        "memoryGiB": row.memoryGiB,
        "fabric": row.fabric,
        "fabricGbps": row.fabricGbps,
        "localNvmeCount": row.localNvmeCount,
        "localNvmeGb": row.localNvmeGb,
        "hourlyUsd": row.hourlyUsd,
        "usdPerGpuHour": None if per is None else round(per, 5),
        "priceRegion": catalog.load(row.cloud).prices.get("region"),
        "priceVerified": row.priceVerified,
        "regions": None if found is None else list(found.regions),
        "soldInRegion": None if region is None else availability.sold_in(row.cloud, row.instanceType, region, gpu=gpu),
        "source": row.source,
        # keys added later: the reference spot price in priceRegion (a snapshot; catalog/spot/<cloud>.yaml), and
        # whether the type is sold as spot (true: a price is known, false: a source says not, null: unknown)
        "spotHourlyUsd": spot.hourly_usd(row),
        "spotOffered": spot.offered(row),
        # keys added later: the cloud's own on-demand list price where it bills in another currency (Alibaba,
        # Tencent: CNY), never converted to USD; its region (the --region asked, else the price file's)
        **local_price(row, region),
        # added later: the share of one GPU a vGPU slice is ("1/8"; None: whole GPUs); usdPerGpuHour counts it
        "gpuFraction": row.gpuFraction,
    }


def local_price(row: InstanceType, region: str | None = None) -> dict[str, Any]:
    """`localHourly`, `localCurrency`, `localPriceRegion` of `compare --format json` (all None on a USD cloud, and
    the hourly and region None where prices/<cloud>.yaml has no price for the type there)."""
    prices = fixed_prices.load(row.cloud)
    if prices.currency == "USD":
        return {"localHourly": None, "localCurrency": None, "localPriceRegion": None}
    price = prices.instance(row.instanceType, region or prices.region)
    where = None if price.hourly is None else price.region
    return {"localHourly": price.hourly, "localCurrency": prices.currency, "localPriceRegion": where}


def compare(gpu: str, count: int | None = None, region: str | None = None) -> list[InstanceType]:
    """Every cloud's types with `gpu` (and `count` whole GPUs: a count leaves the vGPU slices out), cheapest per
    GPU-hour first (unpriced last).

    With a region, only the types the availability data lists there, then those whose availability
    there is unknown for a cloud that has the region (never a type the data says is not sold there)."""
    rows = [
        r for r in catalog.all_types() if r.gpu == gpu and (count is None or (r.gpus == count and not r.gpuFraction))
    ]
    if region is not None:
        rows = [r for r in rows if _may_sell(r, region)]
    return sorted(rows, key=_price_key)


def _may_sell(row: InstanceType, region: str) -> bool:
    sold = availability.sold_in(row.cloud, row.instanceType, region, gpu=row.gpu)
    if sold is not None:
        return sold
    return region in region_names(row.cloud)


def region_names(cloud: str) -> frozenset[str]:
    """The regions gpu-cluster knows for a cloud: the availability source's, the price region, the rules' list."""
    data = catalog.load(cloud)
    known = set(availability.load(cloud).covered)
    if data.prices.get("region"):
        known.add(str(data.prices["region"]))
    known.update(str(r) for r in data.rules.get("regions") or [])
    return frozenset(known)


# --- recommend --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """What the workload needs in GPU memory, and how that was worked out (each term in GiB)."""

    workload: str
    total_gib: float
    terms: tuple[tuple[str, float], ...]
    per_gpu_min_gib: float = 0.0  # rendering / hpc: no model to fit, only a floor per GPU

    def explain(self) -> str:
        return " + ".join(f"{name} {gib:,.1f} GiB" for name, gib in self.terms) or "no model memory"


@dataclass(frozen=True)
class Option:
    row: InstanceType
    nodes: int
    gpus_needed: int
    region: str
    why: str
    spot: bool = False  # ranked by the reference spot price (recommend --spot)
    # multi-node: whether NCCL can use the type's fabric on image auto (catalog.fabric_usable); single-node: true
    fabric_usable: bool = True

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.row.gpus

    @property
    def hourly_usd(self) -> float | None:
        return None if self.row.hourlyUsd is None else self.row.hourlyUsd * self.nodes

    @property
    def spot_usd(self) -> float | None:
        per_node = spot.hourly_usd(self.row)
        return None if per_node is None else per_node * self.nodes

    @property
    def rank_usd(self) -> float | None:
        """What the option is ranked and budgeted by: with --spot the spot price where known, else on-demand."""
        per_node = _rank_price(self.row, self.spot)
        return None if per_node is None else per_node * self.nodes

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    def as_json(self) -> dict[str, Any]:
        per = self.row.usd_per_gpu_hour
        return {
            "cloud": self.row.cloud,
            "instanceType": self.row.instanceType,
            "gpu": self.row.gpu,
            "gpusPerNode": self.row.gpus,
            "gpuMemoryGiB": self.row.gpuMemoryGiB,
            "nodes": self.nodes,
            "totalGpus": self.total_gpus,
            "gpusNeeded": self.gpus_needed,
            "multiNode": self.multi_node,
            "fabric": self.row.fabric,
            "fabricGbps": self.row.fabricGbps,
            "hourlyUsd": None if self.hourly_usd is None else round(self.hourly_usd, 4),
            "usdPerGpuHour": None if per is None else round(per, 5),
            "priceVerified": self.row.priceVerified,
            "region": self.region,
            "why": self.why,
            "source": self.row.source,
            # keys added later: the option's reference spot price per hour (all nodes; a snapshot) and whether the
            # type is sold as spot (null: unknown)
            "spotHourlyUsd": None if self.spot_usd is None else round(self.spot_usd, 4),
            "spotOffered": spot.offered(self.row),
            # added later: false for a multi-node option whose fabric NCCL cannot use on image auto (ranked last)
            "fabricUsable": self.fabric_usable,
            # added later: a vGPU slice's share of one GPU ("1/8"; None: whole GPUs)
            "gpuFraction": self.row.gpuFraction,
        }


def _rank_price(row: InstanceType, use_spot: bool) -> float | None:
    """Per node: the spot price when ranking for spot and it is known, else the on-demand price (for an unknown
    spot price, its upper bound: the plan's cost row reads it the same way)."""
    if use_spot:
        found = spot.hourly_usd(row)
        if found is not None:
            return found
    return row.hourlyUsd


def _rank_key(row: InstanceType, use_spot: bool) -> tuple[bool, float]:
    """Cheapest first, unpriced last (per node; with --spot the spot price where known)."""
    price = _rank_price(row, use_spot)
    return (price is None, price or 0.0)


def memory_need(
    workload: str,
    params: float | None,
    precision: str = "bf16",
    context: int | None = None,
    batch: int | None = None,
    gpu_memory: float | None = None,
) -> Need:
    """The GPU memory a workload needs (docs/recommend.md, "Memory")."""
    if workload not in WORKLOADS:
        raise ConfigError("--workload", f"got {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if precision not in PRECISIONS:
        raise ConfigError("--precision", f"got {precision!r}; allowed: {', '.join(PRECISIONS)}")
    if workload in ("rendering", "hpc"):
        return Need(workload, 0.0, (), gpu_memory or 0.0)
    if params is None:
        raise ConfigError("--model-params", f"required for --workload {workload} (for example 70B)")
    if workload in ("training", "fine-tuning"):
        if precision == "int4":
            raise ConfigError(
                "--precision", f"int4 with --workload {workload}: full training keeps bf16/fp32 states; use bf16"
            )
        states = params * TRAIN_BYTES_PER_PARAM / GIB
        return Need(workload, states, (("weights, gradients and Adam states (16 B/param)", states),))
    weights = params * WEIGHT_BYTES[precision] / GIB
    _, layers, kv_heads, head_dim = next((s for s in LLAMA2_SHAPES if params <= s[0] * 1.45), LLAMA2_SHAPES[-1])
    tokens = (context or DEFAULT_CONTEXT) * (batch or DEFAULT_BATCH)
    kv_bytes = 1.0 if precision == "fp8" else 2.0
    kv = 2 * layers * kv_heads * head_dim * tokens * kv_bytes / GIB
    return Need(
        workload,
        weights + kv,
        ((f"weights ({WEIGHT_BYTES[precision]:g} B/param)", weights), (f"KV cache ({tokens:,} tokens)", kv)),
    )


def _fits_workload(row: InstanceType, need: Need) -> bool:
    if row.gpu is None or row.gpuMemoryGiB is None:
        return False
    if need.workload == "rendering" and row.gpu not in RENDERING_GPUS:
        return False
    if need.workload == "hpc" and row.gpu not in HPC_GPUS:
        return False
    return row.gpuMemoryGiB >= need.per_gpu_min_gib


def recommend(
    need: Need,
    cloud: str | None = None,
    gpus_max: int | None = None,
    budget: float | None = None,
    region: str | None = None,
    limit: int = 10,
    use_spot: bool = False,
) -> list[Option]:
    """Ranked options: per (cloud, GPU model) the cheapest type that holds the need on one node, else the
    fewest nodes of the type with the most GPUs and a fabric; then by cost per hour (docs/recommend.md).
    With `use_spot`: types a source says are not sold as spot are left out, and the price is the reference spot
    price where known, else the on-demand price (its upper bound)."""
    if cloud is not None and cloud not in CLOUDS:
        raise ConfigError("--cloud", f"got {cloud!r}; allowed: {', '.join(CLOUDS)}")
    if gpus_max is not None and gpus_max < 1:
        raise ConfigError("--gpus-max", f"got {gpus_max}; must be 1 or more")
    if budget is not None and budget <= 0:
        raise ConfigError("--budget", f"got {budget:g}; must be more than 0 (USD per hour)")
    rows = [r for r in catalog.all_types(cloud) if _fits_workload(r, need)]
    if use_spot:
        rows = [r for r in rows if spot.offered(r) is not False]
    if region is not None:
        rows = [r for r in rows if _may_sell(r, region)]
    # a model's vGPU slices are a group of their own (per fraction), so a slice that holds the need is offered
    # beside, and being cheaper before, the cheapest whole GPU of the model
    groups: dict[tuple[str, str, str], list[InstanceType]] = {}
    for row in rows:
        groups.setdefault((row.cloud, str(row.gpu), row.gpuFraction or ""), []).append(row)
    options = [opt for group in groups.values() if (opt := _best_of(group, need, region, use_spot)) is not None]
    if gpus_max is not None:
        options = [o for o in options if o.total_gpus <= gpus_max]
    if budget is not None:
        within = [o for o in options if o.rank_usd is not None and o.rank_usd <= budget]
        if not within:
            priced = sorted((o for o in options if o.rank_usd is not None), key=lambda o: o.rank_usd or 0)
            cheapest = (
                f"; the cheapest fit is {priced[0].row.instanceType} x {priced[0].nodes} at "
                f"${priced[0].rank_usd:,.2f}/h" + (" (spot where known)" if use_spot else "")
                if priced
                else ""
            )
            raise ConfigError("--budget", f"no option needs less than ${budget:,.2f}/h{cheapest}")
        options = within
    if not options:
        raise ConfigError(
            "--gpus-max" if gpus_max is not None else "--model-params",
            f"nothing in the catalog holds {need.total_gib:,.1f} GiB ({need.explain()})"
            + (f" within {gpus_max} GPUs" if gpus_max is not None else ""),
        )
    # a multi-node option whose fabric NCCL cannot use ranks after every option that trains at the fabric's speed
    options.sort(
        key=lambda o: (not o.fabric_usable, o.rank_usd is None, o.rank_usd or 0.0, o.row.cloud, o.row.instanceType)
    )
    return options[:limit]


def _gpus_needed(row: InstanceType, need: Need) -> int:
    if need.total_gib <= 0:
        return 1
    usable = float(row.gpuMemoryGiB or 0) * USABLE_FRACTION
    return max(1, math.ceil(need.total_gib / usable))


def _vendor_note(row: InstanceType) -> str:
    """Not NVIDIA: what the plan will not cover, so a ranking never hides it (catalog.vendor_gaps)."""
    if row.gpu_vendor == "nvidia":
        return ""
    return (
        f"; {row.gpu_vendor} GPUs: the health check's GPU checks, GPU metrics and the fabric's collective library "
        "are not covered by gpu-cluster (docs/recommend.md)"
    )


def _spot_note(row: InstanceType, use_spot: bool) -> str:
    """With --spot: the spot price behind the ranking, said to be a snapshot (or that it is unknown)."""
    if not use_spot:
        return ""
    found = spot.lookup(row)
    if found is None or found.hourly_usd is None:
        return "; spot price unknown: ranked by its on-demand price, the upper bound"
    return (
        f"; spot ${found.hourly_usd:g}/h per node is a reference snapshot ({found.region}, read {found.date}; "
        "spot prices move and capacity can be reclaimed)"
    )


def _best_of(group: list[InstanceType], need: Need, region: str | None, use_spot: bool = False) -> Option | None:
    cheapest = sorted(group, key=lambda r: (*_rank_key(r, use_spot), r.instanceType))

    def holds(row: InstanceType, needed: int) -> str:
        per = float(row.gpuMemoryGiB or 0)
        return f"{need.total_gib:,.1f} GiB / ({per:g} GiB x {USABLE_FRACTION:g} usable per GPU) -> {needed} GPU" + (
            "s" if needed > 1 else ""
        )

    for row in cheapest:
        needed = _gpus_needed(row, need)
        if row.gpus >= needed:
            why = f"{holds(row, needed)}; the cheapest {row.cloud} {row.gpu} type with that many"
            if row.gpuFraction:  # one slice holds it: no whole GPU needed
                why = f"{holds(row, needed)}; the cheapest {row.cloud} vGPU slice ({row.slice_text}) that holds it"
            if need.total_gib <= 0:
                why = f"{need.workload}: {row.gpu} is fit for it (docs/recommend.md); the cheapest {row.cloud} type"
            why += _vendor_note(row) + _spot_note(row, use_spot)
            return Option(row, 1, needed, _region_for(row, region), why, use_spot)
    wired = [r for r in group if r.has_fabric]
    if not wired:
        return None  # several nodes without a fabric: not offered
    # a fabric NCCL can use on image auto first (catalog.fabric_usable): GCP's a3-highgpu-8g has GPUDirect-TCPX
    # hardware but no public image with its kernel, so a3-megagpu-8g is the H100 type for training across nodes
    usable = [r for r in wired if catalog.fabric_usable(r)[0]]
    biggest = max(usable or wired, key=lambda r: (r.gpus, -(_rank_price(r, use_spot) or math.inf)))
    ok, unusable = catalog.fabric_usable(biggest)
    needed = _gpus_needed(biggest, need)
    nodes = math.ceil(needed / biggest.gpus)
    why = (
        f"{holds(biggest, needed)} = {nodes} nodes of {biggest.gpus}; multi-node, so the fabric matters: "
        f"{biggest.fabric} {biggest.fabricGbps:g} Gb/s per node"
    )
    if not ok:
        why += f", NOT usable by NCCL on image auto ({unusable}): ranked after the options whose fabric is"
    why += _vendor_note(biggest) + _spot_note(biggest, use_spot)
    return Option(biggest, nodes, needed, _region_for(biggest, region), why, use_spot, ok)


def _region_for(row: InstanceType, region: str | None) -> str:
    """The region to build in: the one asked for, else the price region when the type is not known to be
    missing there, else the first region the availability data lists."""
    if region is not None:
        return region
    price_region = str(catalog.load(row.cloud).prices.get("region") or "")
    found = availability.offer(row.cloud, row.instanceType, gpu=row.gpu)
    if found is None or availability.sold_in(row.cloud, row.instanceType, price_region, gpu=row.gpu) is not False:
        return price_region
    return availability.nearest_first(price_region, found.regions)[0]


def stack_config(option: Option, name: str) -> dict[str, Any]:
    """A stack file (`config:` mapping) for the option, in the shape of the shipped stacks."""
    row, cloud = option.row, option.row.cloud
    rules = catalog.load(cloud).rules
    region_rule = rules["region"]
    values: dict[str, Any] = {region_rule["key"]: option.region}
    if region_rule.get("project"):
        values[region_rule["project"]] = "my-project"  # placeholder: set your project id
    cluster: dict[str, Any] = {
        "name": name,
        "instanceType": row.instanceType,
        "gpu": row.gpu_request,
        "nodes": option.nodes,
        "tags": {"environment": name},
    }
    if option.spot:
        cluster["spot"] = True
    zones = availability.zones_selling(cloud, row.instanceType, option.region, gpu=row.gpu)
    if cloud == "gcp" and not zones:
        raise ConfigError(
            "--write-stack",
            f"the zones of {option.region} that sell {row.instanceType} are not known; set zone by hand",
        )
    values["gpu-cluster:cloud"] = cloud
    values["gpu-cluster:cluster"] = cluster
    return values
