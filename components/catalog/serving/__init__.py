"""Load-balanced endpoints per cloud (`serve:`), loaded from `<cloud>.yaml` beside this module.

Each file holds what the spec checks (the idle-timeout range the cloud's load balancer takes) and what the cloud's
layout reads (the load balancer kind, its health-check settings, the TLS policy), each with its source. A cloud
without a file does not build `serve:` yet: the spec refuses it there, naming the key.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...datafile import load_yaml

_DIR = Path(__file__).parent


class IdleTimeout(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min: int = Field(ge=1)
    max: int = Field(ge=1)
    tls: bool  # whether the TLS listener (a certificate) takes it too
    source: str = Field(min_length=1)


class HealthCheck(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    intervalSeconds: int = Field(ge=1)
    healthyThreshold: int = Field(ge=1)
    unhealthyThreshold: int = Field(ge=1)
    matcher: str | None = None  # http: the status codes a healthy node answers
    source: str = Field(min_length=1)


class SslPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str = Field(min_length=1)
    minTlsVersion: str = Field(min_length=1)
    source: str = Field(min_length=1)


class ProxyOffer(BaseModel):
    """A proxy load balancer built instead of the passthrough one for TLS, a public endpoint or request-rate scaling
    (GCP: the regional Application Load Balancer)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    externalService: str = Field(min_length=1)  # public: true
    internalService: str = Field(min_length=1)  # private, with a certificate or requestsPerNode
    why: str = Field(min_length=1)
    proxySubnetMaxPrefix: int = Field(ge=8, le=30)  # the proxy-only subnet's smallest size (/26: 64 addresses)
    proxySubnetSource: str = Field(min_length=1)
    networkTier: str = Field(min_length=1)  # the external forwarding rule's tier
    networkTierSource: str = Field(min_length=1)
    sslPolicy: SslPolicy
    clientRangesPerRule: int = Field(ge=1)  # public: the client ranges one Cloud Armor rule matches
    clientFilterSource: str = Field(min_length=1)
    priceItems: dict[str, str]  # external / internal: the prices/<cloud>.yaml item of the load balancer's hour


class RequestRate(BaseModel):
    """`serve.requestsPerNode`: scaling the group on the load balancer's requests per node."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    utilizationTarget: float = Field(gt=0, le=1)  # the fraction of requestsPerNode the autoscaler keeps each node at
    how: str = Field(min_length=1)
    source: str = Field(min_length=1)


class ApplicationOffer(BaseModel):
    """The Application Load Balancer built instead of the Network one for `serve.requestsPerNode` (AWS): a second
    subnet in another zone, from a secondary block of the VPC, carries only its interfaces."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    service: str = Field(min_length=1)
    loadBalancerType: str = Field(min_length=1)
    why: str = Field(min_length=1)
    subnetBlock: str = Field(min_length=1)  # the VPC's secondary block, all of it the second zone's subnet
    subnetSource: str = Field(min_length=1)
    idleTimeout: IdleTimeout  # the load balancer's idle timeout (any listener)
    metric: str = Field(min_length=1)  # the target-tracking policy's predefined metric
    metricPeriodSeconds: int = Field(ge=1)  # the metric counts requests per target over this period
    metricSource: str = Field(min_length=1)
    priceItem: str = Field(min_length=1)  # the prices/<cloud>.yaml item of its hour


class ServingOffer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    service: str = Field(min_length=1)  # the load balancer kind, as the docs name it
    loadBalancerType: str = Field(min_length=1)
    why: str = Field(min_length=1)  # why this kind
    tlsPort: int | None = Field(None, ge=1, le=65535)  # where a certificate's listener listens; None: no TLS
    tlsPolicy: str | None = None
    tlsSource: str = Field(min_length=1)  # where TLS is terminated, or why the load balancer does not
    nameMaxLength: int | None = Field(None, ge=1)  # the load balancer's and the target group's names (AWS)
    namePrefixMaxLength: int | None = Field(None, ge=1)  # a name prefix the provider completes with a suffix (AWS)
    clientIpPreserved: bool
    clientIpSource: str = Field(min_length=1)
    healthCheck: HealthCheck
    timeoutSeconds: int | None = Field(None, ge=1)  # a health check's own timeout, where the cloud asks for one
    probeRanges: tuple[str, ...] = ()  # where the load balancer's health checks come from, to admit on the port
    probeSource: str | None = None
    idleTimeout: IdleTimeout | None = None  # None: the load balancer takes no idle timeout
    public: bool = True  # an internet-facing endpoint is built
    publicWhy: str | None = None  # why not, where it is not
    publicTcp: bool = True  # a public endpoint over tcp is built
    publicTcpWhy: str | None = None  # why not, where it is not
    publicAddressItem: str | None = None  # public: the prices/<cloud>.yaml item of its address, billed apart
    publicSource: str | None = None  # how a public endpoint is built, where it is
    publicService: str | None = None  # the load balancer kind when public, where `service` names the private one
    proxy: ProxyOffer | None = None  # the proxy load balancer for TLS, public and request rate (None: none)
    application: ApplicationOffer | None = None  # requestsPerNode where the default is not an ALB (AWS)
    requestRate: RequestRate | None = None  # None: serve.requestsPerNode is refused with requestRateWhy
    requestRateWhy: str | None = None
    notBuilt: tuple[str, ...] = ()  # what the cloud offers that is not built, and why


@cache
def offer(cloud: str) -> ServingOffer | None:
    """The cloud's serving data, or None where `serve:` is not built."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return None
    return ServingOffer.model_validate(load_yaml(path))


def uses_proxy(offer: ServingOffer, public: bool, certificate: str | None, requests_per_node: int | None) -> bool:
    """Whether `serve` is built as the cloud's proxy load balancer (TLS, public or request rate) where it has one."""
    return offer.proxy is not None and (public or certificate is not None or requests_per_node is not None)


def bill_items(
    cloud: str, public: bool, certificate: str | None, requests_per_node: int | None
) -> list[tuple[str, str]]:
    """The endpoint in the bill: (prices/<cloud>.yaml item, name) of its load balancer and of a public address that
    is billed apart (Azure's public IP)."""
    offer_ = offer(cloud)
    assert offer_ is not None
    if offer_.application is not None and requests_per_node is not None:
        return [(offer_.application.priceItem, f"serving load balancer ({offer_.application.service})")]
    if offer_.proxy is not None and uses_proxy(offer_, public, certificate, requests_per_node):
        kind = "external" if public else "internal"
        service = offer_.proxy.externalService if public else offer_.proxy.internalService
        return [(offer_.proxy.priceItems[kind], f"serving load balancer ({service})")]
    service = offer_.publicService if public and offer_.publicService else offer_.service
    items = [("loadBalancer", f"serving load balancer ({service})")]
    if public and offer_.publicAddressItem is not None:
        items.append((offer_.publicAddressItem, "serving load balancer's public IP"))
    return items


def built_on() -> tuple[str, ...]:
    """The clouds with a serving file: where `serve:` is built."""
    return tuple(sorted(p.stem for p in _DIR.glob("*.yaml")))
