"""The GRID driver part: NVIDIA's vGPU guest driver, installed at boot where the cloud publishes no image with it (a
family entry's `gridDriver` in catalog/<cloud>.yaml), before the health check and the GPU metrics need it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Part, oneshot_unit, script, service_part


def grid_driver_part(driver: Mapping[str, Any] | None) -> Part:
    """`driver`: the image entry's `gridDriver` ({url, version, source}, optionally the cloud's `kernelPackages` and
    `blacklist` where its install steps name more than the script's defaults); None: the image brings its driver.
    An s3:// url is read with the node's credentials (the cloud's layout grants that one object)."""
    if driver is None:
        return Part("grid-driver")
    version = str(driver["version"])
    env = {"DRIVER_URL": str(driver["url"]), "DRIVER_VERSION": version}
    if driver.get("kernelPackages"):
        env["KERNEL_PACKAGES"] = " ".join(driver["kernelPackages"])
    if driver.get("blacklist"):
        env["BLACKLIST_MODULES"] = " ".join(driver["blacklist"])
    return service_part(
        "grid-driver",
        script_text=script("grid_driver.sh"),
        env=env,
        unit=oneshot_unit(
            f"gpu-cluster NVIDIA GRID (vGPU) driver {version}",
            name="grid-driver",
            after=["network-online.target"],
            wants=["network-online.target"],
            before=["gpu-cluster-mig.service", "gpu-cluster-health.service", "nvidia-persistenced.service"],
        ),
        summary=f"installs the NVIDIA GRID (vGPU) guest driver {version} the cloud publishes for its vGPU sizes.",
    )
