"""eRDMA: the ERIs a node gets (one per network card index, primary ENI first), the `erdma` bootstrap part that
brings every ERI up with NCCL's MTU, the NCCL environment Alibaba presets, and whether NCCL can use it
(scheme in the package docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ... import bootstrap
from ...bootstrap import File, Part
from ...bootstrap.fabric import NCCL_ENV, FabricUsability
from ...catalog import releases
from ...spec import ClusterSpec
from ...text import one_line
from .data import alicloud_data
from .nodes import DRIVER_BOOT_FILE

MAX_ERIS_PER_INSTANCE = 2  # primary ENI + the one `network_interfaces` block of ecs.Instance


TrafficMode = Literal["Standard", "HighPerformance"]


ERDMA_ENV = "/etc/gpu-cluster/erdma.env"  # the erdma part's settings; count_wired_gbps reads ERI_COUNT from it


@dataclass(frozen=True)
class NetworkInterface:
    """One ENI of a node: index 0 is the primary ENI."""

    network_card_index: int
    traffic_mode: TrafficMode

    @property
    def is_eri(self) -> bool:
        return self.traffic_mode == "HighPerformance"


def wired_gbps(eris_up: int, cards: int, per_device: float) -> float:
    gbps = eris_up * per_device
    if eris_up > 1 and cards <= 1:  # ERIs sharing one card index (Alibaba: up to 100 Gbit/s)
        gbps = min(gbps, float(alicloud_data()["erdma"]["maxGbpsOnOneCard"]))
    return gbps


def eri_interfaces(eri_devices: int) -> tuple[NetworkInterface, ...]:
    """ERIs one per network card index, primary ENI first (scheme in the module docstring)."""
    eris = min(eri_devices, MAX_ERIS_PER_INSTANCE)
    if eris == 0:
        return (NetworkInterface(0, "Standard"),)
    return tuple(NetworkInterface(card, "HighPerformance") for card in range(eris))


def erdma_mtu() -> int:
    erdma = alicloud_data()["erdma"]
    return int(erdma["mtu"]["jumboFrames" if erdma["jumboFrames"] else "standard"])


ERDMA_UNIT = bootstrap.oneshot_unit(
    "gpu-cluster: the eRDMA stack, every ERI up and its MTU set for NCCL",
    name="erdma",
    wants=["network-online.target"],
    after=["network-online.target", "nvidia-persistenced.service"],
)


# The health check counts eRDMA ports: it must run after the ERIs are up and the stack installed.
HEALTH_AFTER_ERDMA = """[Unit]
Wants=gpu-cluster-erdma.service
After=gpu-cluster-erdma.service
"""


def erdma_part(eri_count: int, mtu: int, installer: str | None = None) -> Part:
    """The eRDMA stack when missing, every ERI up (DHCP on the secondary ones) with NCCL's MTU, at every boot."""
    if eri_count == 0:
        return Part("erdma")
    env = f"ERI_COUNT={eri_count}\nMTU={mtu}\nERDMA_INSTALLER={installer or ''}\nDRIVER_BOOT_FILE={DRIVER_BOOT_FILE}\n"
    return Part(
        "erdma",
        files=(
            File("/usr/local/sbin/gpu-cluster-erdma", bootstrap.script("alicloud_erdma.sh"), "0755"),
            File(ERDMA_ENV, env),
            File("/etc/systemd/system/gpu-cluster-erdma.service", ERDMA_UNIT),
            File("/etc/systemd/system/gpu-cluster-health.service.d/10-after-erdma.conf", HEALTH_AFTER_ERDMA),
        ),
        commands=(("systemctl", "daemon-reload"), ("systemctl", "enable", "--now", "gpu-cluster-erdma.service")),
        summary=f"installs the eRDMA stack when missing and brings up {eri_count} ERIs with MTU {mtu} at every boot.",
    )


def nccl_env() -> tuple[dict[str, str], str]:
    """The NCCL environment Alibaba presets for eRDMA (data: `erdma.ncclEnv` in the capabilities file)."""
    data = alicloud_data()["erdma"]
    return {str(k): str(v) for k, v in data["ncclEnv"].items()}, one_line(data["ncclEnvSource"])


def fabric_usability(spec: ClusterSpec, eris: int, image_entry: Mapping[str, Any]) -> FabricUsability:
    """Usable when the bootstrap brings what eRDMA needs on this image: stack, every ERI up, MTU, NCCL env."""
    if eris == 0:
        return FabricUsability(False, ("no fabric wired",))
    if not releases.is_catalog_image("alicloud", spec.image):
        return FabricUsability(
            False,
            (
                f"image {spec.image}: the catalog cannot vouch that it is an eRDMA-capable image with the GPU driver "
                "the eRDMA stack is installed after (Alibaba supports eRDMA on some images only)",
            ),
        )
    vouched = (image_entry.get("fabricSupport") or {}).get(spec.instance.fabric)
    if not vouched:
        return FabricUsability(False, (f"image {image_entry['nameRegex']}: no source that it supports eRDMA",))
    data = alicloud_data()["erdma"]
    return FabricUsability(
        True,
        provides=(
            "Alibaba's eRDMA stack for GPU instances (env_setup.sh --egs, after the GPU driver)",
            f"{eris} ERI(s) up with MTU {erdma_mtu()}",
            f"the NCCL environment Alibaba presets for eRDMA in {NCCL_ENV} (NCCL >= {data['minNccl']} in the job)",
        ),
    )
