"""The shared filesystem (`storage.shared`) as every cloud's layout holds it: pure, no Pulumi.

`shared_for(spec)` resolves the request against `catalog/storage/<cloud>.yaml` (the spec already refused
what the data does not allow) into `Shared`: the service, its size and tier, how the nodes mount it and
what it costs. Each cloud's resources module creates the filesystem and fills in `source_form`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..bootstrap.mounts import SOURCE_PLACEHOLDER, Mount
from ..catalog import storage
from ..spec import ClusterSpec


@dataclass(frozen=True)
class Shared:
    kind: str  # lustre | nfs | existing
    service: str  # the cloud's service name, or "existing filesystem"
    resource: str | None  # the Pulumi type of the filesystem the stack creates (None: existing)
    size_gb: int | None  # GiB provisioned (None: elastic or existing)
    throughput: int | None  # MB/s per TiB
    path: str
    retain: bool  # protect + retainOnDelete on the filesystem
    source_form: str  # the mount source, `{output}` fields filled from the filesystem at deploy
    mount: Mount  # what the node runs; source is SOURCE_PLACEHOLDER until deploy (unless existing)
    monthly_usd: float | None
    price_source: str
    ports: tuple[tuple[str, int, int], ...] = ()
    efa: bool = False  # AWS: EFA-enabled FSx (set at creation only)
    data: Any = None  # the catalog entry (cloud-only keys)

    @property
    def existing(self) -> bool:
        return self.kind == "existing"

    def describe(self) -> str:
        size = f"{self.size_gb:,} GiB" if self.size_gb else "elastic" if not self.existing else "size unknown"
        tier = f", {self.throughput} MB/s/TiB" if self.throughput else ""
        efa = ", EFA" if self.efa else ""
        kept = " (retained on delete)" if self.retain and not self.existing else ""
        return f"{self.service} {size}{tier}{efa} at {self.path}{kept}"

    def summary(self) -> dict[str, Any]:
        """`sharedStorage` of the plan summary."""
        return {
            "kind": self.kind,
            "service": self.service,
            "sizeGb": self.size_gb,
            "throughput": self.throughput,
            "path": self.path,
            "retain": self.retain,
            "efa": self.efa,
            "monthlyUsd": self.monthly_usd,
            "priceSource": self.price_source or None,
        }


def shared_for(spec: ClusterSpec, efa_capable: bool = False) -> Shared | None:
    cfg = spec.storage.shared
    if cfg is None:
        return None
    got = storage.resolve(spec.cloud, cfg.kind, cfg.size_gb, cfg.throughput, cfg.path, cfg.retain, cfg.existing)
    if got.service is None:  # existing: mount what the user named
        lustre = "@tcp" in got.existing
        mount = Mount(
            path=got.path,
            source=got.existing,
            fstype="lustre" if lustre else "nfs",
            options="relatime,flock" if lustre else "hard,timeo=600,retrans=2",
            client="none" if lustre else "apt",
            packages="" if lustre else "nfs-common",
        )
        return Shared("existing", "existing filesystem", None, None, None, got.path, False, got.existing, mount,
                      None, "")  # fmt: skip
    svc = got.service
    client = svc.client
    mount = Mount(
        path=got.path,
        source=SOURCE_PLACEHOLDER,
        fstype=svc.fstype,
        options=svc.options,
        client=client.get("install", "none"),
        packages=client.get("packages", ""),
        repo=client.get("repo", ""),
        key=client.get("key", ""),
    )
    step = svc.efa_increments.get(got.throughput or 0)
    efa = bool(efa_capable and step and got.size_gb and got.size_gb % step == 0)
    return Shared(
        kind=svc.kind,
        service=svc.name,
        resource=svc.resource,
        size_gb=got.size_gb,
        throughput=got.throughput,
        path=got.path,
        retain=got.retain,
        source_form=svc.source_form,
        mount=mount,
        monthly_usd=got.monthly_usd,
        price_source=svc.price_source,
        ports=svc.ports,
        efa=efa,
        data=svc.data,
    )


def efa_note(shared: Shared | None, efa_capable: bool) -> str | None:
    """Why an EFA node type gets a TCP-only FSx (EFA must be chosen at creation), or None."""
    if shared is None or shared.existing or shared.efa or not efa_capable or shared.resource is None:
        return None
    steps = (shared.data or {}).get("efa", {}).get("increments") or {}
    step = steps.get(shared.throughput)
    if not step:
        return None
    return (
        f"{shared.service} without EFA: EFA-enabled file systems come in multiples of {step} GiB at "
        f"{shared.throughput} MB/s/TiB (got {shared.size_gb}); EFA can only be set when the filesystem is "
        "created (pulumi-aws `efa_enabled`), so choosing it later replaces the filesystem"
    )


def with_source(shared: Shared, source: str) -> Shared:
    return replace(shared, mount=replace(shared.mount, source=source))
