"""The Alibaba GRID driver part: NVIDIA's vGPU guest driver on an Alibaba vGPU slice, installed at boot by Alibaba's
Cloud Assistant plugin (an image entry's `gridPlugin` in catalog/alicloud.yaml), before the health check and the GPU
metrics need it. Apart from grid_driver.py: Alibaba publishes no driver file to download, only the plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import DRIVER_USERS, Part, oneshot_unit, script, service_part

NAME = "alicloud-grid-driver"


def alicloud_grid_driver_part(plugin: Mapping[str, Any] | None) -> Part:
    """`plugin`: the image entry's `gridPlugin` ({plugin, driver, timeoutSeconds, ...}); None: no GRID driver here."""
    if plugin is None:
        return Part(NAME)
    version = str(plugin["driver"])
    return service_part(
        NAME,
        script_text=script("alicloud_grid_driver.sh"),
        env={
            "PLUGIN": str(plugin["plugin"]),
            "DRIVER_VERSION": version,
            "TIMEOUT_SECONDS": str(int(plugin["timeoutSeconds"])),
        },
        unit=oneshot_unit(
            f"gpu-cluster NVIDIA GRID (vGPU) driver {version} by Alibaba's Cloud Assistant plugin",
            name=NAME,
            # aliyun.service: the Cloud Assistant Agent, whose acs-plugin-manager runs the plugin
            after=["network-online.target", "aliyun.service"],
            wants=["network-online.target"],
            before=DRIVER_USERS,
        ),
        summary=(
            f"installs the NVIDIA GRID (vGPU) guest driver ({version} per Alibaba's doc) with Alibaba's "
            f"Cloud Assistant plugin {plugin['plugin']}."
        ),
    )
