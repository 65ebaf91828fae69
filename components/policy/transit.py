"""Encryption in transit, as the plan states it (summary `inTransit`); data: transit.yaml, sources there.

The metrics endpoints are plain HTTP on the nodes, so what keeps them private is the node firewall: that is
checked on the registered rules (every ingress rule that admits a metrics port admits only the cluster's own
security groups, its `VirtualNetwork` or ranges inside the cluster's networks). The rest depends on the service
(the Kubernetes API's TLS, the shared filesystem's mount) and is read from the data; where the data names what
makes the service refuse plain traffic (`enforcedBy`: EFS's file system policy), the registered resources are
checked for it.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import load_yaml
from .model import Resource
from .readers import CLUSTER_RANGES, Ports, ingress_rules, ports_of

_FILE = Path(__file__).resolve().parent / "transit.yaml"

_INSIDE_NAMES = {"virtualnetwork"}  # Azure's service tag for the VNet (and peered VNets)


@cache
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(_FILE)
    return loaded


def _covers(ports: Ports, port: int) -> bool:
    return ports is None or ports[0] <= port <= ports[1]


def _ingress(res: Resource) -> Iterator[tuple[list[Ports], Any]]:
    """(port ranges, source) of each inbound allow rule; a source that is a group or a tag is yielded as None."""
    props, kind = res.props, res.type
    if kind == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        every = str(props.get("ipProtocol")) == "-1"
        ports = [None if every else (int(props.get("fromPort", 0)), int(props.get("toPort", 65535)))]
        for key in ("cidrIpv4", "cidrIpv6"):
            if props.get(key):
                yield ports, props[key]
        if props.get("prefixListId"):
            yield ports, f"prefix list {props['prefixListId']}"
    elif kind == "aws:ec2/securityGroup:SecurityGroup":
        for rule in props.get("ingress") or []:
            every = str(rule.get("protocol")) == "-1"
            ports = [None if every else (int(rule.get("fromPort", 0)), int(rule.get("toPort", 65535)))]
            for source in (rule.get("cidrBlocks") or []) + (rule.get("ipv6CidrBlocks") or []):
                yield ports, source
    elif kind == "gcp:compute/firewall:Firewall":
        if str(props.get("direction", "INGRESS")).upper() == "INGRESS":
            ranges: list[Ports] = []
            for allow in props.get("allows") or []:
                given = allow.get("ports") or []
                ranges += [ports_of(p) for p in given] if given else [None]
            for source in props.get("sourceRanges") or []:
                yield ranges, source
    elif kind in ("azure-native:network:NetworkSecurityGroup", "azure-native:network:SecurityRule"):
        rules = props.get("securityRules") or [props.get("properties", props)]
        for rule in rules:
            if str(rule.get("direction", "")).lower() != "inbound" or str(rule.get("access", "")).lower() != "allow":
                continue
            given = rule.get("destinationPortRanges") or [rule.get("destinationPortRange")]
            ports = [ports_of(p) for p in given]
            for source in [rule.get("sourceAddressPrefix"), *(rule.get("sourceAddressPrefixes") or [])]:
                if source:
                    yield ports, source
    else:  # the plain rule shapes: resource_types.yaml ingressRules
        yield from ingress_rules(kind, props)


def _cluster_ranges(resources: list[Resource], extra: tuple[str, ...]) -> list[Any]:
    ranges = []
    for text in extra:
        ranges.append(ipaddress.ip_network(text, strict=False))
    for res in resources:
        key = CLUSTER_RANGES.get(res.type)  # resource_types.yaml clusterRanges
        if key is None:
            continue
        value: Any = res.props
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, Mapping):  # Azure VirtualNetwork: addressSpace.addressPrefixes
            value = value.get("addressPrefixes")
        for text in value if isinstance(value, list) else [value]:
            try:
                ranges.append(ipaddress.ip_network(str(text), strict=False))
            except ValueError:
                continue  # an output not known in the plan
    return ranges


def _inside(source: str, ranges: list[Any]) -> bool:
    if source.lower() in _INSIDE_NAMES:
        return True
    try:
        net = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return False
    return any(net.version == r.version and net.subnet_of(r) for r in ranges)


def metrics_exposure(resources: list[Resource], cluster_cidrs: tuple[str, ...] = ()) -> list[str]:
    """The rules that admit a metrics port from outside the cluster's own networks (empty: none)."""
    ports = [int(p) for p in data()["metrics"]["ports"]]
    ranges = _cluster_ranges(resources, cluster_cidrs)
    exposed = []
    for res in resources:
        for rule_ports, source in _ingress(res):
            if any(_covers(r, p) for r in rule_ports for p in ports) and not _inside(str(source), ranges):
                exposed.append(f"{res.name} admits {source} on a metrics port")
    return exposed


def _denies_plain(policy: Any) -> bool:
    """A resource policy (JSON text) with a Deny of every action whenever aws:SecureTransport is false."""
    try:
        doc = json.loads(policy) if isinstance(policy, str) else policy
    except ValueError:
        return False  # an output not known in the plan
    statements = (doc or {}).get("Statement") if isinstance(doc, Mapping) else None
    for s in statements if isinstance(statements, list) else [statements]:
        if not isinstance(s, Mapping) or s.get("Effect") != "Deny" or s.get("Action") not in ("*", ["*"]):
            continue
        if str(((s.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport")).lower() == "false":
            return True
    return False


def enforced(resources: list[Resource], token: str) -> bool:
    """Whether a registered resource of type `token` refuses requests not over TLS (its `policy`)."""
    return any(res.type == token and _denies_plain(res.props.get("policy")) for res in resources)


def unenforced(resources: list[Resource]) -> frozenset[str]:
    """The shared-filesystem types registered that can refuse plain NFS (`enforcedBy`) but no registered policy makes
    them refuse it: the profiles' in-transit rule fails them."""
    entries = [e for by_kind in data()["sharedStorage"].values() for e in (by_kind or {}).values()]
    present = {res.type for res in resources}
    return frozenset(
        str(e["resource"])
        for e in entries
        if e.get("enforcedBy") and e.get("resource") in present and not enforced(resources, str(e["enforcedBy"]))
    )


def in_transit(
    cloud: str,
    resources: list[Resource],
    *,
    cluster_cidrs: tuple[str, ...] = (),
    shared_kind: str | None = None,
    kubernetes: bool = False,
) -> dict[str, Any]:
    """The plan's `inTransit`: the metrics endpoints (checked), the TLS endpoints, the shared filesystem's mount."""
    d = data()
    exposed = metrics_exposure(resources, cluster_cidrs)
    shared = None
    if shared_kind is not None:
        entry = (d["sharedStorage"].get(cloud) or {}).get(shared_kind)
        shared = (
            {"kind": shared_kind, **entry}
            if entry
            else {"kind": shared_kind, "inTransit": "not offered", "note": "no in-transit data for this service"}
        )
        if entry and entry.get("enforcedBy"):
            shared["enforced"] = enforced(resources, str(entry["enforcedBy"]))
    return {
        "metrics": {
            "ports": list(d["metrics"]["ports"]),
            "insideClusterNetwork": not exposed,
            "note": d["metrics"]["note"] if not exposed else "; ".join(exposed),
        },
        "kubernetesApi": {"tls": d["kubernetesApi"]["tls"], "note": d["kubernetesApi"]["note"]} if kubernetes else None,
        "slurmRestApi": d["slurmRestApi"],
        "sharedStorage": shared,
    }
