"""GCP customer-managed keys, pure: which key the disks and filesystems use, which service agents may use it,
and what cannot take it (data: catalog/encryption/gcp.yaml, sources there).

`encryption.key: provider` (the default) gives `None`: nothing is registered and no disk names a key.
`auto`: one key ring and key per cluster in the cluster's region (Filestore, Managed Lustre and GKE take a key of
their own region only; a regional key also serves the zone's disks). A key name given is used as given; only the
grants of the service agents that encrypt with it are added (additive CryptoKeyIAMMember bindings).
`plan()` calls `key_plan` and keeps the result as `GcpLayout.encryption`; components/gcp only reads that field.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...spec import ClusterSpec
from .. import Scratch
from ..shared import Shared
from .data import encryption_data


@dataclass(frozen=True)
class GcpEncryption:
    auto: bool  # create the key ring and the key
    key_name: str | None  # the key name given (auto: None, the key's id is known at deploy)
    location: str
    purpose: str
    rotation_period: str
    destroy_scheduled_duration: str
    role: str
    agents: tuple[tuple[str, str], ...]  # (who, member template with {projectNumber})
    notes: tuple[str, ...]  # what keeps a Google-managed key, for the plan's warnings


def key_plan(spec: ClusterSpec, shared: Shared | None, scratch: Scratch, gke: bool) -> GcpEncryption | None:
    """The key of the stack's disks and filesystems; `scratch` as built, `gke`: scheduler kubernetes (GKE)."""
    if spec.encryption_key == "provider":
        return None
    d = encryption_data()
    agents = ["compute"]  # boot, scratch, login and head disks; GKE node boot disks
    if shared is not None and not shared.existing:
        agents.append("filestore" if shared.kind == "nfs" else "lustre")
    if gke:
        agents.append("gke")  # the cluster's secrets in etcd (databaseEncryption) on the same key
    notes = []
    if scratch.kind == "nvme":
        notes.append(f"encryption.key: {d['notes']['localSsd']}")
    if spec.slurm is not None and spec.slurm.accounting:
        notes.append(f"encryption.key: {d['notes']['cloudSql']}")
    return GcpEncryption(
        auto=spec.encryption_key == "auto",
        key_name=None if spec.encryption_key == "auto" else spec.encryption_key,
        location=spec.region,
        purpose=str(d["key"]["purpose"]),
        rotation_period=str(d["key"]["rotationPeriod"]),
        destroy_scheduled_duration=str(d["key"]["destroyScheduledDuration"]),
        role=str(d["role"]),
        agents=tuple((who, str(d["agents"][who]["member"])) for who in agents),
        notes=tuple(notes),
    )
