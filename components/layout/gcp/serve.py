"""`serve:` on GCP (pure): a regional internal passthrough Network Load Balancer with the managed instance group as its
backend, a regional health check on the serving port and the firewall rule for Google's health-check probers
(`catalog/serving/gcp.yaml`); `components/gcp/serve.py` maps this onto pulumi-gcp. The spec refuses what is not
built here (public, a certificate, an idle timeout)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...catalog import serving
from ...spec import ClusterSpec


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

    def check_command(self, address: str) -> str:
        if self.protocol == "tcp":
            return f"nc -zv {address} {self.port}"
        return f"curl -fsS http://{address}:{self.port}{self.health_path or '/'}"

    @property
    def reach(self) -> str:
        return f"inside the host VPC ({self.clients}): a node (the access command) or the login node"


def plan(spec: ClusterSpec) -> GcpServe | None:
    serve = spec.serve
    if serve is None:
        return None
    offer = serving.offer("gcp")
    # catalog/serving/gcp.yaml states the health check's own timeout (the spec refuses serve where there is no file)
    assert offer is not None and offer.timeoutSeconds is not None
    hc = offer.healthCheck
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
    )
