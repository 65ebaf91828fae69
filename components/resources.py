"""Pulumi helpers every cloud package uses the same way (so a rule is kept in one place).

- `from_config`: a value taken from the cluster config stays secret in state and in plans when the
  config holds `secure:` values (the engine marks the whole `gpu-cluster:cluster` object secret).
- `invoke_options`: every invoke gets `parent`, so it runs with the parent's explicit provider
  (region, credentials) instead of the default one (pulumi-eks does the same).
- `SharedFilesystem`: what every cloud's storage module returns and exports the same way.
- `fill`: a boot document with the values known only at deploy (a filesystem's address, the Slurm head's) put in
  place of their tokens, then encoded as the cloud takes it: the one way every cloud fills its user data.
- `Joined`: a network resource of `network.existing`, which the cluster joins but does not manage.
- `email_suffixes`: the logical-name suffix of each alert email's subscription (monitoring.notify).
- `serve_output`: the `serve` stack output every cloud's load-balanced endpoint gives the same way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi

from .bootstrap.slurm_conf import SlurmLayout
from .layout.shared import Shared
from .spec import ClusterSpec

T = TypeVar("T")


def from_config(spec: ClusterSpec, value: T) -> pulumi.Input[T]:
    if spec.secret_config and value is not None:
        return pulumi.Output.secret(value)
    return value


def fill(
    text: str, values: Mapping[str, pulumi.Input[str] | None], encode: Callable[[str], str] = str
) -> pulumi.Input[str]:
    """`text` with each token replaced by its value once the values are known, then `encode`d (gzip+base64, base64,
    or as is). A token whose value is None stays as it is; with no value at all the text is encoded now."""
    given = {token: value for token, value in values.items() if value is not None}
    if not given:
        return encode(text)
    tokens = list(given)

    def render(resolved: list[Any]) -> str:
        out = text
        for token, value in zip(tokens, resolved, strict=True):
            out = out.replace(token, str(value))
        return encode(out)

    return pulumi.Output.all(*given.values()).apply(render)


def invoke_options(parent: pulumi.Resource) -> pulumi.InvokeOutputOptions:
    return pulumi.InvokeOutputOptions(parent=parent)


@dataclass(frozen=True)
class SharedFilesystem:
    """A cluster's shared filesystem as built on any cloud (clouds add what else they made)."""

    resource: pulumi.CustomResource | None  # None for an existing filesystem
    source: pulumi.Input[str]  # the mount source the nodes use

    def output(self, shared: Shared) -> dict[str, Any]:
        """The `sharedFilesystem` output: the same keys on every cloud."""
        return {
            "kind": shared.kind,
            "id": self.resource.id if self.resource is not None else None,
            "mount": self.source,
            "path": shared.path,
        }


@dataclass(frozen=True)
class Joined:
    """A network resource the cluster joins but does not manage: what its users read (`.id`, `.self_link`)."""

    id: pulumi.Output[str]
    self_link: pulumi.Output[str]
    name: pulumi.Output[str]  # the id's last segment (an Azure VNet's or a GCP network's name)

    @staticmethod
    def of(value: str) -> Joined:
        out = pulumi.Output.from_input(value)
        return Joined(out, out, pulumi.Output.from_input(value.rstrip("/").rsplit("/", 1)[-1]))


NO_LOGIN = "none: access is none, the plan builds no way to log in"


def ssh_command(login_user: str, host: pulumi.Input[str] | None) -> pulumi.Output[str]:
    """What a user types to SSH to the login node: its public address once the cloud gives it."""
    return pulumi.Output.concat(f"ssh -i <private key> {login_user}@", "<public ip>" if host is None else host)


def secret_slurm_output(
    head: tuple[pulumi.Input[str], pulumi.Input[str]],  # the head's instance id and private address
    layout: SlurmLayout,
    login: pulumi.Input[str],  # the login command
    munge_key: Mapping[str, Any],  # where the key is kept and who may read it (never the key)
    compute_config: str,  # the secret holding the nodes' view
) -> dict[str, Any]:
    """`slurm` where the MUNGE key and the nodes' view live in the cloud's secret store (its package names it)."""
    instance_id, address = head
    return {
        "headNode": {"instanceId": instance_id, "privateIp": address},
        "partition": layout.partition,
        "slurmVersion": layout.packages.version,
        "gres": layout.node.gres,
        "login": login,
        "check": "sinfo -N -l",
        "mungeKey": dict(munge_key),
        "computeConfig": compute_config,
    }


def serve_output(
    endpoint: pulumi.Output[str],
    port: int,
    protocol: str,
    internal: bool,
    health: tuple[str, int, str | None],  # the check's protocol, port and (http) path
    check: Callable[[str], str],  # the command that checks the endpoint, given its address
    reach: str,  # where a client must be
    **behind: Any,  # what is behind it: the cloud's load balancer, target or server group
) -> dict[str, Any]:
    """`serve`: the endpoint, how to check it, and what is behind it."""
    protocol_, health_port, path = health
    return {
        "endpoint": endpoint,
        "port": port,
        "protocol": protocol,
        "internal": internal,
        "healthCheck": {"protocol": protocol_, "port": health_port, "path": path},
        "check": endpoint.apply(check),
        "from": reach,
        **behind,
    }


def email_suffixes(emails: tuple[str, ...]) -> list[str]:
    """A logical-name suffix per address, stable when others are added or removed (not its position)."""
    slugs = [re.sub(r"[^a-z0-9]+", "-", e.lower()).strip("-") for e in emails]
    return [
        s if slugs.count(s) == 1 else f"{s}-{hashlib.sha256(e.encode()).hexdigest()[:8]}"
        for s, e in zip(slugs, emails, strict=True)
    ]
