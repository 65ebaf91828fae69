"""How people reach the nodes: SSH, and the login node; and the refusal of an SSH cluster no address can reach."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec


@dataclass(frozen=True)
class LoginNode:
    instance_type: str
    os_name: str
    public_ip: bool
    ssh_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    method: str  # ssh | none
    login_user: str


def access_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    """SSH is Tencent's only way in (capabilities `access.why`): with a key to log in with but no sshCidrs, no rule
    opens port 22 anywhere and the cluster is built for nobody; no safe default exists (port 22 open to the internet
    is not one), so the plan says what to set. Without a key the spec already warns that nobody can log in."""
    if spec.access == "ssh" and spec.ssh_public_key and not spec.network.ssh_cidrs:
        yield ConfigError(
            f"{CLUSTER_KEY}.network.sshCidrs",
            "empty, but access is ssh (Tencent Cloud's only way in) and sshPublicKey is set: no address may reach "
            "port 22, so nobody can log in; set network.sshCidrs to the CIDRs you connect from and login: "
            "{publicIp: true} for a login node with a public IP (or access: none for a cluster without a way in)",
        )
