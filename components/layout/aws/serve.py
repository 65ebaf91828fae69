"""`serve:` on AWS (pure): a Network Load Balancer in front of the Auto Scaling group, as decided before anything is
registered; with `requestsPerNode` an Application Load Balancer instead, with a second subnet in another zone and a
target-tracking policy on its requests per target. Why each kind, the health-check settings and the TLS policy are
data (`catalog/serving/aws.yaml`); `components/aws/serve.py` maps this onto pulumi-aws."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ...catalog import serving
from ...errors import CLUSTER_KEY, ConfigError, refuse
from ...spec import ClusterSpec

K = f"{CLUSTER_KEY}.serve"
ListenerProtocol = Literal["TCP", "TLS", "HTTP", "HTTPS"]


@dataclass(frozen=True)
class HealthCheck:
    protocol: Literal["HTTP", "TCP"]
    path: str | None  # HTTP only
    interval_seconds: int
    healthy_threshold: int
    unhealthy_threshold: int
    matcher: str | None  # HTTP only: the status codes of a healthy node


@dataclass(frozen=True)
class ApplicationLb:
    """requestsPerNode: the Application Load Balancer's second zone and the policy on its requests per target
    (catalog/serving/aws.yaml application)."""

    subnet_block: str  # the VPC's secondary block, all of it the second zone's subnet
    idle_timeout_seconds: int | None  # the load balancer's; None: its default (60 s)
    metric: str  # ALBRequestCountPerTarget
    target_value: float  # requests per target per minute: requestsPerNode x 60
    warmup_seconds: int | None  # the policy's estimated instance warm-up (scaling.scaleInCooldownSeconds)


@dataclass(frozen=True)
class AwsServe:
    load_balancer_type: str  # network, or application with requestsPerNode (catalog/serving/aws.yaml why)
    internal: bool
    subnet: Literal["nodes", "public"]  # the cluster subnet the load balancer's node sits in
    listener_protocol: ListenerProtocol
    listener_port: int
    certificate: str | None
    ssl_policy: str | None
    target_port: int  # the nodes' serving port
    health: HealthCheck
    client_cidrs: tuple[str, ...] | None  # who may reach the endpoint; None: the existing VPC's range, read at deploy
    preserve_client_ip: bool  # off: a node may call the endpoint (catalog/serving/aws.yaml clientIpPreserved)
    idle_timeout_seconds: int | None  # the TCP listener's; None: the load balancer's default (350 s)
    scheme: Literal["http", "https", "tcp"]  # what a client speaks to the endpoint
    name_max: int  # the load balancer's and target group's name limit (catalog/serving/aws.yaml nameMaxLength)
    name_prefix: str  # used instead of Pulumi's autoname when that would be longer than name_max
    application: ApplicationLb | None = None  # requestsPerNode: the Application Load Balancer's parts

    def name_args(self, logical: str) -> dict[str, str]:
        """`name_prefix` when Pulumi's autoname of `logical` (it and `-` and 7 random characters) would not fit."""
        return {} if len(logical) + 8 <= self.name_max else {"name_prefix": self.name_prefix}

    @property
    def reach(self) -> str:
        """Where a client of the endpoint must be."""
        if not self.internal:
            return f"a client in {', '.join(self.client_cidrs or ())}"
        vpc = f" ({self.client_cidrs[0]})" if self.client_cidrs else ""
        return f"inside the VPC{vpc}: a node (the access command) or the login node"

    def check_command(self, endpoint: str) -> str:
        """The command that checks the endpoint from a client allowed in (a node, the login node, a VPN)."""
        if self.scheme == "tcp":
            return f"nc -zv {endpoint} {self.listener_port}"
        port = "" if (self.scheme, self.listener_port) in (("https", 443), ("http", 80)) else f":{self.listener_port}"
        path = self.health.path or "/"
        if self.scheme == "https":
            # the certificate names the service's domain, not the load balancer's DNS name: ask for the domain and
            # connect to the load balancer (before or after the domain's DNS record points at it)
            return f"curl -fsS --connect-to ::{endpoint}: https://<a name on the certificate>{port}{path}"
        return f"curl -fsS {self.scheme}://{endpoint}{port}{path}"


