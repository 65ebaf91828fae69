"""Whether NCCL can use the HCC RDMA fabric on these nodes (Tencent doc 1236/62821)."""

from __future__ import annotations

from ...bootstrap.fabric import FabricUsability
from ...catalog import releases
from ...spec import ClusterSpec
from .data import tencent_data


def fabric_usability(spec: ClusterSpec, hpc_cluster: bool) -> FabricUsability:
    """HCC RDMA is usable by NCCL only with TCCL and the RDMA agent (Tencent doc 1236/62821): none is provided."""
    if not hpc_cluster:
        return FabricUsability(False, ("no fabric wired",))
    hcc = tencent_data()["hcc"]
    where = (
        f"image {spec.image}"
        if not releases.is_catalog_image("tencentcloud", spec.image)
        else "the public Ubuntu image"
    )
    return FabricUsability(
        False,
        tuple(f"{need}: not provided by {where} or the bootstrap ({hcc['source']})" for need in hcc["needs"]),
    )
