"""Kubernetes rules: a private API endpoint, encrypted Secrets, only the pinned GPU/fabric software."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ...cidr import wide_public
from ...datafile import load_yaml
from ..model import CONFIG, Facts, Issue, Resource, at, find, truthy
from ..readers import api_endpoint
from ..types import K8S_UNCHECKABLE_TYPES, RELEASE_TYPE

_HERE = Path(__file__).resolve().parent.parent
CHARTS_FILE = _HERE.parent / "catalog" / "kubernetes" / "charts.yaml"
KUBERNETES_FILE = _HERE / "kubernetes.yaml"


@cache
def _kubernetes_data() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(KUBERNETES_FILE)["controlPlanes"]
    return data


@cache
def _pinned_charts() -> dict[tuple[str, str], str]:
    """(chart, repo) -> the pinned version, from the one charts file the clusters install from."""
    charts = load_yaml(CHARTS_FILE)["charts"]
    return {(c["chart"], c["repo"]): str(c["version"]) for c in charts.values()}


@cache
def _fabric_workloads() -> dict[str, tuple[str, frozenset[str]]]:
    """The fabric plugins a cloud ships as raw workloads (not charts), by name: (namespace, their images).

    Read from `fabricWorkloads.daemonSets` of catalog/kubernetes/<cloud>.yaml, where each is pinned
    with its source (GKE's NCCL installers and device injector: no chart exists for them).
    """
    allowed: dict[str, tuple[str, frozenset[str]]] = {}
    for path in sorted(CHARTS_FILE.parent.glob("*.yaml")):
        block = (load_yaml(path) or {}).get("fabricWorkloads") or {}
        for name, entry in (block.get("daemonSets") or {}).items():
            images = {entry["image"]}
            if entry.get("hostSetup"):
                images.add(entry["hostSetup"]["image"])
            if not entry.get("daemon") and block.get("pause"):
                images.add(block["pause"])  # an installer ends on the pause container
            allowed[name] = (str(block.get("namespace", "")), frozenset(images))
    return allowed


def _is_fabric_workload(res: Resource) -> bool:
    meta = res.props.get("metadata") or {}
    known = _fabric_workloads().get(str(meta.get("name", "")))
    if known is None or str(meta.get("namespace", "")) != known[0]:
        return False
    images = {str(i) for i in find(res.props.get("spec") or {}, {"image"})}
    return bool(images) and images <= known[1]


def _outside(cidrs: list[Any], allowed: tuple[str, ...]) -> list[str]:
    """The ranges not inside any allowed range, and any wide public one whatever the stack allows."""
    nets = [ipaddress.ip_network(a, strict=False) for a in allowed]
    out = []
    for cidr in cidrs:
        text = str(cidr)
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            out.append(text)
            continue
        if wide_public(text) or not any(net.version == a.version and net.subnet_of(a) for a in nets):  # type: ignore[arg-type]
            out.append(text)
    return out


def endpoint_state(res: Resource) -> tuple[bool, list[Any] | None, list[str]] | None:
    """(public?, the CIDRs a public endpoint admits (None: the cloud cannot say), other findings)."""
    props, kind = res.props, res.type
    if kind == "aws:eks/cluster:Cluster":
        vpc = props.get("vpcConfig") or {}
        # pulumi_aws ClusterVpcConfigArgs: endpointPublicAccess "Default is `true`", endpointPrivateAccess
        # "Default is `false`"; publicAccessCidrs unset: "EKS defaults this to a list with `0.0.0.0/0`"
        public = vpc.get("endpointPublicAccess") not in (False, "false")
        found = (
            []
            if truthy(vpc.get("endpointPrivateAccess"))
            else ["has no private API endpoint (vpcConfig.endpointPrivateAccess)"]
        )
        return public, list(vpc.get("publicAccessCidrs") or ["0.0.0.0/0"]), found
    if kind == "gcp:container/cluster:Cluster":
        private = props.get("privateClusterConfig") or {}
        endpoints = props.get("controlPlaneEndpointsConfig") or {}
        ip_on = (endpoints.get("ipEndpointsConfig") or {}).get("enabled") not in (False, "false")
        dns_public = truthy((endpoints.get("dnsEndpointConfig") or {}).get("allowExternalTraffic"))
        public = (ip_on and not truthy(private.get("enablePrivateEndpoint"))) or dns_public
        networks = props.get("masterAuthorizedNetworksConfig") or {}
        found = []
        if truthy(networks.get("gcpPublicCidrsAccessEnabled")):
            found.append(
                "admits every Google Cloud public IP (masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled)"
            )
        # without authorized networks, a public GKE endpoint answers from any address
        cidrs = [b.get("cidrBlock") for b in networks.get("cidrBlocks") or []] or ["0.0.0.0/0"]
        return public, cidrs, found
    if kind == "azure-native:containerservice:ManagedCluster":
        access = props.get("apiServerAccessProfile") or {}
        public = not truthy(access.get("enablePrivateCluster"))
        return public, list(access.get("authorizedIPRanges") or ["0.0.0.0/0"]), []
    if kind == "alicloud:cs/managedKubernetes:ManagedKubernetes":
        # slbInternetEnabled: "Whether to create internet load balancer for API Server. Default to true."
        lbs = (props.get("controlPlaneEndpointsConfig") or {}).get("loadBalancersConfigs") or []
        public = props.get("slbInternetEnabled") not in (False, "false") or any(
            str(lb.get("endpointType", "")).lower() == "public" for lb in lbs
        )
        # the allow-list of an ACK public endpoint is an ACL on its load balancer, not a cluster input
        return public, None, []
    return api_endpoint(kind, props)  # the simple shapes: resource_types.yaml apiEndpoints


def control_plane_service(kind: str) -> str | None:
    """EKS, GKE, AKS or ACK for a managed control plane's type token, else None."""
    entry = _kubernetes_data().get(kind)
    return None if entry is None else str(entry["service"])


def private_endpoint(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    state = endpoint_state(res)
    if state is None:
        return
    public, cidrs, found = state
    yield from found
    if public and not facts.k8s_public_endpoint:
        yield Issue(
            "exposes the Kubernetes API server on the internet although kubernetes.publicEndpoint is false",
            "expose the Kubernetes API server on the internet",
            "exposes the Kubernetes API server on the internet",
            f"keep the endpoint private, or set {CONFIG}.kubernetes.publicEndpoint and publicCidrs",
        )
    elif public and cidrs is not None:
        outside = _outside(cidrs, facts.k8s_public_cidrs)
        if outside:
            yield Issue(
                f"admits {', '.join(outside)} to the public API server, outside kubernetes.publicCidrs",
                fix=f"list the ranges in {CONFIG}.kubernetes.publicCidrs",
            )


def secrets_encryption(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    entry = _kubernetes_data().get(res.type)
    if entry is None:
        return
    rule = entry["secrets"]
    if "unavailable" in rule:  # the SDK cannot ask for it (kubernetes.yaml says why; the layout warns)
        return
    fix = f"set {rule['fix']} (see components/policy/kubernetes.yaml)"
    message = f"does not envelope-encrypt Kubernetes Secrets with a key ({entry['service']})"
    issue = Issue(
        message, "do not envelope-encrypt Kubernetes Secrets", "does not envelope-encrypt Kubernetes Secrets", fix
    )
    if "companion" in rule:  # encrypted by a resource of its own (TKE EncryptionProtection)
        if rule["companion"] not in facts.k8s_secrets_companions:
            yield issue
        return
    block = at(res.props, rule["path"])
    if isinstance(block, list):  # a block is one mapping in the SDK, a list of one in some serialisations
        block = block[0] if block else None
    if not isinstance(block, Mapping) or not block:
        since = rule.get("defaultFromVersion")
        version = str(res.props.get("version") or "")
        # no version: the service's newest, which is later than any default's start
        if since is not None and (not version or _version(version) >= _version(since)):
            return
        yield issue
        return
    if not _secrets_on(block, rule):
        yield issue


def secrets_companions(resources: list[Resource]) -> frozenset[str]:
    """The companion types (kubernetes.yaml `secrets.companion`) of which the stack holds one with a key."""
    wanted = {
        str(e["secrets"]["companion"]): str(e["secrets"]["keyPath"])
        for e in _kubernetes_data().values()
        if "companion" in e["secrets"]
    }
    return frozenset(r.type for r in resources if r.type in wanted and at(r.props, wanted[r.type]))


def _secrets_on(block: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    """Every condition the data names holds: the resources list, the state, the switch, the key."""
    if "resourcesMust" in rule and rule["resourcesMust"] not in (block.get(rule["resourcesKey"]) or []):
        return False
    if "stateMust" in rule and str(block.get(rule["stateKey"], "")).upper() != rule["stateMust"]:
        return False
    if "enabledKey" in rule and not truthy(block.get(rule["enabledKey"])):
        return False
    if "disabledKey" in rule and truthy(block.get(rule["disabledKey"])):
        return False
    return bool(at(block, rule["keyPath"]))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


PRIVILEGED_KEYS = {"privileged", "hostPID", "hostIPC", "hostNetwork", "allowPrivilegeEscalation"}


def allowed_workloads(res: Resource, facts: Facts) -> Iterator[str | Issue]:
    if res.type == RELEASE_TYPE:
        chart = str(res.props.get("chart") or "")
        repo = str((res.props.get("repositoryOpts") or {}).get("repo") or "")
        version = str(res.props.get("version") or "")
        pinned = _pinned_charts().get((chart, repo))
        if pinned is None:
            yield Issue(
                f"installs chart {chart or '?'} from {repo or 'no repository'}, not one of the GPU/fabric charts",
                "install a chart that is not one of the GPU/fabric charts",
                "installs a chart that is not one of the GPU/fabric charts",
                "install only the charts of components/catalog/kubernetes/charts.yaml",
            )
        elif version != pinned:
            yield Issue(
                f"installs chart {chart} version {version or 'unpinned'}, not the pinned {pinned}",
                fix="install the version pinned in components/catalog/kubernetes/charts.yaml",
            )
    elif res.type in K8S_UNCHECKABLE_TYPES:
        yield Issue(
            "installs manifests rendered out of the policy's sight",
            "install manifests rendered out of the policy's sight",
            "installs manifests rendered out of the policy's sight",
            "install a pinned chart of components/catalog/kubernetes/charts.yaml as a helm.v3.Release",
        )
    elif res.type.startswith("kubernetes:") and not res.type.startswith("kubernetes:helm.sh/"):
        keys = sorted({k for k in PRIVILEGED_KEYS for v in find(res.props, {k}) if truthy(v)})
        added = [c for caps in find(res.props, {"add"}) if isinstance(caps, list) for c in caps]
        keys += [f"capabilities {c}" for c in added if str(c).upper() in ("SYS_ADMIN", "ALL", "NET_ADMIN")]
        if keys and not _is_fabric_workload(res):
            yield Issue(
                f"runs a privileged workload ({', '.join(keys)}) that is not a GPU/fabric plugin",
                "run a privileged workload that is not a GPU/fabric plugin",
                "runs a privileged workload that is not a GPU/fabric plugin",
                "ship it as a chart of components/catalog/kubernetes/charts.yaml, or as a pinned "
                "fabricWorkloads entry of catalog/kubernetes/<cloud>.yaml",
            )
