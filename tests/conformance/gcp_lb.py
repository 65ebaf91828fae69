"""Registered inputs of serve's regional Application Load Balancer on GCP -> the REST requests the provider sends.

Read in hashicorp/terraform-provider-google-beta @93c65b2 (Aug 2026), google-beta/services/compute: each
resourceCompute<Type>Create builds `obj` from the expanded inputs under the API's names and POSTs it to the region's
collection (urlMaps, targetHttpsProxies, targetHttpProxies, sslPolicies, securityPolicies). As in gcp_requests.py,
every input is taken or reported.
"""

from __future__ import annotations

from typing import Any

from .gcp_requests import Context, Request, Src, _compute

CERTIFICATE_MANAGER = "https://certificatemanager.googleapis.com/v1/"


def region_url_map(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_url_map.go: resourceComputeRegionUrlMapCreate (default_service -> defaultService)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "defaultService")
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("regionUrlMaps.insert", {"region": region}, body, "resource_compute_region_url_map.go", ctx)


def _certificate_manager(value: str) -> str:
    """expandComputeRegionTargetHttpsProxyCertificateManagerCertificates: a full URL (// or https://) is sent as it
    is; the id form projects/P/locations/L/certificates/N gets the https://certificatemanager.googleapis.com/v1/
    prefix."""
    return value if value.startswith(("//", "https://")) else CERTIFICATE_MANAGER + value


def region_target_https_proxy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_target_https_proxy.go: resourceComputeRegionTargetHttpsProxyCreate; the encoder
    renames certificateManagerCertificates to sslCertificates ("should not be included in the API request") and
    sends serverTlsPolicy null when unset (left out here: null is no value)."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "urlMap", "sslCertificates", "sslPolicy", "httpKeepAliveTimeoutSec")
    manager = s.pop("certificateManagerCertificates")
    if manager:
        body["sslCertificates"] = [_certificate_manager(str(c)) for c in manager]
    region = s.pop("region")
    s.drop("project")
    s.done()
    source = "resource_compute_region_target_https_proxy.go"
    return _compute("regionTargetHttpsProxies.insert", {"region": region}, body, source, ctx)


def region_target_http_proxy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_target_http_proxy.go: resourceComputeRegionTargetHttpProxyCreate."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "urlMap", "httpKeepAliveTimeoutSec")
    region = s.pop("region")
    s.drop("project")
    s.done()
    source = "resource_compute_region_target_http_proxy.go"
    return _compute("regionTargetHttpProxies.insert", {"region": region}, body, source, ctx)


def region_ssl_policy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_ssl_policy.go: resourceComputeRegionSslPolicyCreate."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "profile", "minTlsVersion", "customFeatures")
    region = s.pop("region")
    s.drop("project")
    s.done()
    return _compute("regionSslPolicies.insert", {"region": region}, body, "resource_compute_region_ssl_policy.go", ctx)


def region_security_policy(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_region_security_policy.go: resourceComputeRegionSecurityPolicyCreate;
    expandComputeRegionSecurityPolicyRules (action, priority, description, preview, match {versionedExpr, config
    {srcIpRanges}})."""
    s = Src(i, ctx)
    body: dict[str, Any] = {"name": ctx.name(s.pop("name"))}
    s.same(body, "description", "type")
    rules = []
    for r in s.subs("rules"):
        rule = r.same({}, "action", "priority", "description", "preview")
        match = r.sub("match")
        if match is not None:
            sent = match.same({}, "versionedExpr")
            config = match.sub("config")
            if config is not None:
                sent["config"] = config.same({}, "srcIpRanges")
                config.done()
            match.done()
            rule["match"] = sent
        r.done()
        rules.append(rule)
    if rules:
        body["rules"] = rules
    region = s.pop("region")
    s.drop("project")
    s.done()
    source = "resource_compute_region_security_policy.go"
    return _compute("regionSecurityPolicies.insert", {"region": region}, body, source, ctx)


def instance_group_named_port(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resource_compute_instance_group_named_port.go: resourceComputeInstanceGroupNamedPortCreate: the group parsed
    from its URL (ParseInstanceGroupFieldValue: name and zone), then POST .../instanceGroups/{group}/setNamedPorts
    with the group's named ports and this one appended (PatchCreateEncoder; a new group has none)."""
    s = Src(i, ctx)
    group = str(s.pop("group"))
    port = s.same({}, "name", "port")
    zone = s.pop("zone")
    s.drop("project")
    s.done()
    params = {"zone": zone, "instanceGroup": group.rsplit("/", 1)[-1]}
    source = "resource_compute_instance_group_named_port.go"
    return _compute("instanceGroups.setNamedPorts", params, {"namedPorts": [port]}, source, ctx)


LB_TRANSLATORS = {
    "gcp:compute/instanceGroupNamedPort:InstanceGroupNamedPort": instance_group_named_port,
    "gcp:compute/regionUrlMap:RegionUrlMap": region_url_map,
    "gcp:compute/regionTargetHttpsProxy:RegionTargetHttpsProxy": region_target_https_proxy,
    "gcp:compute/regionTargetHttpProxy:RegionTargetHttpProxy": region_target_http_proxy,
    "gcp:compute/regionSslPolicy:RegionSslPolicy": region_ssl_policy,
    "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy": region_security_policy,
}
