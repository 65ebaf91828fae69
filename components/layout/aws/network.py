"""The network on AWS: the public-IP refusal the EFA interfaces bring, and who may scrape the nodes' exporters (the
security groups' metric rules)."""

from __future__ import annotations

from dataclasses import dataclass

from ...bootstrap.metrics import endpoints as metric_endpoints
from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from .fabric import NetworkInterface


@dataclass(frozen=True)
class Metrics:
    """The exporters every node runs (bootstrap.metrics) and who may scrape them (network rules)."""

    endpoints: tuple[tuple[str, int, str], ...]  # (name, port, path)
    from_login: bool  # the login node's group may scrape too (a Prometheus on the login node)


def check_public_ip(spec: ClusterSpec, interfaces: tuple[NetworkInterface, ...]) -> None:
    if spec.network.public_ip and len(interfaces) > 1:
        raise ConfigError(
            f"{CLUSTER_KEY}.network.publicIp",
            f"true, but {spec.instance.instanceType} with EFA has {len(interfaces)} network interfaces and AWS "
            "assigns public IPs only to single-interface instances; reach the nodes through SSM (access: auto, the "
            "default) or a login node with a public IP (login: {publicIp: true}), or set fabric: none",
        )


def metrics(spec: ClusterSpec) -> Metrics:
    return Metrics(
        endpoints=tuple((e.name, e.port, e.path) for e in metric_endpoints()) if spec.dcgm_exporter else (),
        from_login=spec.dcgm_exporter and spec.login is not None,
    )