def _problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    serve = spec.serve
    assert serve is not None
    if serve.public and spec.network.existing is not None:
        yield ConfigError(
            f"{K}.public",
            "true with network.existing: which of the existing subnets routes to an internet gateway is not known "
            "here; use public: false, or a network this stack creates",
        )
    elif serve.public and spec.network.egress != "nat" and not spec.network.public_ip:
        yield ConfigError(
            f"{K}.public",
            "true, but no subnet of the cluster routes to the internet (network.egress none and no publicIp): an "
            "internet-facing load balancer needs one; use egress nat",
        )


def _application_problems(spec: ClusterSpec) -> Iterator[ConfigError]:
    assert spec.serve is not None
    if spec.serve.requests_per_node is not None and spec.network.existing is not None:
        yield ConfigError(
            f"{K}.requestsPerNode",
            "with network.existing: it takes an Application Load Balancer, which needs subnets in two Availability "
            "Zones, and the cluster adds its second-zone subnet (a secondary block) only to a VPC it creates, while "
            "network.existing gives the nodes' one subnet; use a network this stack creates, or remove requestsPerNode",
        )


def _application(spec: ClusterSpec) -> ApplicationLb | None:
    serve = spec.serve
    assert serve is not None
    offer = serving.offer("aws")
    assert offer is not None
    if serve.requests_per_node is None or offer.application is None:
        return None
    app = offer.application
    return ApplicationLb(
        # the spec takes private ranges only (10/8, 172.16/12, 192.168/16): the VPC's never overlaps this block
        subnet_block=app.subnetBlock,
        idle_timeout_seconds=serve.idle_timeout_seconds,
        metric=app.metric,
        # the metric is a count per target over a minute (botocore TargetTrackingConfiguration.TargetValue)
        target_value=float(serve.requests_per_node * app.metricPeriodSeconds),
        warmup_seconds=spec.scaling.scale_in_cooldown_seconds if spec.scaling is not None else None,
    )


def plan(spec: ClusterSpec) -> AwsServe | None:
    """The endpoint's layout, or None without `serve:`. Refusals are keyed, before any resource."""
    serve = spec.serve
    if serve is None:
        return None
    refuse([*_problems(spec), *_application_problems(spec)])  # every problem at once
    application = _application(spec)
    offer = serving.offer("aws")
    assert offer is not None  # the spec refuses serve where the cloud has no serving data
    # catalog/serving/aws.yaml states them all (a TLS listener, the 32-character names and 6-character prefixes)
    assert offer.tlsPort is not None and offer.nameMaxLength is not None and offer.namePrefixMaxLength is not None
    tls = serve.certificate is not None
    http = serve.protocol == "http"
    hc = offer.healthCheck
    health = HealthCheck(
        protocol="HTTP" if http else "TCP",
        path=serve.health_path if http else None,
        interval_seconds=hc.intervalSeconds,
        healthy_threshold=hc.healthyThreshold,
        unhealthy_threshold=hc.unhealthyThreshold,
        matcher=hc.matcher if http else None,
    )
    if serve.public:
        clients: tuple[str, ...] | None = serve.allowed_cidrs
    else:
        clients = None if spec.network.existing is not None else (spec.network.cidr,)
    kind = offer.loadBalancerType
    listener: ListenerProtocol = "TLS" if tls else "TCP"
    if application is not None and offer.application is not None:
        kind = offer.application.loadBalancerType
        listener = "HTTPS" if tls else "HTTP"
    return AwsServe(
        load_balancer_type=kind,
        internal=not serve.public,
        # internet-facing: the NAT's public subnet (egress nat), or the node subnet when it routes to the internet
        subnet="public" if serve.public and not spec.network.public_ip else "nodes",
        listener_protocol=listener,
        listener_port=offer.tlsPort if tls else serve.port,
        certificate=serve.certificate,
        ssl_policy=offer.tlsPolicy if tls else None,
        target_port=serve.port,
        health=health,
        client_cidrs=clients,
        preserve_client_ip=offer.clientIpPreserved,
        idle_timeout_seconds=serve.idle_timeout_seconds if application is None else None,
        scheme=("https" if tls else "http") if http else "tcp",
        name_max=offer.nameMaxLength,
        # letters, digits and '-', not ending in '-' (the provider appends its unique suffix)
        name_prefix=spec.name[: offer.namePrefixMaxLength].rstrip("-"),
        application=application,
    )
