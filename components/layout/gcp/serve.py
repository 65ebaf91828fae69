"""`serve:` on GCP (pure). Private by default: a regional internal passthrough Network Load Balancer with the managed
instance group as its backend, a regional health check on the serving port and the firewall rule for Google's
health-check probers. With a certificate, `public: true` or `requestsPerNode`: a regional Application Load Balancer
instead (external when public, internal otherwise): a proxy-only subnet, a region URL map and target HTTP(S) proxy,
a region backend service on the MIG (RATE balancing with `requestsPerNode`), the firewall rule for the proxies and,
when public, a Cloud Armor policy that admits `allowedCidrs` only (`catalog/serving/gcp.yaml`).
`components/gcp/serve.py` maps this onto pulumi-gcp."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ... import placeholders
from ...catalog import serving
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec
from .network import GPU_SUBNET_BITS, buddy_block

K = f"{CLUSTER_KEY}.serve"
# compute.v1.json TargetHttpsProxy.sslCertificates: a region SSL certificate, or a Certificate Manager certificate
SSL_CERTIFICATE = re.compile(
    r"^(https://www\.googleapis\.com/compute/(v1|beta)/)?projects/[^/]+/regions/([^/]+)/sslCertificates/[^/]+$"
)
MANAGER_CERTIFICATE = re.compile(
    r"^(//certificatemanager\.googleapis\.com/)?projects/[^/]+/locations/([^/]+)/certificates/[^/]+$"
)


@dataclass(frozen=True)
class ApplicationLb:
    """The regional Application Load Balancer (catalog/serving/gcp.yaml proxy)."""

    scheme: Literal["EXTERNAL_MANAGED", "INTERNAL_MANAGED"]
    service: str  # the load balancer kind, as Google names it
    proxy_subnet: str  # the proxy-only subnet's range: where the nodes' requests come from
    listener_port: int  # 443 with a certificate, else the serving port
    ssl_certificates: tuple[str, ...]  # a region SSL certificate
    manager_certificates: tuple[str, ...]  # or a Certificate Manager certificate
    ssl_profile: str | None  # the region SSL policy (with a certificate)
    min_tls_version: str | None
    network_tier: str | None  # the external forwarding rule's tier (None: internal)
    client_rules: tuple[tuple[str, ...], ...]  # public: the Cloud Armor allow rules, at most N ranges each
    max_rate_per_instance: int | None  # requestsPerNode: the RATE balancing mode's target

    @property
    def tls(self) -> bool:
        return bool(self.ssl_certificates or self.manager_certificates)


@dataclass(frozen=True)
class GcpServe:
    region: str
    port: int
    protocol: Literal["http", "tcp"]
    health_path: str | None  # http: the path the regional health check asks (200 only)
    check_interval_sec: int
    timeout_sec: int
    healthy_threshold: int
    unhealthy_threshold: int
    probe_ranges: tuple[str, ...]  # Google's health-check probers, admitted to `port` only
    clients: str  # the host network's range: the clients a private endpoint takes (the host rule admits it already)
    application: ApplicationLb | None = None  # None: the internal passthrough Network Load Balancer
    public_clients: tuple[str, ...] = ()  # public: allowedCidrs

    @property
    def internal(self) -> bool:
        return self.application is None or self.application.scheme == "INTERNAL_MANAGED"

    @property
    def scheme(self) -> str:
        """What a client speaks to the endpoint."""
        if self.protocol == "tcp":
            return "tcp"
        return "https" if self.application is not None and self.application.tls else "http"

    @property
    def listener_port(self) -> int:
        return self.application.listener_port if self.application is not None else self.port

    def check_command(self, address: str) -> str:
        if self.protocol == "tcp":
            return f"nc -zv {address} {self.port}"
        path = self.health_path or "/"
        if self.scheme == "https":
            # the certificate names the service's domain, not the address: ask for the name, connect to the address
            port = "" if self.listener_port == 443 else f":{self.listener_port}"
            return f"curl -fsS --connect-to ::{address}: https://<a name on the certificate>{port}{path}"
        return f"curl -fsS http://{address}:{self.listener_port}{path}"

    @property
    def reach(self) -> str:
        if not self.internal:
            return f"a client in {', '.join(self.public_clients)}"
        return f"inside the host VPC ({self.clients}): a node (the access command) or the login node"


def proxy_subnet(cidr: str) -> str:
    """The proxy-only subnet: the last sixteenth of the buddy block (the GPU subnets take the first nine at most)."""
    *_, last = buddy_block(cidr).subnets(prefixlen_diff=GPU_SUBNET_BITS)
    return str(last)


def _certificate(spec: ClusterSpec, value: str) -> tuple[tuple[str, ...], tuple[str, ...]] | ConfigError:
    """(region SSL certificates, Certificate Manager certificates) for `serve.certificate`, or the keyed refusal."""
    if placeholders.referenced(value):  # an output of another resource: a region SSL certificate's id
        return (value,), ()
    ssl, manager = SSL_CERTIFICATE.match(value), MANAGER_CERTIFICATE.match(value)
    match = ssl or manager
    if match is None:
        return ConfigError(
            f"{K}.certificate",
            f"{value!r} is not a certificate id GCP's load balancer takes; give a region SSL certificate "
            f"projects/PROJECT/regions/{spec.region}/sslCertificates/NAME or a Certificate Manager certificate "
            f"projects/PROJECT/locations/{spec.region}/certificates/NAME",
        )
    where = match.group(3) if ssl else match.group(2)
    if where != spec.region:
        return ConfigError(
            f"{K}.certificate",
            f"in {where}; the regional load balancer takes a certificate of its own region {spec.region}",
        )
    if ssl:
        return (value,), ()
    full = value if value.startswith("//") else f"//certificatemanager.googleapis.com/{value}"
    return (), (full,)


def _problems(spec: ClusterSpec, max_prefix: int) -> Iterator[ConfigError]:
    if spec.network.existing is not None:
        yield ConfigError(
            K,
            "public, a certificate or requestsPerNode with network.existing: the regional Application Load Balancer "
            "needs the network's one active proxy-only subnet in the region, which the existing network may "
            "already have, and its free ranges are not known here; use a network this stack creates, or a private "
            "endpoint without them",
        )
        return
    size = ipaddress.IPv4Network(proxy_subnet(spec.network.cidr)).prefixlen
    if size > max_prefix:
        yield ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves a /{size} for the load balancer's proxy-only subnet (a sixteenth of the "
            f"block beside it); it needs /{max_prefix} or larger: use /{max_prefix - GPU_SUBNET_BITS} or larger",
        )


def _application(spec: ClusterSpec) -> ApplicationLb:
    serve = spec.serve
    offer = serving.offer("gcp")
    assert serve is not None and offer is not None and offer.proxy is not None and offer.tlsPort is not None
    proxy = offer.proxy
    refuse(_problems(spec, proxy.proxySubnetMaxPrefix))
    certs: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    if serve.certificate is not None:
        found = _certificate(spec, serve.certificate)
        if isinstance(found, ConfigError):
            refuse([found])
        else:
            certs = found
    tls = serve.certificate is not None
    per = proxy.clientRangesPerRule
    ranges = serve.allowed_cidrs
    return ApplicationLb(
        scheme="EXTERNAL_MANAGED" if serve.public else "INTERNAL_MANAGED",
        service=proxy.externalService if serve.public else proxy.internalService,
        proxy_subnet=proxy_subnet(spec.network.cidr),
        listener_port=offer.tlsPort if tls else serve.port,
        ssl_certificates=certs[0],
        manager_certificates=certs[1],
        ssl_profile=proxy.sslPolicy.profile if tls else None,
        min_tls_version=proxy.sslPolicy.minTlsVersion if tls else None,
        network_tier=proxy.networkTier if serve.public else None,
        client_rules=tuple(ranges[i : i + per] for i in range(0, len(ranges), per)) if serve.public else (),
        max_rate_per_instance=serve.requests_per_node,
    )


def plan(spec: ClusterSpec) -> GcpServe | None:
    serve = spec.serve
    if serve is None:
        return None
    offer = serving.offer("gcp")
    # catalog/serving/gcp.yaml states the health check's own timeout (the spec refuses serve where there is no file)
    assert offer is not None and offer.timeoutSeconds is not None
    hc = offer.healthCheck
    proxied = serving.uses_proxy(offer, serve.public, serve.certificate, serve.requests_per_node)
    return GcpServe(
        region=spec.region,
        port=serve.port,
        protocol=serve.protocol,
        health_path=serve.health_path,
        check_interval_sec=hc.intervalSeconds,
        timeout_sec=offer.timeoutSeconds,
        healthy_threshold=hc.healthyThreshold,
        unhealthy_threshold=hc.unhealthyThreshold,
        probe_ranges=offer.probeRanges,
        clients=spec.network.cidr,
        application=_application(spec) if proxied else None,
        public_clients=serve.allowed_cidrs if serve.public else (),
    )
