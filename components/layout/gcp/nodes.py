"""The GPU nodes on GCP: zone, image, disks, n1 accelerators, provisioning model (scheduling) and the bootstrap
(startup-script) every node runs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap, catalog
from ...bootstrap import Part
from ...bootstrap.mounts import Mount
from ...bootstrap.scratch import scratch_part
from ...catalog import releases
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .. import Scratch, image_for
from ..node import node_parts
from .health import HealthProbe, health_http_part

# by-id names Google's guest udev rules give local SSDs (NVMe interface) and a PD with device_name
# "scratch" (research notes 1.1, SkyPilot constants.py; CT vm-instance local SSD defaults)
LOCAL_SSD_GLOBS = ("/dev/disk/by-id/google-local-nvme-ssd-*",)
SCRATCH_DEVICE_NAME = "scratch"
SCRATCH_DISK_GLOBS = (f"/dev/disk/by-id/google-{SCRATCH_DEVICE_NAME}",)
MAX_N1_GPU = {  # SkyPilot gcp_catalog.py _NUM_ACC_TO_MAX_CPU_AND_MEMORY (research notes 1.2): count -> max vCPU
    "T4": {1: 48, 2: 48, 4: 96},
    "V100": {1: 12, 2: 24, 4: 48, 8: 96},
}


@dataclass(frozen=True)
class Image:
    project: str | None  # with family and no release: resolved at deploy with compute.get_image
    family: str | None
    ref: str  # what the template would boot without resolution
    description: str
    release: str | None = None  # a pinned image of the family: `ref` names it, nothing is resolved


@dataclass(frozen=True)
class Scheduling:
    provisioning_model: Literal["STANDARD", "SPOT", "RESERVATION_BOUND", "FLEX_START"]
    preemptible: bool
    automatic_restart: bool
    on_host_maintenance: Literal["TERMINATE"]
    instance_termination_action: Literal["STOP", "DELETE"] | None
    max_run_seconds: int | None = None  # flex-start only


def zone_of(spec: ClusterSpec) -> str:
    if not spec.zone:
        raise ConfigError(
            f"{CLUSTER_KEY}.zone",
            "required on gcp: GPU machine types, compact placement and RoCE network profiles are zonal; "
            f"set it (or gcp:zone) to a zone of {spec.region} that offers {spec.instance.instanceType}, "
            f"for example {spec.region}-a",
        )
    return spec.zone


def image_of(spec: ClusterSpec) -> Image:
    # a Grace (arm64) type takes its architecture's image (catalog/gcp.yaml images.arch), never an x86_64 one
    entry: dict[str, Any] = catalog.arch_image("gcp", spec.instance) or image_for("gcp", spec.instance.instanceType)
    chosen = releases.choice("gcp", entry, spec.image)
    if chosen is not None:
        if not entry.get("family"):
            raise ConfigError(
                f"{CLUSTER_KEY}.image",
                f"{spec.image} has no image for {spec.instance.instanceType} ({spec.instance.arch}): {entry['reason']}",
            )
        if chosen.release is not None:  # pinned: this image of the family, never a newer one
            ref = f"projects/{entry['project']}/global/images/{chosen.release}"
            return Image(entry["project"], entry["family"], ref, entry["description"], chosen.release)
        ref = f"projects/{entry['project']}/global/images/family/{entry['family']}"
        return Image(entry["project"], entry["family"], ref, entry["description"])
    match = re.fullmatch(r"projects/([a-z0-9-]+)/global/images/family/([a-z0-9-]+)", spec.image)
    if match:
        return Image(match.group(1), match.group(2), spec.image, f"latest image of family {spec.image}")
    return Image(None, None, spec.image, f"image {spec.image} as configured")


def disk_type(instance_type: str, rules: Mapping[str, Any]) -> str:
    table: dict[str, str] = rules["diskTypes"]
    match = max((p for p in table if p != "default" and instance_type.startswith(p)), key=len, default="default")
    return table[match]


def check_n1(spec: ClusterSpec) -> tuple[str, int] | None:
    row = spec.instance
    if not row.extra.get("guestAccelerator"):
        return None
    limits = MAX_N1_GPU.get(row.gpu or "")
    if limits is None or row.gpus not in limits:
        allowed = ", ".join(str(c) for c in sorted(limits or {}))
        raise ConfigError(
            f"{CLUSTER_KEY}.gpu", f"{row.gpus} x {row.gpu} cannot attach to n1; counts allowed: {allowed or 'none'}"
        )
    if row.vcpus is not None and row.vcpus > limits[row.gpus]:
        raise ConfigError(
            f"{CLUSTER_KEY}.instanceType",
            f"{row.instanceType} has {row.vcpus} vCPUs; "
            f"n1 with {row.gpus} x {row.gpu} allows at most {limits[row.gpus]}",
        )
    return str(row.extra["acceleratorType"]), row.gpus


def consumption(spec: ClusterSpec, rules: Mapping[str, Any]) -> Scheduling:
    """Provisioning model and its scheduling fields (rules `consumption:` in catalog/gcp.yaml)."""
    data: Mapping[str, Any] = rules["consumption"]
    itype = spec.instance.instanceType
    key = f"{CLUSTER_KEY}.gcp.flexStart"
    no_on_demand = any(itype.startswith(p) for p in data["noOnDemand"])
    flex_ok = any(itype.startswith(p) for p in data["flexStart"])
    if spec.gcp.flex_start:
        if spec.spot or spec.reservation:
            raise ConfigError(key, f"true with {'spot' if spec.spot else 'a reservation'}: they are exclusive; set one")
        if not flex_ok:
            raise ConfigError(
                key,
                f"{itype} cannot be a flex-start VM; flex-start takes accelerator-optimized types "
                f"{', '.join(p.rstrip('-') for p in data['flexStart'])} only "
                "(catalog/gcp.yaml rules.consumption.flexStart)",
            )
        if spec.node_group == "managed":
            raise ConfigError(
                key,
                "true with nodeGroup: managed: flex-start VMs join a MIG only through resize requests, which "
                "gpu-cluster does not build; use nodeGroup: instances",
            )
        return Scheduling("FLEX_START", False, False, "TERMINATE", "DELETE", int(data["flexStartMaxRunSeconds"]))
    reservation_only = any(itype.startswith(p) for p in data.get("noSpot", ()))
    if spec.spot:  # a type not sold as spot (rules.consumption.noSpot) is refused by the spec (catalog/spot.py)
        return Scheduling("SPOT", True, False, "TERMINATE", "STOP")
    if no_on_demand:
        if not spec.reservation:
            others = "" if reservation_only else ", spot: true, or gcp.flexStart: true with nodeGroup: instances"
            raise ConfigError(
                f"{CLUSTER_KEY}.instanceType",
                f"{itype} is not sold on demand; set reservation (reservation-bound){others}",
            )
        return Scheduling("RESERVATION_BOUND", False, True, "TERMINATE", None)
    return Scheduling("STANDARD", False, True, "TERMINATE", None)


def node_bootstrap(
    spec: ClusterSpec,
    scratch: Scratch,
    fabric: Sequence[Part],
    gpu_nics: int,
    probe: HealthProbe | None,
    mounts: Mount | None = None,
) -> tuple[Part, ...]:
    """Scratch, fabric enablement, MIG, health check (+ its endpoint for autohealing), metrics."""
    nvme_globs = scratch.device_globs if scratch.kind == "nvme" else ()
    parts = node_parts(
        spec,
        scratch,
        fabric_devices=gpu_nics if spec.fabric_wired else 0,
        nvme_globs=nvme_globs,
        fabric=fabric,
        # only a MIG can replace a node (autohealing); standalone instances report (health.sh logs it)
        unhealthy_hook=bootstrap.script("gcp_unhealthy.sh") if probe is not None else None,
        mounts=mounts,
    )
    return (*parts, health_http_part(probe))


def startup_script(parts: Sequence[Part] | Scratch) -> str | None:
    """The `startup-script` metadata: the same bootstrap parts the other clouds get as cloud-init.

    A `Scratch` alone renders the scratch part only (the form callers outside the layout used before).

    Compute Engine's guest agent runs `startup-script` on every boot on all public images
    (docs.cloud.google.com/compute/docs/instances/startup-scripts), whether or not the image runs
    cloud-init, so one bootstrap works on Deep Learning VM and Ubuntu accelerator images alike.
    """
    if isinstance(parts, Scratch):
        parts = (scratch_part(parts),)
    header = [
        "gpu-cluster node bootstrap (GCP startup-script, runs at every boot; idempotent):",
        *(p.summary for p in parts if p.summary and not p.empty),
    ]
    return bootstrap.startup_script(parts, header)


@dataclass(frozen=True)
class MigRollout:
    """update rolling: the managed instance group's update policy (PROACTIVE: a new template version rolls)."""

    max_surge: int
    max_unavailable: int
    # RECREATE keeps the instance names (the Slurm node names, the hostfile) and adds no VM beyond the count;
    # SUBSTITUTE (with a surge) creates new ones under new names
    replacement_method: Literal["RECREATE", "SUBSTITUTE"]
    type: str = "PROACTIVE"
    minimal_action: str = "REPLACE"


def mig_rollout(spec: ClusterSpec, compact_vm_count: int | None) -> MigRollout | None:
    """A managed group's update policy (update: rolling); None: the MIG's defaults (manual, instances, GKE)."""
    update = spec.update
    if spec.node_group != "managed" or spec.kubernetes is not None or not update.rolling:
        return None
    if compact_vm_count is not None and update.max_surge:
        raise ConfigError(
            f"{CLUSTER_KEY}.update.maxSurge",
            f"{update.max_surge}: the compact placement policy holds exactly {compact_vm_count} VMs (its vmCount), so "
            "no VM can be created above the count; allowed: 0 (nodes are recreated in place, under their names)",
        )
    return MigRollout(
        max_surge=update.max_surge,
        max_unavailable=update.max_unavailable(spec.nodes),
        replacement_method="SUBSTITUTE" if update.max_surge else "RECREATE",
    )
