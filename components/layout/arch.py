"""What an arm64 (Grace) GPU type cannot run yet, refused before any resource is registered.

The image is picked per architecture (catalog `images.arch`, in each cloud's layout); the node bootstrap's downloads
are architecture-neutral (apt repositories, multi-arch container images, `dpkg --print-architecture` where a URL
names it). Two paths are not: the Slurm packages' repository line names its architectures (catalog/slurm.yaml
`repo: deb [arch=amd64 ...]`), and the Kubernetes node pools, their GPU software and fabric installers are built for
x86_64 nodes only. Both are refused with the key to change rather than planned to fail at boot.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import catalog
from ..bootstrap.slurm_conf import packages
from ..errors import CLUSTER_KEY, ConfigError, refuse
from ..spec import ClusterSpec


def check(spec: ClusterSpec) -> None:
    """Raise what an arm64 type meets with this scheduler (x86_64 types: nothing)."""
    refuse(problems(spec))


def problems(spec: ClusterSpec) -> Iterator[ConfigError]:
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


def _repo_arches(repo: str) -> str:
    start = repo.index("arch=") + len("arch=")
    return repo[start:].split(" ", 1)[0].split("]", 1)[0]
