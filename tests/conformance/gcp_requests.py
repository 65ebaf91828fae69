"""Registered `gcp:` inputs -> the REST requests the provider sends, one translator per resource type.

The provider is pulumi-gcp 10.x, whose upstream is hashicorp/terraform-provider-google-beta (pulumi-gcp
provider/go.mod); file names below are google-beta's `google-beta/services/<service>/...` (read at 7.45, Aug 2026).
Pulumi's input names are the Terraform attributes in camelCase, lists of blocks pluralised (`allow` -> `allows`)
and single-item blocks as one object. Each translator takes every input it knows and reports the rest
(`Src.done`): an input nobody translates is a gap here, not a silent pass. Empty values the provider would leave
out are left out; the provider's own fixed additions that the API reads (a health check's `type`, an access
config's `type`, a template's default scheduling) are added as it adds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .gcp_rules import apply_provider_rule
from .gcp_schema import AUTONAME, Request, autoname, unknown

# pulumi-gcp provider/resources.go: these types autoname with `lowercaseAutoName()` (lowercased, at most 63);
# every other type with a `name` input gets `SetAutonaming(255, "-")`: the logical name as written, "-", 7 hex.
LOWERCASE_AUTONAME = {
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
}
# What is not checked, and why (reported by `check_resources`).
UNCOVERED = {
    "gcp:lustre/instance:Instance": "no lustre discovery document in google-api-python-client",
}
SCOPE_PREFIX = "https://www.googleapis.com/auth/"
ATTRIBUTION_LABEL = "goog-pulumi-provisioned"


@dataclass
class Context:
    """The resource being translated, the plan's other resources (to resolve `<autoname:NAME>`), what went wrong."""

    logical: str
    type: str
    index: dict[str, dict[str, Any]]
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def project(self) -> str:
        for res in self.index.values():
            if isinstance(res["inputs"].get("project"), str):
                return str(res["inputs"]["project"])
        return "<project>"

    def name(self, given: Any) -> str:
        """The resource's `name` as sent: the input, or what Pulumi generates for it (pulumi-gcp resources.go)."""
        if isinstance(given, str):
            return self.resolve(given)
        return autoname(self.logical, self.type in LOWERCASE_AUTONAME)

    def resolve(self, value: Any) -> Any:
        """`<autoname:NAME>` replaced by the name Pulumi generates for NAME; other placeholders kept."""
        if isinstance(value, str):
            match = AUTONAME.fullmatch(value)
            if match and match.group(1) in self.index:
                return autoname(match.group(1), self.index[match.group(1)]["type"] in LOWERCASE_AUTONAME)
            return value
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value

    def provider_rule(self, key: str, where: str, value: Any) -> None:
        self.problems += [(where, p) for p in apply_provider_rule(key, value)]


