"""Managed Kubernetes per cloud (`scheduler: kubernetes`), loaded from `<cloud>.yaml` beside this module.

Each file holds what the spec checks and the cloud's layout reads: the Kubernetes versions the
managed service offers (with the date they were read and the source), the default, and the CPU
type of the system pool. A cloud without a file does not build `scheduler: kubernetes`.
The in-cluster charts (one file for every cloud) are `charts.yaml`, read by `layout.kubernetes`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...datafile import load_yaml

_DIR = Path(__file__).parent


class KubernetesOffer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")  # cloud-only keys: read by that cloud's layout

    service: str = Field(min_length=1)  # EKS, GKE, AKS, ACK
    versions: tuple[str, ...] = Field(min_length=1)
    default: str
    read: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")  # when the versions were read
    source: str = Field(min_length=1)
    systemInstanceType: str = Field(min_length=1)
    systemSource: str = Field(min_length=1)

    @model_validator(mode="after")
    def _default_offered(self) -> KubernetesOffer:
        if self.default not in self.versions:
            raise ValueError(f"default {self.default} is not one of versions {', '.join(self.versions)}")
        return self

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@cache
def offer(cloud: str) -> KubernetesOffer | None:
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return None
    return KubernetesOffer.model_validate(load_yaml(path))


@cache
def _sharing() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = load_yaml(_DIR / "sharing.yaml")["clouds"]
    return data


def sharing(cloud: str) -> dict[str, Any]:
    """kubernetes.gpuSharing on `cloud` (sharing.yaml): per mode its mechanism and limits, or `notBuilt` (why)."""
    return dict(_sharing().get(cloud) or {"notBuilt": f"no catalog/kubernetes/sharing.yaml entry for {cloud}"})
