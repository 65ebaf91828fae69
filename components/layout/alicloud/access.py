"""How people reach the nodes: Cloud Assistant session manager or SSH, and the login node."""

from __future__ import annotations

from dataclasses import dataclass

from ... import catalog
from ...spec import ClusterSpec
from .data import alicloud_data

PUBLIC_BANDWIDTH_MBPS = 100  # ecs.Instance internet_max_bandwidth_out range [0, 100]


@dataclass(frozen=True)
class LoginNode:
    """One small CPU VM in the nodes' vSwitch: the only place a public IP or an SSH CIDR lands."""

    instance_type: str
    image_name_regex: str
    public_bandwidth_mbps: int
    ssh_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    method: str  # session-manager | ssh | none (spec.access resolved)
    session_manager: bool  # enable Cloud Assistant session manager (account-wide setting)
    login_user: str
    client: str  # the session manager client command, `{instance}` for the instance id


def access_plan(spec: ClusterSpec) -> Access:
    data = alicloud_data()
    return Access(
        method=spec.access,
        session_manager=spec.access == "session-manager",
        login_user=data["loginUser"]["default"],
        client=data["sessionManager"]["client"],
    )


def login_node(spec: ClusterSpec) -> LoginNode | None:
    if spec.login is None:
        return None
    assert spec.login.instance_type is not None  # resolved by the spec
    return LoginNode(
        instance_type=spec.login.instance_type,
        # a CPU VM: the plain (non-UEFI) public Ubuntu image of its architecture, no GPU driver (catalog images.login)
        image_name_regex=catalog.cpu_image("alicloud", spec.login.instance_type)["nameRegex"],
        public_bandwidth_mbps=PUBLIC_BANDWIDTH_MBPS if spec.login.public_ip else 0,
        ssh_cidrs=tuple(spec.network.ssh_cidrs),
    )
