"""How capacity may be bought and where: the data in `capacity.yaml` (Capacity Block families, the series whose
flex-start VMs may be placed compactly) and the zones the availability data lists. Pure: no Pulumi."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from . import availability

_DATA = Path(__file__).parent / "capacity.yaml"


@cache
def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(_DATA)
    return loaded


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def capacity_block_families() -> tuple[str, ...]:
    return tuple(str(f) for f in _data()["capacityBlocks"]["families"])


def capacity_block_refusal(instance_type: str) -> str | None:
    """Why `instance_type` cannot launch into an EC2 Capacity Block, or None when its family is sold as one."""
    family = instance_type.split(".", 1)[0]
    if family in capacity_block_families():
        return None
    return (
        f"{instance_type} is not sold as an EC2 Capacity Block; Capacity Blocks are sold for the "
        f"{', '.join(capacity_block_families())} families (catalog/capacity.yaml: AWS PCS User Guide "
        "capacity-blocks, EC2 User Guide capacity-blocks-using); use reservationType: odcr with an On-Demand "
        "Capacity Reservation, or one of those types"
    )


def flex_start_compact_ok(instance_type: str) -> bool:
    """Whether flex-start VMs of this type may be placed compactly (catalog/capacity.yaml gcpFlexStartCompact)."""
    return any(instance_type.startswith(p) for p in _data()["gcpFlexStartCompact"]["prefixes"])


def flex_start_compact_series() -> str:
    """The series, in words: `a3-ultragpu, a4-highgpu, h4d`."""
    return ", ".join(str(p).rstrip("-") for p in _data()["gcpFlexStartCompact"]["prefixes"])


def flex_start_source() -> str:
    return _one_line(_data()["gcpFlexStartCompact"]["source"])


def zones_known(cloud: str) -> bool:
    """Whether the cloud's availability file lists every zone of a region that sells a GPU type (zonesKnown)."""
    return cloud in _data()["zonesKnown"]["clouds"]


def zones_listed(cloud: str, region: str) -> tuple[str, ...]:
    """Every zone of `region` the cloud's availability file lists for some type (sorted; empty when it lists none,
    as for clouds whose files give regions only)."""
    data = availability.load(cloud)
    offers = [*data.offers.values(), *(o for per in data.by_gpu.values() for o in per.values())]
    return tuple(sorted({z for offer in offers for z in offer.zones_in(region)}))
