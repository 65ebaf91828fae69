"""`serve:` on Alibaba Cloud (pure): an intranet Classic Load Balancer in the node vSwitch (an internet-facing one with
`public`, its listener admitting `allowedCidrs` only through an access control list), a vServer group the ESS scaling
group is attached to, one listener with its health check on the serving port, and the node security group's rules for
CLB's health checks and the clients (`catalog/serving/alicloud.yaml`); `components/alicloud/serve.py` maps this onto
pulumi-alicloud. The spec refuses what is not built here (request-rate scaling)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...catalog import serving
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec

# Every node gets the same weight in the vServer group (the attachment requires one): equal weights balance evenly
NODE_WEIGHT = 100
# "The maximum number of entries per access control list is 300" (pulumi-alicloud slb/acl.py; the provider's schema
# entry_list MaxItems 300, resource_alicloud_slb_acl.go, which adds them 50 at a time)
ACL_ENTRIES = 300


@dataclass(frozen=True)
class AliServe:
    name: str  # the load balancer's and the vServer group's name
    listener_protocol: Literal["tcp", "https"]
    listener_port: int
    certificate: str | None  # the SLB server certificate id (https)
    tls_cipher_policy: str | None
    port: int  # the nodes' serving port (the vServer group's backend port)
    health_type: Literal["http", "tcp"]
    health_path: str | None
    health_http_code: str | None
    interval_seconds: int
    timeout_seconds: int
    healthy_threshold: int
    unhealthy_threshold: int
    probe_ranges: tuple[str, ...]  # CLB's health checks (and the HTTPS listener's traffic), admitted on `port` only
    clients: str  # the VPC's range, admitted on `port`
    idle_timeout_seconds: int | None  # the TCP listener's established_timeout; None: CLB's default (900 s)
    scheme: Literal["http", "https", "tcp"]  # what a client speaks to the endpoint
    public: bool = False  # an internet CLB, its listener's access control list a whitelist of `allowed_cidrs`
    allowed_cidrs: tuple[str, ...] = ()
    weight: int = NODE_WEIGHT

    @property
    def public_clients(self) -> tuple[str, ...]:
        """The internet ranges the node security group admits on the serving port: a TCP listener passes the
        clients' own addresses (catalog/serving/alicloud.yaml clientIpSource); an HTTPS listener is a proxy, whose
        addresses the health checks' range already admits."""
        return self.allowed_cidrs if self.public and self.listener_protocol == "tcp" else ()

    def check_command(self, address: str) -> str:
        """The command that checks the endpoint from inside the VPC (the login node, a node, a VPN)."""
        if self.scheme == "tcp":
            return f"nc -zv {address} {self.listener_port}"
        path = self.health_path or "/"
        if self.scheme == "https":
            # the certificate names the service's domain, not the load balancer's address
            return f"curl -fsS --connect-to ::{address}: https://<a name on the certificate>{path}"
        return f"curl -fsS http://{address}:{self.listener_port}{path}"

    @property
    def reach(self) -> str:
        if self.public:
            return f"the internet, from {', '.join(self.allowed_cidrs)} only (the listener's access control list)"
        return f"inside the VPC ({self.clients}): the login node, a node, or a VPN into the VPC"


def plan(spec: ClusterSpec) -> AliServe | None:
    serve = spec.serve
    if serve is None:
        return None
    if spec.network.existing is not None:
        refuse(
            [
                ConfigError(
                    f"{CLUSTER_KEY}.serve",
                    "not with network.existing on alicloud yet: the node security group admits the VPC's range on the "
                    "serving port, and an existing VPC's range is not read here; use a network this stack creates",
                )
            ]
        )
    if serve.public and len(serve.allowed_cidrs) > ACL_ENTRIES:
        refuse(
            [
                ConfigError(
                    f"{CLUSTER_KEY}.serve.allowedCidrs",
                    f"{len(serve.allowed_cidrs)} ranges, but an SLB access control list holds at most {ACL_ENTRIES} "
                    "entries (pulumi-alicloud slb/acl.py); merge them into wider ranges",
                )
            ]
        )
    offer = serving.offer("alicloud")
    # catalog/serving/alicloud.yaml states the HTTPS port and the health check's timeout (the spec refuses serve
    # where the cloud has no file)
    assert offer is not None and offer.tlsPort is not None and offer.timeoutSeconds is not None
    tls = serve.certificate is not None
    http = serve.protocol == "http"
    hc = offer.healthCheck
    return AliServe(
        name=f"{spec.name}-serve",
        listener_protocol="https" if tls else "tcp",
        listener_port=offer.tlsPort if tls else serve.port,
        certificate=serve.certificate,
        tls_cipher_policy=offer.tlsPolicy if tls else None,
        port=serve.port,
        health_type="http" if http else "tcp",
        health_path=serve.health_path if http else None,
        health_http_code=hc.matcher if http else None,
        interval_seconds=hc.intervalSeconds,
        timeout_seconds=offer.timeoutSeconds,
        healthy_threshold=hc.healthyThreshold,
        unhealthy_threshold=hc.unhealthyThreshold,
        probe_ranges=offer.probeRanges,
        clients=spec.network.cidr,
        idle_timeout_seconds=serve.idle_timeout_seconds,
        scheme=("https" if tls else "http") if http else "tcp",
        public=serve.public,
        allowed_cidrs=serve.allowed_cidrs,
    )
