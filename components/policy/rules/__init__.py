"""Every rule, in the order the plan reports them, with its default level."""

from __future__ import annotations

from ..model import Rule
from .cost import cost_ceiling, cost_ceiling_unchecked
from .data import audit_trail, customer_managed_keys, deletion_protection, in_transit
from .identity import no_admin_on_nodes
from .kubernetes import allowed_workloads, private_endpoint, secrets_encryption
from .network import no_open_ingress, no_public_ip, serve_private
from .nodes import encrypted_disks, metadata_protection, node_login, spot_nodes
from .tags import REQUIRED_TAGS, required_tags

RULES: tuple[Rule, ...] = (
    Rule(
        "no-public-ip", "GPU nodes get no public IP unless the stack sets network.publicIp", "mandatory", no_public_ip
    ),
    Rule(
        "no-open-ingress",
        "No security group / NSG / firewall rule admits 0.0.0.0/0 or ::/0 inbound",
        "mandatory",
        no_open_ingress,
    ),
    Rule(
        "serve-private",
        "A serving load balancer is internal unless the stack sets serve.public",
        "mandatory",
        serve_private,
    ),
    Rule(
        "encrypted-disks",
        "Every disk is encrypted (EBS, ESSD, EKS node groups through a launch template, ACK node pools; "
        "Azure and GCP disks always are)",
        "mandatory",
        encrypted_disks,
    ),
    Rule(
        "node-login",
        "AWS IMDSv2 required; Azure password auth disabled; GCP OS Login on and project SSH keys "
        "blocked; Alibaba no password login",
        "mandatory",
        node_login,
    ),
    Rule(
        "no-admin-on-nodes",
        "The nodes' identity holds no administrator role and no policy allowing every action on every resource",
        "mandatory",
        no_admin_on_nodes,
    ),
    Rule("required-tags", f"Taggable resources carry the tags {', '.join(REQUIRED_TAGS)}", "mandatory", required_tags),
    Rule(
        "spot-nodes",
        "Spot nodes only where the stack asks for them and the policy allows them",
        "mandatory",
        spot_nodes,
    ),
    Rule(
        "kubernetes-private-endpoint",
        "The Kubernetes API server has a private endpoint, and no public one unless the stack sets "
        "kubernetes.publicEndpoint (then only from kubernetes.publicCidrs)",
        "mandatory",
        private_endpoint,
    ),
    Rule(
        "kubernetes-secrets-encryption",
        "Kubernetes Secrets are envelope-encrypted with a key before etcd (EKS from 1.28 by default; GKE, AKS, "
        "ACK with a KMS key)",
        "mandatory",
        secrets_encryption,
    ),
    Rule(
        "kubernetes-workloads",
        "In-cluster software is only the pinned GPU/fabric charts (helm.v3.Release of charts.yaml); no "
        "privileged workload but the clouds' pinned fabric plugins (fabricWorkloads)",
        "mandatory",
        allowed_workloads,
    ),
    Rule(
        "cost-ceiling",
        "The cluster's reference hourly price stays under gpu-cluster:maxHourlyUsd",
        "mandatory",
        cost_ceiling,
    ),
    Rule(
        "cost-ceiling-unchecked",
        "A cost ceiling is set but the instance type has no reference price to check it against",
        "advisory",
        cost_ceiling_unchecked,
    ),
    Rule(
        "customer-managed-keys",
        "Every disk and filesystem is encrypted with a customer-managed key (encryption.key auto or a key id)",
        "disabled",
        customer_managed_keys,
    ),
    Rule(
        "metadata-protection",
        "The node's credentials in the metadata service: Alibaba ECS in security-hardening mode, GKE pools behind "
        "the GKE metadata server (AWS IMDSv2: node-login)",
        "disabled",
        metadata_protection,
    ),
    Rule(
        "in-transit",
        "Endpoints that take a minimum TLS version require 1.2 or later (Azure storage accounts)",
        "disabled",
        in_transit,
    ),
    Rule(
        "deletion-protection",
        "Shared filesystems (storage.shared) are protected from deletion with the stack (retain)",
        "disabled",
        deletion_protection,
    ),
    Rule(
        "audit-trail",
        "Alibaba, Tencent: a trail delivers the account's API events to a log store (compliance mlps3 builds one)",
        "disabled",
        audit_trail,
    ),
)
PROFILE_ONLY = {"customer-managed-keys", "metadata-protection", "in-transit", "deletion-protection", "audit-trail"}
