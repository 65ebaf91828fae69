"""A Secret Manager secret of the cluster's, replicated in its region only (the MUNGE key's, the accounting
database's password)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout


def regional_secret(
    resource_name: str, layout: GcpLayout, secret_id: str, role: str, child: pulumi.ResourceOptions
) -> gcp.secretmanager.Secret:
    """`secret_id` in the cluster's project, its payload kept in the cluster's region only; labelled with `role`."""
    return gcp.secretmanager.Secret(
        resource_name,
        secret_id=secret_id,
        project=layout.project or None,
        replication=gcp.secretmanager.SecretReplicationArgs(
            user_managed=gcp.secretmanager.SecretReplicationUserManagedArgs(
                replicas=[gcp.secretmanager.SecretReplicationUserManagedReplicaArgs(location=layout.spec.region)]
            )
        ),
        labels={**layout.labels, "gpu-cluster_role": role},
        opts=child,
    )
