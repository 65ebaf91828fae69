"""Fabric enablement parts: what NCCL needs on the node beyond the wired devices.

Each cloud's layout says, per fabric kind and image, which steps its bootstrap performs (data in
the cloud's catalog `images:`/`rules:` with sources) and whether that makes the fabric usable. The
environment jobs need goes to one file, `/etc/gpu-cluster/nccl.env`, that job scripts source
(`set -a; . /etc/gpu-cluster/nccl.env; set +a`) and that `mpirun -x`/`torchrun` pass on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import File, Part

NCCL_ENV = "/etc/gpu-cluster/nccl.env"


@dataclass(frozen=True)
class FabricUsability:
    """Whether the bootstrap gives NCCL everything the fabric needs on this image, and if not, what is missing."""

    usable: bool
    missing: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()  # what the image or the bootstrap brings (plugin, daemon, environment)

    def describe(self) -> str:
        if self.usable:
            return "usable: " + ", ".join(self.provides) if self.provides else "usable"
        return "not usable by NCCL: missing " + "; ".join(self.missing)


def nccl_env_part(env: Mapping[str, str], source: str, commands: Sequence[Sequence[str]] = ()) -> Part:
    """The NCCL/libfabric environment as one file, plus any enablement commands of the cloud."""
    lines = [f"# gpu-cluster: the environment NCCL needs on this fabric ({source})"]
    lines += [f"{k}={v}" for k, v in sorted(env.items())]
    return Part(
        "fabric",
        files=(File(NCCL_ENV, "\n".join(lines) + "\n"),) if env else (),
        commands=tuple(tuple(c) for c in commands),
        summary=f"writes the NCCL environment to {NCCL_ENV}." if env else "enables the fabric.",
    )
