"""The Tencent GPU driver part: Ubuntu's NVIDIA server driver branch, installed at boot from Tencent's private-network
Ubuntu mirror on `image: auto` (catalog/tencentcloud.yaml images.default `gpuDriver`), before the health check and the
GPU metrics need it. Apart from grid_driver.py: no runfile is published for it; the archive's packages are the
source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import DRIVER_USERS, Part, oneshot_unit, script, service_part

NAME = "tencentcloud-gpu-driver"


def driver_summary(driver: Mapping[str, Any]) -> str:
    """The plan's line for the driver: its branch, its packages and where they come from."""
    return (
        f"NVIDIA {driver['branch']} (Ubuntu's {' '.join(driver['packages'])} from {driver['mirror']}, "
        "installed at first boot)"
    )


def tencentcloud_driver_part(driver: Mapping[str, Any] | None) -> Part:
    """`driver`: the image entry's `gpuDriver` ({branch, packages, mirror, source}); None: the image brings its own."""
    if driver is None:
        return Part(NAME)
    branch = str(driver["branch"])
    return service_part(
        NAME,
        script_text=script("tencentcloud_gpu_driver.sh"),
        env={"DRIVER_BRANCH": branch, "PACKAGES": " ".join(driver["packages"]), "MIRROR": str(driver["mirror"])},
        unit=oneshot_unit(
            f"gpu-cluster NVIDIA driver {branch} from the Ubuntu archive",
            name=NAME,
            after=["network-online.target"],
            wants=["network-online.target"],
            before=DRIVER_USERS,
        ),
        summary=f"installs the NVIDIA driver ({branch} branch) from Ubuntu's archive through Tencent's mirror.",
    )
