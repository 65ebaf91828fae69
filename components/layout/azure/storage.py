"""Azure shared-filesystem decisions: Managed Lustre's own subnet."""

from __future__ import annotations

import ipaddress

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ..shared import Shared


def shared_subnet(spec: ClusterSpec, node_cidr: str, shared: Shared | None) -> str | None:
    """AMLFS's own subnet: the last /24 of the VNet's second half, clear of the /26 access blocks at its start,
    so adding it moves no existing subnet (catalog/storage/azure.yaml `subnet`). The NFS share needs none: its
    private endpoint takes an address in the node subnet."""
    if shared is None or shared.kind != "lustre":
        return None
    prefix = int((shared.data or {}).get("subnet", {}).get("prefix", 24))
    second = next(n for n in ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1) if str(n) != node_cidr)
    if second.prefixlen > prefix - 1:  # the /24 must leave the access blocks (the first /25) alone
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for the /{prefix} Azure Managed "
            f"Lustre needs beside the access subnets; use a /{prefix - 2} or larger network",
        )
    return str(list(second.subnets(new_prefix=prefix))[-1])
