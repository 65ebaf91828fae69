"""The GRID driver part: NVIDIA's vGPU guest driver, installed at boot where the cloud publishes no image with it (a
family entry's `gridDriver` in catalog/<cloud>.yaml), before the health check and the GPU metrics need it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Part, oneshot_unit, script, service_part


def grid_driver_part(driver: Mapping[str, Any] | None) -> Part:
    """`driver`: the image entry's `gridDriver` ({url, version, source}); None: the image brings its driver."""
    if driver is None:
        return Part("grid-driver")
    version = str(driver["version"])
    return service_part(
        "grid-driver",
        script_text=script("grid_driver.sh"),
        env={"DRIVER_URL": str(driver["url"]), "DRIVER_VERSION": version},
        unit=oneshot_unit(
            f"gpu-cluster NVIDIA GRID (vGPU) driver {version}",
            name="grid-driver",
            after=["network-online.target"],
            wants=["network-online.target"],
            before=["gpu-cluster-mig.service", "gpu-cluster-health.service", "nvidia-persistenced.service"],
        ),
        summary=f"installs the NVIDIA GRID (vGPU) guest driver {version} the cloud publishes for its vGPU sizes.",
    )