class Src:
    """A registered input object being translated: what is taken is translated, what is left is reported."""

    def __init__(self, data: dict[str, Any], ctx: Context, path: str = "inputs") -> None:
        self.data, self.ctx, self.path = dict(data), ctx, path

    def pop(self, key: str, default: Any = None) -> Any:
        return self.ctx.resolve(self.data.pop(key, default))

    def drop(self, *keys: str) -> None:
        """Inputs the provider keeps to itself (Terraform-only settings, or the URL's parameters taken elsewhere)."""
        for key in keys:
            self.data.pop(key, None)

    def sub(self, key: str) -> Src | None:
        value = self.data.pop(key, None)
        return Src(value, self.ctx, f"{self.path}.{key}") if isinstance(value, dict) else None

    def subs(self, key: str) -> list[Src]:
        value = self.data.pop(key, None) or []
        return [Src(v, self.ctx, f"{self.path}.{key}[{i}]") for i, v in enumerate(value)]

    def same(self, body: dict[str, Any], *keys: str) -> dict[str, Any]:
        """Inputs sent under the same name."""
        return self.renamed(body, {k: k for k in keys})

    def renamed(self, body: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
        for key, api in names.items():
            value = self.pop(key)
            if value is not None:
                body[api] = value
        return body

    def done(self) -> None:
        for key in self.data:
            self.ctx.problems.append((f"{self.path}.{key}", "no translation for this input (tests/conformance)"))


Translator = Callable[[dict[str, Any], Context], list[Request]]
COMPUTE = "compute.beta"


def _compute(method: str, params: dict[str, Any], body: dict[str, Any], source: str, ctx: Context) -> list[Request]:
    return [Request(COMPUTE, f"compute.{method}", {"project": ctx.project, **params}, body, source)]


def _labels(s: Src, body: dict[str, Any], key: str = "labels") -> None:
    """tpgresource.ExpandEffectiveLabels: a labelled resource sends its `effective_labels`: the given labels, the
    provider's default labels (none configured here) and, on create, the attribution label
    (tpgresource/labels.go SetLabelsDiff, `add_terraform_attribution_label` true by default, CREATION_ONLY), which
    pulumi-gcp renames goog-pulumi-provisioned (pulumi-gcp patches/0006). It counts against the 64 labels."""
    body[key] = {**(s.pop(key) or {}), ATTRIBUTION_LABEL: "true"}


# --- compute -------------------------------------------------------------------------------------------------------


def firewall(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_firewall.go: resourceComputeFirewallCreate; expandComputeFirewallAllow (protocol ->
    IPProtocol)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    for key, api in (("allows", "allowed"), ("denies", "denied")):
        rules = []
        for r in s.subs(key):
            rules.append(r.renamed({}, {"protocol": "IPProtocol", "ports": "ports"}))
            r.done()
        if rules:
            body[api] = rules
    s.same(body, "description", "direction", "disabled", "priority", "network", "sourceRanges", "destinationRanges")
    s.same(body, "sourceTags", "targetTags", "sourceServiceAccounts", "targetServiceAccounts")
    s.drop("project")
    s.done()
    return _compute("firewalls.insert", {}, body, "resource_compute_firewall.go: resourceComputeFirewallCreate", ctx)


def global_address(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_global_address.go: resourceComputeGlobalAddressCreate (every field under its own name)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "address", "addressType", "purpose", "prefixLength", "network", "ipVersion")
    _labels(s, body)
    s.drop("project")
    s.done()
    return _compute("globalAddresses.insert", {}, body, "resource_compute_global_address.go", ctx)


def health_check(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_health_check.go: resourceComputeHealthCheckCreate; resourceComputeHealthCheckEncoder adds
    `type` for the check's kind (and port 80 to an HTTP check without one)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold")
    for key, kind in (("httpHealthCheck", "HTTP"), ("httpsHealthCheck", "HTTPS"), ("tcpHealthCheck", "TCP")):
        check = s.sub(key)
        if check is None:
            continue
        part = check.same({}, "host", "requestPath", "response", "port", "portName", "proxyHeader", "portSpecification")
        check.same(part, "request")
        check.done()
        body[key], body["type"] = part, kind
    s.drop("project")
    s.done()
    return _compute("healthChecks.insert", {}, body, "resource_compute_health_check.go", ctx)


def region_health_check(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_health_check.go: resourceComputeRegionHealthCheckCreate; the encoder adds `type` for
    the check's kind, as for the global health check (serve: the load balancer's check)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold")
    for key, kind in (("httpHealthCheck", "HTTP"), ("httpsHealthCheck", "HTTPS"), ("tcpHealthCheck", "TCP")):
        check = s.sub(key)
        if check is None:
            continue
        part = check.same({}, "host", "requestPath", "response", "port", "portName", "proxyHeader", "portSpecification")
        check.same(part, "request")
        check.done()
        body[key], body["type"] = part, kind
    region = s.pop("region")
    s.drop("project")
    s.done()
    source = "resource_compute_region_health_check.go"
    return _compute("regionHealthChecks.insert", {"region": region}, body, source, ctx)


def region_backend_service(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_backend_service.go: resourceComputeRegionBackendServiceCreate; health_checks (one
    reference in pulumi-gcp) -> healthChecks [..]; backend -> backends with group and balancingMode."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "loadBalancingScheme", "protocol", "network", "sessionAffinity", "timeoutSec")
    s.same(body, "portName")  # the Application Load Balancer's: the groups' named port
    # securityPolicy is copied into the insert body too, where compute.v1.json has it output only (ignored); "
    # security_policy isn't set by Create", so the create then POSTs .../setSecurityPolicy with it (sent under the
    # proto name security_policy, which proto3's JSON parsing takes as securityPolicy)
    policy = s.pop("securityPolicy")
    checks = s.pop("healthChecks")
    if checks is not None:
        body["healthChecks"] = checks if isinstance(checks, list) else [checks]
    backends = []
    for b in s.subs("backends"):
        backends.append(b.same({}, "group", "balancingMode", "description", "failover", "capacityScaler"))
        b.same(backends[-1], "maxRatePerInstance", "maxUtilization")
        b.done()
    if backends:
        body["backends"] = backends
    region = s.pop("region")
    s.drop("project")
    s.done()
    source = "resource_compute_region_backend_service.go"
    requests = _compute("regionBackendServices.insert", {"region": region}, body, source, ctx)
    if policy is not None:
        params = {"region": region, "backendService": body["name"]}
        requests += _compute("regionBackendServices.setSecurityPolicy", params, {"securityPolicy": policy}, source, ctx)
    return requests


def forwarding_rule(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_forwarding_rule.go: resourceComputeForwardingRuleCreate; ip_protocol -> IPProtocol, the labels
    set after creation through setLabels (sent here in the body, as the effective labels)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "loadBalancingScheme", "ports", "network", "subnetwork", "backendService", "allPorts")
    s.same(body, "portRange", "target", "networkTier")  # the Application Load Balancer's rule
    protocol = s.pop("ipProtocol")
    if protocol is not None:
        body["IPProtocol"] = protocol
    _labels(s, body)
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("forwardingRules.insert", {"region": region}, body, "resource_compute_forwarding_rule.go", ctx)


def network(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_network.go: resourceComputeNetworkCreate; `routing_mode` goes into `routingConfig`
    (expandComputeNetworkRoutingConfig)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "autoCreateSubnetworks", "mtu", "networkProfile")
    mode = s.pop("routingMode")
    if mode is not None:
        body["routingConfig"] = {"routingMode": mode}
    s.drop("project", "deleteDefaultRoutesOnCreate")
    s.done()
    return _compute("networks.insert", {}, body, "resource_compute_network.go: resourceComputeNetworkCreate", ctx)


def subnetwork(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_subnetwork.go: resourceComputeSubnetworkCreate; secondary_ip_range -> secondaryIpRanges."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "ipCidrRange", "network", "purpose", "role", "privateIpGoogleAccess", "stackType")
    ranges = []
    for r in s.subs("secondaryIpRanges"):
        ranges.append(r.same({}, "rangeName", "ipCidrRange"))
        r.done()
    if ranges:
        body["secondaryIpRanges"] = ranges
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("subnetworks.insert", {"region": region}, body, "resource_compute_subnetwork.go", ctx)


def router(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_router.go: resourceComputeRouterCreate."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "network")
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("routers.insert", {"region": region}, body, "resource_compute_router.go", ctx)


def router_nat(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_router_nat.go: resourceComputeRouterNatCreate PATCHes the router with the NAT appended to
    its `nats` (resourceComputeRouterNatPatchCreateEncoder); subnetwork -> subnetworks."""
    s = Src(i, ctx)
    nat: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(nat, "natIpAllocateOption", "sourceSubnetworkIpRangesToNat", "natIps", "minPortsPerVm", "maxPortsPerVm")
    subnets = []
    for sub in s.subs("subnetworks"):
        subnets.append(sub.renamed({}, {"name": "name", "sourceIpRangesToNats": "sourceIpRangesToNat"}))
        sub.done()
    if subnets:
        nat["subnetworks"] = subnets
    log = s.sub("logConfig")
    if log is not None:
        nat["logConfig"] = log.same({}, "enable", "filter")
        log.done()
    params = {"region": s.pop("region"), "router": s.pop("router")}
    s.drop("project")
    s.done()
    return _compute("routers.patch", params, {"nats": [nat]}, "resource_compute_router_nat.go", ctx)


def resource_policy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_resource_policy.go: resourceComputeResourcePolicyCreate (workload_policy, group_placement_
    policy under their own names)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description")
    for key, fields in (
        ("workloadPolicy", ("type", "maxTopologyDistance", "acceleratorTopology", "acceleratorTopologyMode")),
        ("groupPlacementPolicy", ("vmCount", "availabilityDomainCount", "collocation", "maxDistance", "gpuTopology")),
    ):
        part = s.sub(key)
        if part is not None:
            body[key] = part.same({}, *fields)
            part.done()
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("resourcePolicies.insert", {"region": region}, body, "resource_compute_resource_policy.go", ctx)


def autoscaler(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_autoscaler.go: resourceComputeAutoscalerCreate; expandComputeAutoscalerAutoscalingPolicy
    (min_replicas -> minNumReplicas, metric -> customMetricUtilizations with name -> metric, scaling_schedules
    -> a map keyed by the schedule's name)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "target")
    policy = s.sub("autoscalingPolicy")
    if policy is not None:
        p = policy.renamed({}, {"minReplicas": "minNumReplicas", "maxReplicas": "maxNumReplicas"})
        policy.renamed(p, {"cooldownPeriod": "coolDownPeriodSec", "mode": "mode"})
        metrics = []
        for m in policy.subs("metrics"):
            metrics.append(m.renamed({}, {"name": "metric", "singleInstanceAssignment": "singleInstanceAssignment"}))
            m.renamed(metrics[-1], {"target": "utilizationTarget", "type": "utilizationTargetType", "filter": "filter"})
            m.done()
        if metrics:
            p["customMetricUtilizations"] = metrics
        cpu = policy.sub("cpuUtilization")
        if cpu is not None:
            p["cpuUtilization"] = cpu.renamed(
                {}, {"target": "utilizationTarget", "predictiveMethod": "predictiveMethod"}
            )
            cpu.done()
        balancing = policy.sub("loadBalancingUtilization")
        if balancing is not None:  # expandComputeAutoscalerAutoscalingPolicyLoadBalancingUtilization
            p["loadBalancingUtilization"] = balancing.renamed({}, {"target": "utilizationTarget"})
            balancing.done()
        control = policy.sub("scaleInControl")
        if control is not None:
            p["scaleInControl"] = control.same({}, "timeWindowSec")
            most = control.sub("maxScaledInReplicas")
            if most is not None:
                p["scaleInControl"]["maxScaledInReplicas"] = most.same({}, "fixed", "percent")
                most.done()
            control.done()
        schedules = {}
        for sched in policy.subs("scalingSchedules"):
            schedules[sched.pop("name")] = sched.same(
                {}, "minRequiredReplicas", "schedule", "timeZone", "durationSec", "disabled", "description"
            )
            sched.done()
        if schedules:
            p["scalingSchedules"] = schedules
        policy.done()
        body["autoscalingPolicy"] = p
    zone = s.pop("zone")
    s.drop("project")
    s.done()
    return _compute("autoscalers.insert", {"zone": zone}, body, "resource_compute_autoscaler.go", ctx)


def _scopes(scopes: list[str]) -> list[str]:
    # tpgresource.CanonicalizeServiceScopes: a short alias becomes the full scope URL
    return [s if "/" in s or unknown(s) else SCOPE_PREFIX + s for s in scopes]


def _metadata(s: Src) -> dict[str, Any] | None:
    # metadata.go: resourceInstanceMetadata: the map as sorted {key, value} items
    meta = s.pop("metadata") or {}
    script = s.pop("metadataStartupScript")
    if script:
        meta["startup-script"] = script
    return {"items": [{"key": k, "value": meta[k]} for k in sorted(meta)]} if meta else None


def _interfaces(s: Src) -> list[dict[str, Any]]:
    # compute_instance_helpers.go: expandNetworkInterfaces; expandAccessConfigs adds type ONE_TO_ONE_NAT
    out = []
    for nic in s.subs("networkInterfaces"):
        iface = nic.renamed({}, {"networkIp": "networkIP"})
        nic.same(iface, "network", "subnetwork", "nicType", "stackType", "queueCount")
        configs = []
        for ac in nic.subs("accessConfigs"):
            configs.append(
                {"type": "ONE_TO_ONE_NAT", **ac.renamed({}, {"natIp": "natIP", "networkTier": "networkTier"})}
            )
            ac.done()
        if configs:
            iface["accessConfigs"] = configs
        nic.done()
        out.append(iface)
    return out


def _service_accounts(s: Src) -> list[dict[str, Any]]:
    # compute_instance_helpers.go: expandServiceAccounts (email "default" when empty, scopes canonicalised)
    sa = s.sub("serviceAccount")
    if sa is None:
        return []
    out = {"email": sa.pop("email") or "default", "scopes": _scopes(sa.pop("scopes") or [])}
    sa.done()
    return [out]


def _shielded(s: Src) -> dict[str, Any] | None:
    # expandShieldedVmConfigs: all three sent (ForceSendFields)
    sic = s.sub("shieldedInstanceConfig")
    if sic is None:
        return None
    out = {k: bool(sic.pop(k)) for k in ("enableSecureBoot", "enableVtpm", "enableIntegrityMonitoring")}
    sic.done()
    return out


def _scheduling(s: Src, template: bool) -> dict[str, Any] | None:
    # compute_instance_helpers.go: expandScheduling; resource_compute_instance_template.go:
    # expandResourceComputeInstanceTemplateScheduling (no block: onHostMaintenance MIGRATE; preemptible without
    # onHostMaintenance: TERMINATE; max_run_duration seconds as a string)
    sch = s.sub("scheduling")
    if sch is None:
        return {"onHostMaintenance": "MIGRATE"} if template else {"automaticRestart": True}
    out = sch.same({}, "automaticRestart", "preemptible", "onHostMaintenance", "provisioningModel")
    sch.same(out, "instanceTerminationAction", "minNodeCpus", "availabilityDomain", "terminationTime")
    duration = sch.sub("maxRunDuration")
    if duration is not None:
        out["maxRunDuration"] = {
            k: str(v) if k == "seconds" else v for k, v in duration.same({}, "seconds", "nanos").items()
        }
        duration.done()
    if out.get("preemptible") and "onHostMaintenance" not in out:
        out["onHostMaintenance"] = "TERMINATE"
    sch.done()
    return out


def _accelerators(s: Src) -> list[dict[str, Any]]:
    out = []
    for acc in s.subs("guestAccelerators"):
        if acc.data.get("count"):
            out.append(acc.renamed({}, {"count": "acceleratorCount", "type": "acceleratorType"}))
        acc.drop("count", "type")
        acc.done()
    return out


def _reservation(s: Src) -> dict[str, Any] | None:
    # compute_instance_helpers.go: expandReservationAffinity (type -> consumeReservationType)
    ra = s.sub("reservationAffinity")
    if ra is None:
        return None
    out: dict[str, Any] = {"consumeReservationType": ra.pop("type")}
    spec = ra.sub("specificReservation")
    if spec is not None:
        out.update(spec.same({}, "key", "values"))
        spec.done()
    ra.done()
    return out


def instance_template(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_instance_template.go: resourceComputeInstanceTemplateCreate; buildDisks (disk_type ->
    initializeParams.diskType, pd-standard when unset; source_image -> sourceImage; kms_key_self_link ->
    diskEncryptionKey.kmsKeyName), expandInstanceTemplateGuestAccelerators (bare names)."""
    s = Src(i, ctx)
    props: dict[str, Any] = s.renamed({}, {"machineType": "machineType", "instanceDescription": "description"})
    s.same(props, "canIpForward", "minCpuPlatform", "keyRevocationActionType")
    disks = []
    for n, d in enumerate(s.subs("disks")):
        size = d.data.get("diskSizeGb")  # buildDisks: sent on the disk and in its initializeParams
        disk: dict[str, Any] = {"boot": d.pop("boot", n == 0), "autoDelete": d.pop("autoDelete", True)}
        d.same(disk, "deviceName", "interface", "mode", "type")
        key = d.sub("diskEncryptionKey")
        if key is not None:
            disk["diskEncryptionKey"] = key.renamed({}, {"kmsKeySelfLink": "kmsKeyName"})
            key.done()
        if d.data.get("source"):
            disk["source"] = d.pop("source")
        else:
            init: dict[str, Any] = {"diskType": d.pop("diskType") or "pd-standard"}
            d.renamed(init, {"diskSizeGb": "diskSizeGb", "diskName": "diskName", "sourceImage": "sourceImage"})
            d.same(init, "provisionedIops", "provisionedThroughput", "labels", "resourcePolicies")
            disk["initializeParams"] = init
        if size is not None:
            disk["diskSizeGb"] = size
        d.done()
        disks.append(disk)
    props["disks"] = disks
    props["networkInterfaces"] = _interfaces(s)
    if accels := _accelerators(s):
        props["guestAccelerators"] = accels
    props["scheduling"] = _scheduling(s, template=True)
    if accounts := _service_accounts(s):
        props["serviceAccounts"] = accounts
    if tags := s.pop("tags"):
        props["tags"] = {"items": tags}
    if (shielded := _shielded(s)) is not None:
        props["shieldedInstanceConfig"] = shielded
    if (affinity := _reservation(s)) is not None:
        props["reservationAffinity"] = affinity
    if policies := s.pop("resourcePolicies"):
        # expandInstanceTemplateResourcePolicies: names, not links
        props["resourcePolicies"] = [p if unknown(p) else p.rsplit("/", 1)[-1] for p in policies]
    _labels(s, props)
    if (meta := _metadata(s)) is not None:
        props["metadata"] = meta
    body = {"name": ctx.name(s.pop("name")), "properties": props}
    s.same(body, "description")
    s.drop("project", "namePrefix")
    s.done()
    return _compute("instanceTemplates.insert", {}, body, "resource_compute_instance_template.go", ctx)


def _boot_disk(s: Src, disk_types: str) -> dict[str, Any] | None:
    # resource_compute_instance.go: expandBootDisk (size -> diskSizeGb as a string; image -> sourceImage;
    # type -> diskType, readDiskType(...).RelativeLink(); kms_key_self_link -> diskEncryptionKey.kmsKeyName)
    boot = s.sub("bootDisk")
    if boot is None:
        return None
    disk: dict[str, Any] = {"autoDelete": boot.pop("autoDelete", True), "boot": True}
    boot.same(disk, "deviceName", "interface", "mode")
    if (kms := boot.pop("kmsKeySelfLink")) is not None:
        disk["diskEncryptionKey"] = {"kmsKeyName": kms}
    init = boot.sub("initializeParams")
    if init is not None:
        params: dict[str, Any] = {}
        if (size := init.pop("size")) is not None:
            params["diskSizeGb"] = str(size)
        if (kind := init.pop("type")) is not None:
            params["diskType"] = kind if "/" in kind else disk_types + kind
        init.renamed(params, {"image": "sourceImage", "labels": "labels"})
        init.same(params, "resourcePolicies")
        init.done()
        disk["initializeParams"] = params
    boot.done()
    return disk


def instance(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_instance.go: resourceComputeInstanceCreate; expandComputeInstance, expandBootDisk,
    expandScheduling, resourceInstanceMetadata."""
    s = Src(i, ctx)
    zone = s.pop("zone")
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "canIpForward", "deletionProtection", "hostname", "minCpuPlatform")
    if (machine := s.pop("machineType")) is not None:  # ParseMachineTypesFieldValue(...).RelativeLink()
        body["machineType"] = f"projects/{ctx.project}/zones/{zone}/machineTypes/{machine}"
    disk = _boot_disk(s, f"projects/{ctx.project}/zones/{zone}/diskTypes/")
    body["disks"] = [disk] if disk else []
    body["networkInterfaces"] = _interfaces(s)
    if accels := _accelerators(s):
        body["guestAccelerators"] = accels
    if accounts := _service_accounts(s):
        body["serviceAccounts"] = accounts
    if tags := s.pop("tags"):
        body["tags"] = {"items": tags}
    if (shielded := _shielded(s)) is not None:
        body["shieldedInstanceConfig"] = shielded
    if (affinity := _reservation(s)) is not None:
        body["reservationAffinity"] = affinity
    body["scheduling"] = _scheduling(s, template=False)
    _labels(s, body)
    if (meta := _metadata(s)) is not None:
        body["metadata"] = meta
    s.drop("project", "allowStoppingForUpdate", "desiredStatus")
    s.done()
    return _compute("instances.insert", {"zone": zone}, body, "resource_compute_instance.go", ctx)


def instance_from_template(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_instance_from_template.go: resourceComputeInstanceFromTemplateCreate: instances.insert with
    `sourceInstanceTemplate` (ConvertToUniqueIdWhenPresent); the body carries what is set here over the template."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "machineType", "hostname")
    _labels(s, body)
    if (meta := _metadata(s)) is not None:
        body["metadata"] = meta
    params = {"zone": s.pop("zone"), "sourceInstanceTemplate": s.pop("sourceInstanceTemplate")}
    s.drop("project")
    s.done()
    return _compute("instances.insert", params, body, "resource_compute_instance_from_template.go", ctx)


def instance_group_manager(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_instance_group_manager.go: resourceComputeInstanceGroupManagerCreate (version ->
    versions, expandAutoHealingPoliciesV2 -> a list, expandResourcePoliciesV2)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "baseInstanceName", "targetSize", "targetPools", "listManagedInstancesResults")
    versions = []
    for v in s.subs("versions"):
        versions.append(v.same({}, "name", "instanceTemplate"))
        size = v.sub("targetSize")
        if size is not None:
            versions[-1]["targetSize"] = size.same({}, "fixed", "percent")
            size.done()
        v.done()
    body["versions"] = versions
    healing = s.sub("autoHealingPolicies")
    if healing is not None:
        body["autoHealingPolicies"] = [healing.same({}, "healthCheck", "initialDelaySec")]
        healing.done()
    policies = s.sub("resourcePolicies")
    if policies is not None:
        body["resourcePolicies"] = policies.same({}, "workloadPolicy")
        policies.done()
    update = s.sub("updatePolicy")
    if update is not None:
        # expandUpdatePolicy: max_surge_fixed / _percent -> maxSurge {fixed | percent}, the same for maxUnavailable
        policy = update.same(
            {}, "type", "minimalAction", "mostDisruptiveAllowedAction", "replacementMethod", "minReadySec"
        )
        for key in ("maxSurge", "maxUnavailable"):
            fixed, percent = update.pop(f"{key}Fixed"), update.pop(f"{key}Percent")
            if fixed is not None:
                policy[key] = {"fixed": fixed}
            elif percent is not None:
                policy[key] = {"percent": percent}
        body["updatePolicy"] = policy
        update.done()
    zone = s.pop("zone")
    s.drop("project", "waitForInstances", "waitForInstancesStatus")
    s.done()
    return _compute(
        "instanceGroupManagers.insert", {"zone": zone}, body, "resource_compute_instance_group_manager.go", ctx
    )
