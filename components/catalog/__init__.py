"""The instance catalog: GPU instance types per cloud, loaded from the YAML files beside this module.

Rows are data with sources (see SCHEMA.md); this module only loads, validates and resolves them.
`resolve` turns `H100:8` into one instance type with a documented rule, as SkyPilot does for
accelerator strings: among the types with exactly that GPU model and count, the smallest
(vCPUs, then memory) wins, then the cheapest, then the name, so the choice is stable. Given a region,
types the availability data says are not sold there are left out first (`availability.py`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from . import availability
from .rows import (
    ARCH_NAMES,
    CLOUDS,
    DEBIAN_ARCH,
    PUBLIC_KEYS,
    Arch,
    Cloud,
    CloudCatalog,
    Fabric,
    GpuVendor,
    InstanceType,
    all_types,
    find,
    gpu_aliases,
    gpu_vendors,
    load,
    normalize_gpu,
    with_article,
)

# the rows are the package's own API (catalog.rows); what it defines itself follows
__all__ = [
    "ARCH_NAMES",
    "CLOUDS",
    "DEBIAN_ARCH",
    "PUBLIC_KEYS",
    "Arch",
    "Cloud",
    "CloudCatalog",
    "Fabric",
    "GpuVendor",
    "InstanceType",
    "all_types",
    "find",
    "gpu_aliases",
    "gpu_vendors",
    "load",
    "normalize_gpu",
    "with_article",
]


@dataclass(frozen=True)
class Resolution:
    """The type picked for a request, and a sentence saying why (shown in the plan)."""

    type: InstanceType
    reason: str
    # multi-node: why no type of the request has a fabric NCCL can use (None when the pick has one, or single-node)
    fabric_problem: str | None = None


class CatalogError(ValueError):
    """A request the catalog cannot satisfy; the message lists what is available."""


def vendor_image(cloud: Cloud, row: InstanceType) -> dict[str, Any] | None:
    """The `image: auto` entry of a type whose GPUs are not NVIDIA's (`images.vendors.<vendor>` of the cloud's file),
    None for NVIDIA types (their images are `images.default` / `families`). A vendor the file has no image for gets
    an entry without `urn`, with a `reason`: the layout refuses `image: auto` rather than boot an NVIDIA image."""
    if row.gpu_vendor == "nvidia":
        return None
    entry: dict[str, Any] | None = (load(cloud).images.get("vendors") or {}).get(row.gpu_vendor)
    if entry is None:
        return {"urn": None, "reason": f"catalog/{cloud}.yaml has no image for {row.gpu_vendor} GPUs (images.vendors)"}
    return entry


def arch_image(cloud: Cloud, row: InstanceType) -> dict[str, Any] | None:
    """The `image: auto` entry of a type whose host is not x86_64 (`images.arch.<arch>` of the cloud's file), None
    for x86_64 types (their images are `images.default` / `families` / `vendors`). The entry wins over those: they are
    x86_64 images. An arch the file has no entry for gets one with only a `reason`, and an entry may itself carry no
    image (Azure: Microsoft publishes none): the layout then refuses `image: auto`, never boots an x86_64 image."""
    if row.arch == "x86_64":
        return None
    entry: dict[str, Any] | None = (load(cloud).images.get("arch") or {}).get(row.arch)
    if entry is None:
        return {"reason": f"catalog/{cloud}.yaml has no {row.arch} image (images.arch)"}
    return entry


def image_arch(reference: str) -> Arch | None:
    """The architecture an image reference names (an SSM path, an image family or name, a URN), None when it names
    none, or both. A name counts only as a whole word: `x86_64` in `/ami/x86_64/`, `arm64` in `-2204-lts-arm64`."""
    named = {
        arch
        for arch, names in ARCH_NAMES.items()
        for name in names
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", reference)
    }
    return named.pop() if len(named) == 1 else None


def cpu_arch(cloud: Cloud, instance_type: str) -> Arch:
    """The CPU architecture of a type: a catalog row's `arch`, else (a CPU type: login node, Slurm head) arm64 when the
    cloud's `rules.cpuArch.arm64.pattern` matches it, else x86_64 (a cloud without the rule, Tencent: none sourced)."""
    rows = find(cloud, instance_type)
    if rows:
        return rows[0].arch
    rule = (load(cloud).rules.get("cpuArch") or {}).get("arm64")
    return "arm64" if rule and re.fullmatch(rule["pattern"], instance_type) else "x86_64"


def cpu_image(cloud: Cloud, instance_type: str) -> dict[str, Any]:
    """The image of a CPU node (login node, Slurm head) on its architecture: `images.login` (Alibaba and Tencent without
    one: `images.default`), its `arch.<arch>` entry on a host that is not x86_64. An arch the entry has none for gets
    an entry with only a `reason`, which the spec refuses; never an x86_64 image on an arm64 host."""
    images = load(cloud).images
    entry: dict[str, Any] = images.get("login") or images["default"]
    arch = cpu_arch(cloud, instance_type)
    if arch == "x86_64":
        return entry
    found: dict[str, Any] | None = (entry.get("arch") or {}).get(arch)
    if found is None:
        return {"reason": f"catalog/{cloud}.yaml has no {arch} image for CPU nodes (images.login.arch)"}
    return found


def gpu_image(cloud: Cloud, row: InstanceType) -> dict[str, Any]:
    """The `image: auto` entry of a GPU row: its vendor's, else its architecture's, else the longest matching family
    prefix, else the default (the order the layouts pick in)."""
    entry = vendor_image(cloud, row) or arch_image(cloud, row)
    if entry is not None:
        return entry
    images = load(cloud).images
    families: dict[str, Any] = images.get("families") or {}
    match = max((p for p in families if row.instanceType.startswith(p)), key=len, default=None)
    found: dict[str, Any] = families[match] if match else images["default"]
    return found


# The key that names an image entry's image, per cloud (ssmParameter AWS, urn Azure, family GCP, nameRegex Alibaba,
# osName Tencent): what a message quotes.
IMAGE_KEYS = ("ssmParameter", "urn", "family", "nameRegex", "osName")


def fabric_present(row: InstanceType) -> tuple[bool, str]:
    """Whether the row has a fabric the layouts wire, and if not why (`extra.fabricUnwired`: hardware the catalog does
    not wire). With a custom image this is all the catalog can judge: the image may bring the fabric's software."""
    if row.has_fabric:
        return True, ""
    return False, str(row.extra.get("fabricUnwired") or "no HPC fabric")


def fabric_usable(row: InstanceType) -> tuple[bool, str]:
    """Whether NCCL can use the row's fabric between nodes on `image: auto` (VMs), by the catalog's own data, and if not
    why, in one sentence ("" when usable). The data: AWS `images.default.efa.supportedFamilies` (the DLAMI), Azure the
    image's `fabric.infiniband` topology families, GCP `rules.fabricEnablement` (`missing`, vouched `images`), Alibaba
    and Tencent the image's `fabricSupport`; a row without a fabric may say what it has unwired (`extra.fabricUnwired`).
    The layouts decide the same for the plan (`fabric_usability`, on the configured image); a test keeps them equal."""
    present, why = fabric_present(row)
    if not present:
        return False, why
    data = load(row.cloud)
    default: dict[str, Any] = data.images["default"]
    entry = gpu_image(row.cloud, row)
    image = next((str(entry[k]) for k in IMAGE_KEYS if entry.get(k)), "its image")
    if row.cloud == "aws":
        family = row.instanceType.split(".", 1)[0]
        if entry is not default:
            return False, f"EFA software on {image}: the catalog vouches for it on the x86_64 DLAMI only"
        if family not in (default.get("efa") or {}).get("supportedFamilies", []):
            return False, f"{family} is not among the instance types the DLAMI ({image}) supports (its release notes)"
        return True, ""
    if row.cloud == "azure":
        vouched: dict[str, Any] = (entry.get("fabric") or {}).get(row.fabric) or {}
        if entry is not default:
            return False, str(vouched.get("reason") or f"no image vouches for {row.fabric} on {row.instanceType}")
        size = row.instanceType.lower()
        for family in (vouched.get("families") or {}).values():
            if any(fnmatch.fnmatchcase(size, pattern) for pattern in family["sizes"]):
                return True, ""
        return False, f"{image} has no NCCL topology family for {row.instanceType}"
    if row.cloud == "gcp":
        enable: dict[str, Any] | None = data.rules["fabricEnablement"].get(row.fabric)
        if enable is None:
            return False, f"{row.fabric}: no enablement is known to gpu-cluster"
        if row.arch != "x86_64":  # the x86_64 packages and images do not apply: the arch's own entry wins
            enable = {
                **enable,
                **(enable.get("arch") or {}).get(row.arch, {"missing": [f"{row.fabric} on {row.arch}"]}),
            }
        if "missing" in enable:
            return False, "missing " + "; ".join(str(m) for m in enable["missing"])
        if f"{entry.get('project')}/{entry.get('family')}" not in enable["images"]:
            return False, f"{row.fabric} enablement is sourced on {', '.join(enable['images'])}, not on {image}"
        return True, ""
    if (entry.get("fabricSupport") or {}).get(row.fabric):  # the clouds whose images say it in their capabilities
        return True, ""
    return False, f"image {image}: no source that it brings what NCCL needs over {row.fabric} (its fabricSupport)"


def min_root_gb(entry: Mapping[str, Any]) -> int | None:
    """The smallest root disk an image entry boots from (`minRootGb`, sourced in the catalog), None when unsourced:
    the cloud refuses a root disk smaller than the image's, so the spec refuses a storage.rootGb below it."""
    value = entry.get("minRootGb")
    return None if value is None else int(value)


def arch_unsupported(row: InstanceType | Arch, packages_repo: str) -> bool:
    """Whether an apt repository line limited to some architectures (`deb [arch=amd64 ...] URL ...`, as
    catalog/slurm.yaml gives the Slurm packages') leaves out the row's architecture (or the architecture given)."""
    arch = row if isinstance(row, str) else row.arch
    match = re.search(r"\[[^]]*\barch=([\w,]+)", packages_repo)
    return match is not None and DEBIAN_ARCH[arch] not in match.group(1).split(",")


def arch_gaps(row: InstanceType, *, lustre: bool) -> list[str]:
    """What the node bootstrap does not vouch for on a host that is not x86_64, one sentence each (for the plan's
    findings, like vendor_gaps). Everything else a node fetches is architecture-neutral (SCHEMA.md, CPU architecture);
    the Lustre clients are kernel-module packages whose arm64 builds no source read confirms."""
    if row.arch == "x86_64" or not lustre:
        return []
    return [
        f"{row.instanceType} is {row.arch}: storage.shared lustre mounts with the cloud's Lustre client packages "
        f"(catalog/storage/{row.cloud}.yaml), whose {row.arch} builds gpu-cluster has not verified; a failed "
        "install leaves the mount absent, which the boot health check reports"
    ]


def vendor_gaps(row: InstanceType, *, health: bool, metrics: bool) -> list[str]:
    """What the node bootstrap does not cover on a type whose GPUs are not NVIDIA's, one sentence each (for the plan's
    findings): the health check's GPU checks and the GPU metrics are NVIDIA tools (layout.node, metrics)."""
    if row.gpu_vendor == "nvidia":
        return []
    gaps: list[str] = []
    if health:
        gaps.append(
            f"{row.instanceType} has {row.gpu_vendor} GPUs: the health check does not check them (nvidia-smi, ECC, "
            "MIG and DCGM diag are NVIDIA tools; amd-smi is not wired), only the fabric, local NVMe and mounts"
        )
    if metrics:
        gaps.append(
            f"{row.instanceType} has {row.gpu_vendor} GPUs: no GPU metrics (the DCGM exporter is NVIDIA's; the AMD "
            "device metrics exporter is not wired); the node exporter runs"
        )
    return gaps


def _size_key(row: InstanceType) -> tuple[float, float, float, str]:
    price = row.hourlyUsd if row.hourlyUsd is not None else float("inf")
    return (row.vcpus or 0, row.memoryGiB or 0.0, price, row.instanceType)


FabricCheck = Callable[[InstanceType], tuple[bool, str]]


def fractions_offered(cloud: Cloud, gpu: str) -> list[str]:
    """The vGPU slices of `gpu` the cloud's catalog rows sell (`1/8`, `1/4`, ...), largest share last."""
    return sorted({r.gpuFraction for r in load(cloud).types if r.gpu == gpu and r.gpuFraction}, key=Fraction)


def resolve(
    cloud: Cloud,
    gpu: str,
    count: int,
    region: str | None = None,
    fabric: FabricCheck | None = None,
    fraction: str | None = None,
) -> Resolution:
    """Pick the instance type for `count` x `gpu` on `cloud` (rule in the module docstring), or with `fraction` the
    vGPU slice of one `gpu` (`L4:1/8`: rows whose gpuFraction it is; whole-GPU requests never get a slice). `fabric`
    (multi-node: the nodes train together): a type it passes (`fabric_usable` on `image: auto`, `fabric_present` on
    a custom image) comes first, whatever it costs; when none passes, the rule's pick comes with `fabric_problem`
    (the caller refuses or warns)."""
    rows = load(cloud).types
    same_model = [r for r in rows if r.gpu == gpu]
    if not same_model:
        offered = sorted({r.gpu for r in rows if r.gpu})
        raise CatalogError(f"{cloud} has no {gpu} in the catalog; models offered: {', '.join(offered)}")
    if fraction is not None:
        matches = sorted((r for r in same_model if r.gpuFraction == fraction), key=_size_key)
        if not matches:
            sold = fractions_offered(cloud, gpu)
            sliced = sorted({r.gpu_request for r in rows if r.gpuFraction})
            instead = (
                f"fractions offered: {', '.join(sold)}"
                if sold
                else f"{cloud} sells no slice of {with_article(gpu)}; slices offered: {', '.join(sliced) or 'none'}"
            )
            raise CatalogError(f"no {cloud} type has {fraction} of {with_article(gpu)}; {instead}")
        return _pick(cloud, f"{gpu}:{fraction}", f"{fraction} of {with_article(gpu)}", matches, region, fabric, gpu)
    whole = [r for r in same_model if r.gpuFraction is None]
    matches = sorted((r for r in whole if r.gpus == count), key=_size_key)
    if not matches:
        counts = ", ".join(str(c) for c in sorted({r.gpus for r in whole}))
        sold = fractions_offered(cloud, gpu)
        slices = f"; slices offered: {', '.join(f'{gpu}:{f}' for f in sold)}" if sold else ""
        raise CatalogError(f"no {cloud} type has {count} x {gpu} per node; counts offered: {counts}{slices}")
    return _pick(cloud, f"{gpu}:{count}", f"{count} x {gpu}", matches, region, fabric, gpu)


def _pick(
    cloud: Cloud,
    asked: str,
    what: str,
    matches: list[InstanceType],
    region: str | None,
    fabric: FabricCheck | None,
    gpu: str,
) -> Resolution:
    """The first of `matches` (already in the rule's order) sold in `region`, fabric first (see `resolve`)."""
    unsold: list[str] = []
    if region is not None:
        reasons = {r.instanceType: availability.why_not(cloud, r.instanceType, region, gpu=r.gpu) for r in matches}
        unsold = [name for name, why in reasons.items() if why]
        if len(unsold) == len(matches):
            raise CatalogError("; ".join(dict.fromkeys(why for why in reasons.values() if why)))
        matches = [r for r in matches if r.instanceType not in unsold]
    fabric_note, problem = "", None
    if fabric is not None:
        usable = [r for r in matches if fabric(r)[0]]
        if usable and usable[0] is not matches[0]:
            passed = _by_reason(matches[: matches.index(usable[0])], fabric)
            fabric_note = f"; multi-node, so the first whose fabric NCCL can use, passing over {passed}"
            matches = [usable[0], *(r for r in matches if r is not usable[0])]
        elif not usable:
            problem = _no_usable_fabric(cloud, gpu, what, matches, fabric)
    picked = matches[0]
    skipped = fabric_note + (f"; not sold in {region}: {', '.join(unsold)}" if unsold else "")
    if len(matches) == 1:
        reason = f"{asked} -> {picked.instanceType}, the only {cloud} type with {what}"
        if unsold:
            reason = f"{asked} -> {picked.instanceType}, the only {cloud} type with {what} sold there"
    else:
        others = ", ".join(r.instanceType for r in matches[1:])
        reason = (
            f"{asked} -> {picked.instanceType}; also offered: {others}; "
            "rule: fewest vCPUs, then least memory, then lowest price"
        )
    return Resolution(picked, reason + skipped, problem)


def _by_reason(rows: list[InstanceType], fabric: FabricCheck) -> str:
    """`a, b (why); c (why)`: types grouped by why their fabric is not usable, each reason said once."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(fabric(row)[1], []).append(row.instanceType)
    return "; ".join(f"{', '.join(names)} ({why})" for why, names in groups.items())


def _no_usable_fabric(cloud: Cloud, gpu: str, what: str, matches: list[InstanceType], fabric: FabricCheck) -> str:
    """Why a multi-node `gpu: MODEL:COUNT` gets no fabric NCCL can use, and the counts of the model that do have one."""
    why = _by_reason(matches, fabric)
    others = sorted(
        {f"{r.gpu}:{r.gpus} ({r.instanceType})" for r in load(cloud).types if r.gpu == gpu and fabric(r)[0]}
    )
    instead = f"use gpu {' or '.join(others)}, which has one" if others else f"no {cloud} type with {gpu} has one"
    return f"no {cloud} type with {what} has a fabric NCCL can use between nodes: {why}; {instead}"


@cache
def _mig() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(Path(__file__).parent / "mig.yaml")
    models: dict[str, Any] = data["models"]
    return models


def mig_profiles(row: InstanceType) -> dict[str, int] | None:
    """The MIG profiles of the row's GPU (name -> instances per GPU), None when the GPU has none.

    Profile names carry the memory size, so a model's variants are told apart by memory
    (H100 80 GB vs the 94 GB H100 NVL): the entry closest to the row's per-GPU memory wins.
    """
    if row.gpu is None or row.gpuFraction is not None:  # a vGPU slice: the hypervisor's, no MIG inside a guest
        return None
    models = _mig()
    canonical = set(gpu_aliases().values())
    candidates = [m for m in models if m == row.gpu or (m.startswith(f"{row.gpu}-") and m not in canonical)]
    if not candidates:
        return None
    memory = row.gpuMemoryGiB if row.gpuMemoryGiB is not None else models.get(row.gpu, {}).get("memoryGiB", 0)
    best = min(candidates, key=lambda m: abs(float(models[m]["memoryGiB"]) - float(memory)))
    return {str(k): int(v) for k, v in models[best]["profiles"].items()}
