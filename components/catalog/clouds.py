"""The clouds' registry data (clouds.yaml): per cloud, its packages' name, its provider SDK module and its resource
type prefix. The registry (`contract.py`) and the benchmark read it, so they name no cloud themselves."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import get_args

from ..datafile import load_yaml
from .rows import Cloud

_FILE = Path(__file__).parent / "clouds.yaml"


@dataclass(frozen=True)
class CloudEntry:
    cloud: Cloud
    package: str  # components/<package>/ and components/layout/<package>/
    sdk: str  # the provider SDK's module, imported only by components/<package>/
    type_prefix: str  # how the SDK's resource type tokens begin: its Pulumi schema module and a colon


@cache
def cloud_entries() -> dict[Cloud, CloudEntry]:
    """Every cloud's row, in the `Cloud` Literal's order; a row without its Literal value (or the reverse) is a
    defect of the data, so it fails here, where a new cloud is added, rather than in a plan."""
    rows = load_yaml(_FILE)["clouds"]
    known: tuple[Cloud, ...] = get_args(Cloud)
    if set(rows) != set(known):
        raise ValueError(f"{_FILE.name}: clouds {sorted(rows)} differ from catalog/rows.py Cloud {sorted(known)}")
    return {
        cloud: CloudEntry(cloud, str(rows[cloud]["package"]), str(rows[cloud]["sdk"]), str(rows[cloud]["typePrefix"]))
        for cloud in known
    }


def cloud_entry(cloud: Cloud) -> CloudEntry:
    return cloud_entries()[cloud]
