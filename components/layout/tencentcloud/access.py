"""How people reach the nodes: SSH, and the login node."""

from __future__ import annotations

from dataclasses import dataclass


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
