"""What an arm64 (Grace) GPU type, or an arm64 CPU node, cannot run yet, refused before any resource is registered.

The image is picked per architecture (catalog `images.arch`, in each cloud's layout); the node bootstrap's downloads
are architecture-neutral (apt repositories, multi-arch container images, `dpkg --print-architecture` where a URL
names it). Two paths are not: the Slurm packages' repository line names its architectures (catalog/slurm.yaml
`repo: deb [arch=amd64 ...]`), and the Kubernetes node pools, their GPU software and fabric installers are built for
x86_64 nodes only. Both are refused with the key to change rather than planned to fail at boot.

The CPU nodes (the login node, the Slurm head) are not catalog rows: their architecture is the cloud's
`rules.cpuArch` pattern (`catalog.cpu_arch`) and their image `images.login` on that architecture (`catalog.cpu_image`).
An arm64 CPU node whose cloud has no arm64 image for it, or that would run Slurm, is refused. On Azure the login node
and the head boot the cluster's own image (components/azure/vm.py), so their architecture must be the image's.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import catalog
from ..bootstrap.slurm_conf import packages
from ..catalog import releases
from ..catalog.capabilities import capabilities
from ..errors import CLUSTER_KEY, ConfigError, refuse
from ..spec import ClusterSpec


def check(spec: ClusterSpec) -> None:
    """Raise what an arm64 type meets with this scheduler (x86_64 types: nothing)."""
    refuse(problems(spec))


def problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    yield from _gpu_nodes(spec)
    yield from cpu_node_problems(spec)


def _gpu_nodes(spec: ClusterSpec) -> Iterator[ConfigError]:
    row = spec.instance
    if row.arch == "x86_64":
        return
    if spec.scheduler == "slurm":
        repo = packages().repo
        if catalog.arch_unsupported(row, repo):
            yield ConfigError(
                f"{CLUSTER_KEY}.scheduler",
                f"slurm with {row.instanceType} ({row.arch}): the Slurm packages gpu-cluster installs come from a "
                f"repository built for {_repo_arches(repo)} only (catalog/slurm.yaml packages.repo); "
                "use scheduler: none",
            )
    if spec.scheduler == "kubernetes":
        yield ConfigError(
            f"{CLUSTER_KEY}.scheduler",
            f"kubernetes with {row.instanceType} ({row.arch}): the GPU node pools, their GPU software and fabric "
            "installers are wired for x86_64 nodes only; use scheduler: none",
        )


def cpu_nodes(spec: ClusterSpec) -> tuple[tuple[str, str], ...]:
    """The CPU nodes of the spec as (config key, instance type): the login node, the Slurm head."""
    nodes: list[tuple[str, str]] = []
    if spec.login is not None and spec.login.instance_type is not None:
        nodes.append(("login.instanceType", spec.login.instance_type))
    if spec.slurm is not None and spec.slurm.head_instance_type is not None:
        nodes.append(("slurm.headInstanceType", spec.slurm.head_instance_type))
    return tuple(nodes)


def cpu_node_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """An arm64 login node or head (catalog.cpu_arch) with no image of its architecture, or with Slurm; on Azure a
    CPU node whose architecture is not the cluster image's."""
    default = capabilities(spec.cloud).login_default_type
    for key, instance_type in cpu_nodes(spec):
        arch = catalog.cpu_arch(spec.cloud, instance_type)
        where = f"{CLUSTER_KEY}.{key}"
        if spec.cloud == "azure":  # the VM boots the cluster's image (components/azure/vm.py virtual_machine)
            image = (
                spec.instance.arch if releases.is_catalog_image("azure", spec.image) else catalog.image_arch(spec.image)
            )
            if image is not None and image != arch:
                yield ConfigError(
                    where,
                    f"{instance_type} is {arch}, but it boots the cluster's image, which is {image} on azure; use "
                    f"a size of that architecture (Azure marks Arm sizes with p, as in Standard_D2ps_v5; x86_64: "
                    f"{default})",
                )
                continue
        if arch == "x86_64":
            continue
        repo = packages().repo
        if spec.scheduler == "slurm" and catalog.arch_unsupported(arch, repo):
            yield ConfigError(
                where,
                f"{instance_type} is {arch}: the Slurm packages gpu-cluster installs come from a repository built for "
                f"{_repo_arches(repo)} only (catalog/slurm.yaml packages.repo); use an x86_64 type such as {default}",
            )
            continue
        if spec.cloud != "azure" and not _has_image(catalog.cpu_image(spec.cloud, instance_type)):
            reason = catalog.cpu_image(spec.cloud, instance_type).get("reason", "no image")
            yield ConfigError(where, f"{instance_type} is {arch}: {reason}; use an x86_64 type such as {default}")


def _has_image(entry: dict[str, object]) -> bool:
    return any(entry.get(key) for key in ("ssmParameter", "urn", "family", "nameRegex", "osName"))


def _repo_arches(repo: str) -> str:
    start = repo.index("arch=") + len("arch=")
    return repo[start:].split(" ", 1)[0].split("]", 1)[0]
