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
    notBuilt: tuple[str, ...] = ()  # what the cloud offers that is not built, and why


@cache
def offer(cloud: str) -> ServingOffer | None:
    """The cloud's serving data, or None where `serve:` is not built."""
    path = _DIR / f"{cloud}.yaml"
    if not path.exists():
        return None
    return ServingOffer.model_validate(load_yaml(path))


def built_on() -> tuple[str, ...]:
    """The clouds with a serving file: where `serve:` is built."""
    return tuple(sorted(p.stem for p in _DIR.glob("*.yaml")))
