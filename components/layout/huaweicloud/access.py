"""How people reach the nodes: SSH, and the login node."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoginNode:
    flavor: str
    image_name_regex: str  # the public image looked up for it (catalog/huaweicloud.yaml images)
    public_ip: bool
    ssh_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    method: str  # ssh | none
    login_user: str
