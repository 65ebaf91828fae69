"""`serve`: a load-balanced endpoint in front of a managed group of the VM mode (catalog/serving/<cloud>.yaml)."""

from __future__ import annotations

from collections.abc import Iterator

from ...catalog import serving
from ...cidr import wide_public
from ...errors import CLUSTER_KEY, ConfigError
from ..context import Context
from .scaling import min_nodes

DEFAULT_HEALTH_PATH = "/health"  # vLLM's OpenAI server and TGI answer it; Triton's is /v2/health/ready


def _serve(ctx: Context) -> Iterator[ConfigError]:
    """`serve`: built on this cloud, on a managed group without a scheduler; TLS, CIDRs and timeouts that fit."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.serve"
    serve = cfg.serve
    if serve is None:
        return
    offer = serving.offer(ctx.cloud)
    if offer is None:
        yield ConfigError(
            k,
            f"not built on {ctx.cloud} yet (built on: {', '.join(serving.built_on())}; docs/serving.md); remove it",
        )
        return
    if cfg.scheduler == "kubernetes":
        yield ConfigError(
            k,
            "not with scheduler kubernetes: Kubernetes serves through its own Services (type LoadBalancer) and the "
            "cloud's load balancer controller; remove serve and expose the Deployment with a Service",
        )
        return
    if cfg.scheduler == "slurm":
        yield ConfigError(
            k, "not with scheduler slurm: Slurm nodes run batch jobs, not a service behind a load balancer; remove it"
        )
        return
    if cfg.node_group == "instances":
        yield ConfigError(
            k,
            "needs nodeGroup: managed: the load balancer's targets follow the managed group as it scales "
            "(a fixed list of instances has no group to follow)",
        )
    if serve.public and not offer.public:
        yield ConfigError(f"{k}.public", f"true, but not built on {ctx.cloud}: {offer.publicWhy}; use false")
    elif serve.public and serve.protocol == "tcp" and not offer.publicTcp:
        yield ConfigError(f"{k}.protocol", f"tcp with public: true is not built on {ctx.cloud}: {offer.publicTcpWhy}")
    yield from _requests_per_node(ctx)
    if serve.protocol == "tcp":
        if serve.health_path is not None:
            yield ConfigError(f"{k}.healthPath", "applies to protocol http; a tcp health check opens a connection")
        if serve.certificate is not None:
            yield ConfigError(
                f"{k}.certificate",
                "applies to protocol http; tcp passes bytes through (terminate TLS on the nodes, or use http)",
            )
    elif offer.tlsPort is None:
        if serve.certificate is not None:
            yield ConfigError(
                f"{k}.certificate",
                f"not on {ctx.cloud}: the {offer.service} passes TLS through to the nodes ({offer.tlsSource}); "
                "remove it and terminate TLS on the nodes",
            )
        if serve.public and offer.public:
            yield ConfigError(
                f"{k}.protocol",
                f"http with public: true needs TLS at the load balancer, which the "
                f"{offer.publicService or offer.service} on {ctx.cloud} does not terminate; use protocol tcp (TLS on "
                "the nodes) or public: false",
            )
    elif serve.public and offer.public and serve.certificate is None:
        yield ConfigError(
            f"{k}.certificate",
            f"required with public: true and protocol http: the endpoint is served over TLS on port {offer.tlsPort} "
            "(give the cloud's certificate id, e.g. an ACM certificate ARN on AWS)",
        )
    if serve.allowed_cidrs and not serve.public:
        yield ConfigError(
            f"{k}.allowedCidrs", "applies to public: true; a private endpoint is reachable from the cluster network"
        )
    if serve.public and offer.public and not serve.allowed_cidrs:
        yield ConfigError(f"{k}.allowedCidrs", "empty, but public is true: list the client ranges allowed in")
    for cidr in serve.allowed_cidrs:
        if wide_public(cidr):
            yield ConfigError(
                f"{k}.allowedCidrs",
                f"{cidr} opens the endpoint to much of the internet; list narrower client ranges",
            )
    timeout = serve.idle_timeout_seconds
    # requestsPerNode on a cloud whose default endpoint is not an Application Load Balancer takes one (AWS): its limits
    application = offer.application if serve.requests_per_node is not None else None
    limits = application.idleTimeout if application is not None else offer.idleTimeout
    service = application.service if application is not None else offer.service
    if timeout is not None and limits is None:
        yield ConfigError(f"{k}.idleTimeoutSeconds", f"not taken by the {service} on {ctx.cloud}; remove it")
    elif timeout is not None and limits is not None:
        if serve.certificate is not None and not limits.tls:
            yield ConfigError(
                f"{k}.idleTimeoutSeconds",
                f"not with a certificate on {ctx.cloud}: the {service}'s TLS listener has a fixed idle timeout "
                f"({limits.source}); remove it",
            )
        elif not limits.min <= timeout <= limits.max:
            yield ConfigError(
                f"{k}.idleTimeoutSeconds",
                f"got {timeout}; the {service} takes {limits.min} to {limits.max} seconds",
            )


def _requests_per_node(ctx: Context) -> Iterator[ConfigError]:
    """`serve.requestsPerNode`: where the cloud scales on the load balancer's requests, over http, with room to."""
    cfg, k = ctx.cfg, f"{CLUSTER_KEY}.serve.requestsPerNode"
    serve, offer = cfg.serve, serving.offer(ctx.cloud)
    assert serve is not None and offer is not None
    if serve.requests_per_node is None:
        return
    if offer.requestRate is None:
        yield ConfigError(k, f"not on {ctx.cloud}: {offer.requestRateWhy}; remove it (scaling: docs/scaling.md)")
        return
    if serve.protocol == "tcp":
        yield ConfigError(k, "applies to protocol http: the load balancer counts HTTP requests, not connections")
    low, high = min_nodes(cfg), ctx.max_nodes
    if low >= high:
        yield ConfigError(k, f"minNodes {low} and maxNodes {high} leave nothing to scale; set maxNodes above minNodes")
    wakes = cfg.scaling is not None and any(entry.nodes > 0 for entry in cfg.scaling.schedule)
    if low == 0 and not wakes:
        yield ConfigError(
            f"{CLUSTER_KEY}.minNodes",
            "0 with serve.requestsPerNode and no schedule entry above 0: at zero nodes the load balancer has no "
            "backend to send requests to, so no request rate brings a node back; set minNodes 1 or add a schedule "
            "entry above 0",
        )
