"""Azure fabric decisions: what NCCL needs over InfiniBand on the HPC image, and whether it can use it.

How InfiniBand is obtained on Azure (MicrosoftDocs azure-compute-docs `virtual-machines/setup-infiniband.md`): the IB
HCAs of an `...r` size come with the VM; the placement scope (nodes.py) decides whether two VMs can talk over IB.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from ... import bootstrap, catalog
from ...bootstrap import File, Part
from ...bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part
from ...spec import ClusterSpec
from ...text import one_line
from .data import default_image_ref, ib_image_data, is_default_image
from .nodes import Image

# --- fabric enablement: what NCCL needs over InfiniBand on the HPC image ----------------------------

IB_UNIT = """[Unit]
Description=gpu-cluster: NCCL over InfiniBand prerequisites (topology file, nvidia-peermem, IB ports)
After=openibd.service sku-customizations.service nvidia-fabricmanager.service
Before=gpu-cluster-health.service

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile={env}
Environment=EXPECTED_IB_DEVICES={devices}
ExecStart=/usr/local/sbin/gpu-cluster-azure-ib

[Install]
WantedBy=multi-user.target
"""


def ib_family(instance_type: str) -> tuple[str, dict[str, Any]] | None:
    """The image's topology family of a size, matched as the image matches it (lower-cased case patterns)."""
    size = instance_type.lower()
    for name, family in ib_image_data()["families"].items():
        if any(fnmatch.fnmatchcase(size, pattern) for pattern in family["sizes"]):
            return name, family
    return None


def ib_part(devices: int) -> Part:
    return Part(
        "azure-ib",
        files=(
            File("/usr/local/sbin/gpu-cluster-azure-ib", bootstrap.script("azure_ib.sh"), "0755"),
            File("/etc/systemd/system/gpu-cluster-azure-ib.service", IB_UNIT.format(env=NCCL_ENV, devices=devices)),
        ),
        commands=(
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-azure-ib.service"),
        ),
        summary=f"checks the NCCL topology file, nvidia-peermem and {devices} InfiniBand ports at boot.",
    )


def fabric_parts(spec: ClusterSpec, ib: bool, image: Image) -> tuple[tuple[Part, ...], FabricUsability]:
    """The fabric parts and whether NCCL can use the wired InfiniBand: only on the catalog's HPC image (or the
    same URN given explicitly), for a size whose topology family the image knows."""
    row = spec.instance
    if not ib:
        return (), FabricUsability(False, ("no fabric wired",))
    vendor = catalog.vendor_image("azure", row) or catalog.arch_image("azure", row)
    if vendor is not None:  # the IB parts below are for the x86_64 NVIDIA image; the vendor/arch entry says why not
        reason = ((vendor.get("fabric") or {}).get("infiniband") or {}).get("reason") or "no image vouches for it"
        return (), FabricUsability(False, (one_line(reason),))
    found = ib_family(row.instanceType)
    if found is None:
        return (), FabricUsability(
            False,
            (
                f"the catalog's image entry has no NCCL topology family for {row.instanceType} "
                "(images.default.fabric.infiniband.families in catalog/azure.yaml)",
            ),
        )
    name, family = found
    env = {str(k): str(v) for k, v in family["env"].items()}
    parts = (nccl_env_part(env, f"Azure HPC image, {name}"), ib_part(row.fabricDevices))
    if not is_default_image(image.ref):
        return parts, FabricUsability(
            False,
            (
                f"image {image.ref} is not the catalog's HPC image ({default_image_ref()}): nothing vouches for "
                f"DOCA OFED, NCCL, nvidia-peermem and {family['topoFile']} on it (the boot check "
                "gpu-cluster-azure-ib reports what is missing)",
            ),
        )
    provides = (*(str(p) for p in ib_image_data()["provides"]), f"{name}: {family['topoFile']}", f"NCCL env {NCCL_ENV}")
    return parts, FabricUsability(True, (), provides)
