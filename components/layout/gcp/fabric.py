"""Fabric enablement on GCP: the parts that make the wired GPU NICs usable by NCCL (catalog/gcp.yaml rules
fabricEnablement), and whether they do on the image."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.fabric import NCCL_ENV, FabricUsability, nccl_env_part
from ...spec import ClusterSpec
from .nodes import Image

NO_FABRIC = FabricUsability(False, ("no fabric wired",))


FABRIC_SCRIPT = "/usr/local/sbin/gpu-cluster-gcp-fabric"
FABRIC_ENV = "/etc/gpu-cluster/gcp-fabric.env"
FABRIC_UNIT = """[Unit]
Description=gpu-cluster fabric enablement for NCCL ({kind})
Wants=network-online.target
After=network-online.target nvidia-persistenced.service gpu-cluster-scratch.service

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=1800
Environment=HOME=/root
EnvironmentFile={env}
ExecStart={script}
"""

# slurm-gcp receive-data-path-manager-mega's `docker run` of the RxDM (catalog rules fabricEnablement)
RXDM_UNIT = """[Unit]
Description=GPUDirect-TCPXO receive-datapath manager (RxDM)
Requires=docker.service
After=docker.service

[Service]
Restart=always
RestartSec=10
Environment=HOME=/root
ExecStartPre=-/usr/bin/docker rm -f gpu-cluster-rxdm
ExecStart=/usr/bin/docker run --rm --name gpu-cluster-rxdm --cap-add=NET_ADMIN --network=host --privileged \\
  --gpus all --volume /var/lib/nvidia/lib64:/usr/local/nvidia/lib64 \\
  --volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper --env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \\
  {image} --num_hops=2 --num_nics={nics} --uid= --alsologtostderr
ExecStop=/usr/bin/docker stop gpu-cluster-rxdm
"""

# Cluster Toolkit a3mega-slurm-gcsfuse-lssd-blueprint.yaml `aperture_devices.yml` (catalog rules fabricEnablement)
APERTURE_RULE = """ACTION=="add", SUBSYSTEM=="pci", ATTR{vendor}=="0x1ae0", ATTR{device}=="0x0084", TAG+="systemd", \\
    RUN+="/usr/bin/mkdir --mode=0755 -p /dev/aperture_devices", \\
    RUN+="/usr/bin/systemd-mount --type=none --options=bind --collect %S/%p /dev/aperture_devices/%k", \\
    RUN+="/usr/bin/bash -c '/usr/bin/chmod 0666 /dev/aperture_devices/%k/resource*'"
"""


def _env_file(values: Mapping[str, str]) -> str:
    return "".join(f"{k}={json.dumps(v)}\n" for k, v in values.items())


def _words(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _vouched_image(image: Image) -> str | None:
    return f"{image.project}/{image.family}" if image.project and image.family else None


def fabric_enablement(
    spec: ClusterSpec, image: Image, gpu_nics: int, rules: Mapping[str, Any]
) -> tuple[tuple[Part, ...], FabricUsability]:
    """The parts that make the wired fabric usable by NCCL, and whether they do on this image (catalog data)."""
    row = spec.instance
    if not spec.fabric_wired or gpu_nics == 0:
        return (), NO_FABRIC
    data: Mapping[str, Any] | None = rules["fabricEnablement"].get(row.fabric)
    if data is None:
        return (), FabricUsability(False, (f"{row.fabric}: no enablement is known to gpu-cluster",))
    if row.arch != "x86_64":  # the packages and images above are x86_64 ones: the arch's own entry wins
        data = {**data, **(data.get("arch") or {}).get(row.arch, {"missing": [f"{row.fabric} on {row.arch}"]})}
    if "missing" in data:
        return (), FabricUsability(False, tuple(str(m) for m in data["missing"]))
    env = {**data["env"], **data.get("envByType", {}).get(row.instanceType, {})}
    settings: dict[str, str] = {"FABRIC_KIND": row.fabric, "NCCL_ENV": NCCL_ENV}
    files = [File(FABRIC_SCRIPT, bootstrap.script("gcp_fabric.sh"), "0755")]
    keys = {
        "arTransportRepo": "AR_TRANSPORT_REPO",
        "aptRepo": "APT_REPO",
        "packages": "PACKAGES",
        "module": "MODULE",
        "ncclPluginImage": "NCCL_PLUGIN_IMAGE",
        "envProfile": "ENV_PROFILE",
        "containerPackages": "CONTAINER_PACKAGES",
        "signingKeys": "SIGNING_KEYS",
        "hold": "HOLD",
        "libDir": "LIB_DIR",
    }
    settings.update({name: _words(data[key]) for key, name in keys.items() if key in data})
    if row.fabric == "gpudirect-tcpxo":
        files += [
            File("/etc/udev/rules.d/00-a3-megagpu.rules", APERTURE_RULE),
            File(
                "/etc/systemd/system/gpu-cluster-rxdm.service",
                RXDM_UNIT.format(image=data["rxdmImage"], nics=gpu_nics),
            ),
        ]
        provides: tuple[str, ...] = (
            "DMABUF import helper and aperture devices",
            f"TCPXO NCCL plugin ({data['ncclPluginImage'].rsplit('/', 1)[1]})",
            f"receive-datapath manager ({data['rxdmImage'].rsplit('/', 1)[1]})",
            f"NCCL environment in {NCCL_ENV}",
        )
    else:
        files.append(File("/etc/ld.so.conf.d/000_nccl-gib.conf", f"{data['libDir']}\n"))
        provides = (f"gIB NCCL plugin ({' '.join(data['packages'])})", f"NCCL environment in {NCCL_ENV}")
    files += [
        File(FABRIC_ENV, _env_file(settings)),
        File(
            "/etc/systemd/system/gpu-cluster-gcp-fabric.service",
            FABRIC_UNIT.format(kind=row.fabric, env=FABRIC_ENV, script=FABRIC_SCRIPT),
        ),
    ]
    parts = (
        nccl_env_part(env, "catalog/gcp.yaml rules.fabricEnablement"),
        Part(
            "gcp-fabric",
            files=tuple(files),
            # started (not enabled) by the startup script at every boot, after it has rewritten nccl.env
            commands=(
                ("systemctl", "daemon-reload"),
                ("systemctl", "restart", "--no-block", "gpu-cluster-gcp-fabric.service"),
            ),
            summary=f"enables {row.fabric} for NCCL: {', '.join(provides[:-1])}.",
        ),
    )
    vouched = _vouched_image(image)
    if vouched not in data["images"]:
        return parts, FabricUsability(
            False,
            (
                f"image {image.ref}: the catalog cannot vouch that the {row.fabric} enablement works on it "
                f"(sourced on {', '.join(data['images'])}; image: auto uses it)",
            ),
        )
    return parts, FabricUsability(True, (), provides)
