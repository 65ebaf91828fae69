"""In-cluster software of a Kubernetes GPU cluster: the Helm releases of `layout.kubernetes`, installed
through a `pulumi-kubernetes` provider built from the cluster's own kubeconfig.

`helm.v3.Release` is one resource whose inputs are the chart, its pinned version and the values:
nothing is fetched or rendered offline, so the plan lists exactly what will be installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from .layout.kubernetes import Manifest, Release

if TYPE_CHECKING:  # imported where a Kubernetes stack installs: a VM stack's plan never pays for it (issue 35)
    import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class InCluster:
    provider: k8s.Provider
    releases: list[k8s.helm.v3.Release]


def install(
    name: str,
    kubeconfig: pulumi.Input[str],
    releases: Sequence[Release],
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
    at_deploy: Mapping[str, Mapping[str, Any]] | None = None,
    after: Mapping[str, Sequence[pulumi.Resource]] | None = None,
) -> InCluster:
    """The provider (kubeconfig as a secret) and one release per entry, all children of `parent`.

    `depends_on`: what must exist before charts install (the node pools: a DaemonSet with no node
    to run on leaves a release pending until Helm's timeout). `at_deploy`: values known only at deploy (a cluster's
    generated name), by release name, merged over the layout's; `after`: what one release waits for besides (its
    cloud identity).
    """
    import pulumi_kubernetes as k8s

    at_deploy, after = at_deploy or {}, after or {}
    provider = k8s.Provider(
        f"{name}-k8s",
        kubeconfig=pulumi.Output.secret(kubeconfig),
        # server-side apply: the charts' CRDs and the operators' own writes do not fight the provider
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    installed = [
        k8s.helm.v3.Release(
            f"{name}-{release.name}",
            name=release.name,
            chart=release.chart,
            version=release.version,
            # an OCI chart (oci://...) is its own reference: no repository
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.repo) if release.repo else None,
            namespace=release.namespace,
            create_namespace=True,
            values=_over(release.values, at_deploy.get(release.name) or {}),
            # GPU nodes take minutes to join and pull the driver images: do not fail the deploy on it
            skip_await=True,
            opts=pulumi.ResourceOptions(
                parent=parent, provider=provider, depends_on=[*depends_on, *after.get(release.name, ())]
            ),
        )
        for release in releases
    ]
    return InCluster(provider, installed)


def _over(values: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's merge (mappings key by key) of values that may hold Outputs, which are not copied."""
    out = dict(values)
    for key, value in extra.items():
        below = out.get(key)
        out[key] = _over(below, value) if isinstance(value, Mapping) and isinstance(below, Mapping) else value
    return out


def apply(
    name: str,
    provider: k8s.Provider,
    manifests: Sequence[Manifest],
    parent: pulumi.Resource,
    after: Mapping[str, pulumi.Resource] | None = None,  # release name -> its resource
) -> list[k8s.apiextensions.CustomResource]:
    """One custom resource per manifest, through `provider`, after the release that installs its CRD."""
    after = after or {}
    import pulumi_kubernetes as k8s

    return [
        k8s.apiextensions.CustomResource(
            f"{name}-{m.kind.lower()}-{m.name}",
            api_version=m.api_version,
            kind=m.kind,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=m.name, namespace=m.namespace),
            spec=dict(m.spec),
            opts=pulumi.ResourceOptions(
                parent=parent, provider=provider, depends_on=[after[m.after]] if m.after and m.after in after else []
            ),
        )
        for m in manifests
    ]


def config_map(
    resource_name: str,
    provider: k8s.Provider,
    name: str,
    namespace: str,
    data: Mapping[str, str],
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.core.v1.ConfigMap:
    """A ConfigMap an add-on of the cloud's reads by its name (AKS's managed Prometheus: its scrape jobs)."""
    import pulumi_kubernetes as k8s

    return k8s.core.v1.ConfigMap(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace),
        data=dict(data),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )
