"""Generate the corpus of invalid stack configs in this folder (run it after changing the cases).

Each file starts with `# expect: KEY` (the config key the one error message must name) and, for
errors in the file itself rather than its values, `# level: file` (the Pulumi CLI rejects those
before any program runs, so only `gpu-cluster plan` is checked). Usage:
`python3 -m uv run python tests/invalid/make_corpus.py`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
KST = "kst-bjj62f5ba3dnpb6v81234"  # a KMS instance id of the documented form (GetKmsInstance example)
C = "gpu-cluster:cluster"
# a Huawei AS group with the key pair it needs (huaweicloud-as-* cases)
AS_GROUP: dict[str, Any] = {
    "nodeGroup": "managed",
    "sshPublicKey": (
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQDSeIpMUsLSOGPX5V1g1YAIyO/wofWegeLbuinyYQhPKrpUWLtLi1PFT0KMe1CH"
        "kKdLWh31LAcoja9Cc9yVVbCgYRxN8VTummMnMQ4f1KpAxffdN1eRqdR+OT4t2L711aSdCrBHC1Bl8kyUZ9UhuLZxnI1uQMQrwfIH"
        "WCpsiQMaMUN10qt8/TjPLZa4y4IyUKo/7puAFGuLof7pr2NM16Vzc0/LNlpONS5T+az8WnkrbXuIR2s83zOC5GC6pwIbrDqvCOHH"
        "3bszRivIUkDLX5ZIaTIcQNzgroH9unPEXscAEqIWdCcSRSn6pA2NF8NUOL4CubCp/bAruppmK31HMAYDzAOSY88cBfx9v3qENxE6"
        "Zy1ZhzqjzAHlK2HTzERw/yTsmMk+aFWmL80PJtXaQ3e3RBXWUbQ8e/jyEEbnyEyH6QUE9jsvh2m67Xvx+/P1I1TXtfzxYc34vmf5"
        "pBogiZ9aDIbVzH14PnLZ8Vx+ylJ11IM5NuyOXt5Jzby9fdgxpoM= dev@example"
    ),
}

BASES: dict[str, dict[str, Any]] = {
    "aws": {
        "aws:region": "us-east-1",
        "gpu-cluster:cloud": "aws",
        C: {"name": "corpus", "gpu": "H100:8", "nodes": 2, "zone": "us-east-1a", "tags": {"environment": "test"}},
    },
    "azure": {
        "azure-native:location": "eastus",
        "gpu-cluster:cloud": "azure",
        C: {"name": "corpus", "instanceType": "Standard_ND96isr_H100_v5", "nodes": 2, "tags": {"environment": "test"}},
    },
    "gcp": {
        "gcp:project": "ml-project",
        "gcp:region": "us-central1",
        "gpu-cluster:cloud": "gcp",
        C: {
            "name": "corpus",
            "instanceType": "a3-megagpu-8g",
            "nodes": 2,
            "zone": "us-central1-a",
            "tags": {"environment": "test"},
        },
    },
    "tencentcloud": {
        "tencentcloud:region": "ap-guangzhou",
        "gpu-cluster:cloud": "tencentcloud",
        C: {
            "name": "corpus",
            "instanceType": "HCCG5v.24XLARGE384",
            "nodes": 2,
            "nodeGroup": "instances",
            "zone": "ap-guangzhou-3",
            "tags": {"environment": "test"},
        },
    },
    "huaweicloud": {
        "huaweicloud:region": "cn-north-4",
        "gpu-cluster:cloud": "huaweicloud",
        C: {
            "name": "corpus",
            "instanceType": "pi2.2xlarge.4",
            "nodes": 2,
            "nodeGroup": "instances",
            "zone": "cn-north-4a",
            "tags": {"environment": "test"},
        },
    },
    "alicloud": {
        "alicloud:region": "cn-beijing",
        "gpu-cluster:cloud": "alicloud",
        C: {
            "name": "corpus",
            "instanceType": "ecs.gn6i-c4g1.xlarge",
            "nodes": 1,
            "zone": "cn-beijing-h",
            "tags": {"environment": "test"},
        },
    },
}
DROP = object()

# (name, key the message must name, {dotted path under the cluster or a top-level key: value})
# Paths starting with "@" are top-level config keys; others are inside gpu-cluster:cluster.
COMMON: list[tuple[str, str, dict[str, Any]]] = [
    # wrong types
    ("nodes-string", f"{C}.nodes", {"nodes": "4"}),
    ("nodes-float", f"{C}.nodes", {"nodes": 2.5}),
    ("nodes-bool", f"{C}.nodes", {"nodes": True}),
    ("nodes-list", f"{C}.nodes", {"nodes": [2]}),
    ("maxnodes-string", f"{C}.maxNodes", {"maxNodes": "ten"}),
    ("spot-string", f"{C}.spot", {"spot": "yes"}),
    ("spot-int", f"{C}.spot", {"spot": 1}),
    ("gpu-int", f"{C}.gpu", {"gpu": 8}),
    ("gpu-list", f"{C}.gpu", {"gpu": ["H100", 8]}),
    ("tags-list", f"{C}.tags", {"tags": ["team=ml"]}),
    ("tags-int-value", f"{C}.tags.team", {"tags": {"team": 7, "environment": "test"}}),
    ("storage-string", f"{C}.storage", {"storage": "nvme"}),
    ("network-list", f"{C}.network", {"network": ["10.0.0.0/16"]}),
    ("rootgb-string", f"{C}.storage.rootGb", {"storage.rootGb": "200"}),
    ("publicip-string", f"{C}.network.publicIp", {"network.publicIp": "false"}),
    ("sshcidrs-string", f"{C}.network.sshCidrs", {"network.sshCidrs": "10.0.0.0/8"}),
    ("image-int", f"{C}.image", {"image": 5}),
    ("name-int", f"{C}.name", {"name": 42}),
    ("cluster-list", C, {"@" + C: ["gpu: H100:8"]}),
    ("cluster-string", C, {"@" + C: "H100:8"}),
    # unknown keys
    ("unknown-cluster-key", f"{C}.gpus", {"gpus": 8}),
    ("unknown-storage-key", f"{C}.storage.scratchSize", {"storage.scratchSize": 100}),
    ("unknown-network-key", f"{C}.network.vpcId", {"network.vpcId": "vpc-1"}),
    ("unknown-top-key", "gpu-cluster:clusters", {"@gpu-cluster:clusters": {}}),
    ("camel-typo", f"{C}.nodegroup", {"nodegroup": "managed"}),
    ("snake-case-key", f"{C}.max_nodes", {"max_nodes": 4}),
    # enums
    ("nodegroup-bad", f"{C}.nodeGroup", {"nodeGroup": "asg"}),
    ("fabric-bad", f"{C}.fabric", {"fabric": "efa"}),
    ("placement-bad", f"{C}.placement", {"placement": "compact"}),
    ("scratch-bad", f"{C}.storage.scratch", {"storage.scratch": "ssd"}),
    ("egress-bad", f"{C}.network.egress", {"network.egress": "internet"}),
    ("reservationtype-bad", f"{C}.reservationType", {"reservationType": "block"}),
    # unknown GPU models and counts
    ("gpu-unknown-model", f"{C}.gpu", {"gpu": "H900:8", "instanceType": DROP}),
    ("gpu-typo", f"{C}.gpu", {"gpu": "A1000:8", "instanceType": DROP}),
    ("gpu-count-zero", f"{C}.gpu", {"gpu": "H100:0", "instanceType": DROP}),
    ("gpu-count-huge", f"{C}.gpu", {"gpu": "H100:64", "instanceType": DROP}),
    ("gpu-count-negative", f"{C}.gpu", {"gpu": "H100:-8", "instanceType": DROP}),
    ("gpu-count-word", f"{C}.gpu", {"gpu": "H100:eight", "instanceType": DROP}),
    ("gpu-empty", f"{C}.gpu", {"gpu": "", "instanceType": DROP}),
    ("gpu-double-colon", f"{C}.gpu", {"gpu": "H100::8", "instanceType": DROP}),
    # vGPU slices: a fraction nobody sells, a fraction that is not 1/N, a slice of a model sold whole only
    ("gpu-fraction-unsold", f"{C}.gpu", {"gpu": "L4:1/7", "instanceType": DROP}),
    ("gpu-fraction-not-unit", f"{C}.gpu", {"gpu": "L4:3/8", "instanceType": DROP}),
    ("gpu-fraction-whole", f"{C}.gpu", {"gpu": "L4:1/1", "instanceType": DROP}),
    ("gpu-fraction-of-h100", f"{C}.gpu", {"gpu": "H100:1/8", "instanceType": DROP}),
    ("gpu-and-type-missing", C, {"gpu": DROP, "instanceType": DROP}),
    # conflicting fields
    ("nodes-over-max", f"{C}.nodes", {"nodes": 5, "maxNodes": 3}),
    ("instances-zero", f"{C}.nodes", {"nodeGroup": "instances", "nodes": 0}),
    ("instances-maxnodes", f"{C}.maxNodes", {"nodeGroup": "instances", "nodes": 2, "maxNodes": 4}),
    ("spot-and-reservation", f"{C}.reservation", {"spot": True, "reservation": "cr-0123456789abcdef0"}),
    ("capacity-block-without-reservation", f"{C}.reservationType", {"reservationType": "capacity-block"}),
    # bad CIDRs and reserved ranges
    ("cidr-malformed", f"{C}.network.cidr", {"network.cidr": "10.42.0.0"}),
    ("cidr-bad-prefix", f"{C}.network.cidr", {"network.cidr": "10.42.0.0/33"}),
    ("cidr-host-bits", f"{C}.network.cidr", {"network.cidr": "10.42.0.1/16"}),
    ("cidr-public", f"{C}.network.cidr", {"network.cidr": "8.8.0.0/16"}),
    ("cidr-public-2", f"{C}.network.cidr", {"network.cidr": "100.64.0.0/16"}),
    ("cidr-ipv6", f"{C}.network.cidr", {"network.cidr": "fd00::/48"}),
    ("cidr-words", f"{C}.network.cidr", {"network.cidr": "my-vpc"}),
    ("cidr-too-small", f"{C}.network.cidr", {"network.cidr": "10.42.0.0/30"}),
    ("sshcidr-malformed", f"{C}.network.sshCidrs", {"network.sshCidrs": ["1.2.3.4/40"]}),
    ("sshcidr-words", f"{C}.network.sshCidrs", {"network.sshCidrs": ["office"]}),
    # node counts
    ("nodes-negative", f"{C}.nodes", {"nodes": -1}),
    ("nodes-huge", f"{C}.nodes", {"nodes": 1000000}),
    ("maxnodes-negative", f"{C}.maxNodes", {"maxNodes": -4}),
    ("maxnodes-huge", f"{C}.maxNodes", {"maxNodes": 99999}),
    # other values
    ("name-uppercase", f"{C}.name", {"name": "LLM-Train"}),
    ("name-too-long", f"{C}.name", {"name": "a" * 40}),
    ("name-leading-digit", f"{C}.name", {"name": "1cluster"}),
    ("name-underscore", f"{C}.name", {"name": "llm_train"}),
    ("rootgb-small", f"{C}.storage.rootGb", {"storage.rootGb": 8}),
    ("rootgb-huge", f"{C}.storage.rootGb", {"storage.rootGb": 100000}),
    ("scratchgb-zero", f"{C}.storage.scratchGb", {"storage.scratchGb": 0}),
    ("scratchpath-relative", f"{C}.storage.scratchPath", {"storage.scratchPath": "scratch"}),
    ("scratchpath-root", f"{C}.storage.scratchPath", {"storage.scratchPath": "/"}),
    ("scratchpath-spaces", f"{C}.storage.scratchPath", {"storage.scratchPath": "/my scratch"}),
    ("scratchpath-etc", f"{C}.storage.scratchPath", {"storage.scratchPath": "/etc"}),
    ("scratchpath-dotdot", f"{C}.storage.scratchPath", {"storage.scratchPath": "/scratch/../etc"}),
    ("scratchpath-efa", f"{C}.storage.scratchPath", {"storage.scratchPath": "/opt/amazon"}),
    ("adminuser-root-like", f"{C}.adminUser", {"adminUser": "Admin User"}),
    ("adminuser-long", f"{C}.adminUser", {"adminUser": "u" * 40}),
    ("sshkey-garbage", f"{C}.sshPublicKey", {"sshPublicKey": "not a key"}),
    ("sshkey-private", f"{C}.sshPublicKey", {"sshPublicKey": "-----BEGIN OPENSSH PRIVATE KEY-----"}),
    ("tag-key-empty", f"{C}.tags.", {"tags": {"": "x", "environment": "test"}}),
    ("tag-value-long", f"{C}.tags.team", {"tags": {"team": "x" * 300, "environment": "test"}}),
    ("tag-value-quote", f"{C}.tags.team", {"tags": {"team": "ml's", "environment": "test"}}),
    ("tags-too-many", f"{C}.tags", {"tags": {**{f"t{i}": "x" for i in range(49)}, "environment": "test"}}),
    ("image-empty", f"{C}.image", {"image": ""}),
    ("maxhourly-word", "gpu-cluster:maxHourlyUsd", {"@gpu-cluster:maxHourlyUsd": "cheap"}),
    ("maxhourly-negative", "gpu-cluster:maxHourlyUsd", {"@gpu-cluster:maxHourlyUsd": -5}),
    ("maxhourly-zero", "gpu-cluster:maxHourlyUsd", {"@gpu-cluster:maxHourlyUsd": 0}),
    ("cloud-missing", "gpu-cluster:cloud", {"@gpu-cluster:cloud": DROP}),
    ("cloud-unknown", "gpu-cluster:cloud", {"@gpu-cluster:cloud": "oracle"}),
    ("cloud-uppercase", "gpu-cluster:cloud", {"@gpu-cluster:cloud": "AWS"}),
]

# Per cloud: types it does not sell, its region key, zones, images, reservations, options.
# a valid CCE config on the huaweicloud base: the cases above change one thing of it
CCE: dict[str, Any] = {"scheduler": "kubernetes", "nodeGroup": "managed", "storage.scratch": "none"}

PER_CLOUD: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "aws": [
        ("azure-type-on-aws", f"{C}.instanceType", {"instanceType": "Standard_ND96isr_H100_v5", "gpu": DROP}),
        ("gcp-type-on-aws", f"{C}.instanceType", {"instanceType": "a3-megagpu-8g", "gpu": DROP}),
        ("cpu-type-on-aws", f"{C}.instanceType", {"instanceType": "m5.large", "gpu": DROP}),
        # a vGPU slice: no EFA on g6f/gr6f (KARP-DOC-G6F: no vpc.amazonaws.com/efa resource), no MIG inside it
        ("slice-fabric-required", f"{C}.fabric", {"gpu": "L4:1/4", "nodes": 1, "fabric": "required"}),
        ("slice-mig", f"{C}.gpuPartition", {"gpu": "L4:1/8", "nodes": 1, "gpuPartition": "1g.10gb"}),
        ("slice-disagrees-with-type", f"{C}.gpu", {"gpu": "L4:1/4", "instanceType": "g6f.large", "nodes": 1}),
        ("aws-unsold-gpu", f"{C}.gpu", {"gpu": "L20:1"}),
        # monitoring.logs and .notify on AWS: a retention CloudWatch Logs does not take, notify with nothing to
        # evaluate the rules
        (
            "aws-logs-retention-31",
            f"{C}.monitoring.logs.retentionDays",
            {"login": {}, "monitoring.logs": {"enabled": True, "retentionDays": 31}},
        ),
        ("aws-logs-no-egress", f"{C}.network.egress", {"network.egress": "none", "monitoring.logs.enabled": True}),
        (
            "aws-notify-without-prometheus",
            f"{C}.monitoring.notify",
            {"login": {}, "monitoring.prometheus": "none", "monitoring.notify": ["ops@example.com"]},
        ),
        # prometheus managed: needs the login node its agent runs on in VM mode, no multi-Region key (AMP's kmsKeyArn);
        # Amazon Managed Grafana's admins only with managed, and IAM Identity Center user ids
        (
            "aws-grafana-admins-self-hosted",
            f"{C}.monitoring.grafanaAdmins",
            {"login": {}, "monitoring.grafanaAdmins": ["0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"]},
        ),
        (
            "aws-grafana-admins-not-identity-center-id",
            f"{C}.monitoring.grafanaAdmins[0]",
            {"login": {}, "monitoring.prometheus": "managed", "monitoring.grafanaAdmins": ["ops@example.com"]},
        ),
        # on EKS AMP's managed collector cannot write to a workspace under a customer managed key (AMP-collector-how-to)
        (
            "aws-prometheus-managed-eks-key",
            f"{C}.monitoring.prometheus",
            {"scheduler": "kubernetes", "encryption.key": "auto", "monitoring.prometheus": "managed"},
        ),
        # notify on EKS: only AMP's alert manager sends (the in-cluster Alertmanager has no receiver)
        (
            "aws-eks-notify-self-hosted",
            f"{C}.monitoring.notify",
            {
                "scheduler": "kubernetes",
                "monitoring.prometheus": "selfHosted",
                "monitoring.notify": ["ops@example.com"],
            },
        ),
        ("aws-prometheus-managed-no-login", f"{C}.monitoring.prometheus", {"monitoring.prometheus": "managed"}),
        (
            "aws-prometheus-managed-mrk-key",
            f"{C}.monitoring.prometheus",
            {
                "login": {},
                "encryption.key": "arn:aws:kms:us-east-1:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab",
                "monitoring.prometheus": "managed",
            },
        ),
        ("aws-count-not-sold", f"{C}.gpu", {"gpu": "H100:4"}),
        ("aws-gpu-type-disagree", f"{C}.gpu", {"gpu": "H100:8", "instanceType": "p4d.24xlarge"}),
        ("aws-fabric-required-t4", f"{C}.fabric", {"instanceType": "g4dn.xlarge", "gpu": DROP, "fabric": "required"}),
        (
            "aws-nvme-on-p3",
            f"{C}.storage.scratch",
            {"gpu": DROP, "instanceType": "p3.2xlarge", "storage.scratch": "nvme"},
        ),
        ("aws-region-missing", "aws:region", {"@aws:region": DROP}),
        ("aws-region-bad", "aws:region", {"@aws:region": "US East"}),
        ("aws-region-unknown", "aws:region", {"@aws:region": "mars-1"}),
        ("aws-region-typo", "aws:region", {"@aws:region": "us-east-9"}),
        ("aws-zone-other-region", f"{C}.zone", {"zone": "us-west-2a"}),
        ("aws-zone-azure-style", f"{C}.zone", {"zone": "1"}),
        ("aws-image-bad", f"{C}.image", {"image": "ubuntu-22.04"}),
        ("aws-reservation-bad", f"{C}.reservation", {"reservation": "odcr-123"}),
        (
            "aws-capacity-block-g6e",
            f"{C}.reservationType",
            {
                "gpu": DROP,
                "instanceType": "g6e.12xlarge",
                "reservation": "cr-0123456789abcdef0",
                "reservationType": "capacity-block",
            },
        ),
        (
            "aws-slurm-partition-default",
            f"{C}.slurm.partition",
            {"scheduler": "slurm", "slurm": {"partition": "default"}},
        ),
        ("aws-tag-reserved", f"{C}.tags.aws:team", {"tags": {"aws:team": "x", "environment": "test"}}),
        ("aws-cidr-too-big", f"{C}.network.cidr", {"network.cidr": "10.0.0.0/8"}),
        ("aws-public-ip-with-efa", f"{C}.network.publicIp", {"network.publicIp": True}),
        ("aws-with-gcp-key", "gcp:project", {"@gcp:project": "p"}),
        ("aws-with-azure-key", "azure-native:location", {"@azure-native:location": "eastus"}),
        ("aws-with-alicloud-key", "alicloud:region", {"@alicloud:region": "cn-beijing"}),
        ("aws-with-gcp-options", f"{C}.gcp", {"gcp": {"iap": True}}),
        (
            "aws-serve-requests-existing-network",  # the Application Load Balancer needs a second zone's subnet
            f"{C}.serve.requestsPerNode",
            {
                "instanceType": "g6e.xlarge",
                "gpu": DROP,
                "nodes": 1,
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "network": {"existing": {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0"]}},
                "serve": {"requestsPerNode": 4},
            },
        ),
        (
            "aws-serve-requests-idle-timeout",  # the Application Load Balancer's idle timeout is 1-4000 s
            f"{C}.serve.idleTimeoutSeconds",
            {
                "instanceType": "g6e.xlarge",
                "gpu": DROP,
                "nodes": 1,
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"requestsPerNode": 4, "idleTimeoutSeconds": 5000},
            },
        ),
        ("aws-with-azure-options", f"{C}.azure", {"azure": {"resourceGroup": "rg"}}),
    ],
    "azure": [
        # prometheus managed on AKS: the add-on has no GPU metrics without the DCGM exporter; grafanaAdmins only
        # with managed, and Entra object ids
        (
            "azure-prometheus-managed-aks-no-dcgm",
            f"{C}.monitoring.prometheus",
            {"scheduler": "kubernetes", "monitoring.prometheus": "managed", "monitoring.dcgmExporter": False},
        ),
        (
            "azure-grafana-admins-self-hosted",
            f"{C}.monitoring.grafanaAdmins",
            {"login": {}, "monitoring.grafanaAdmins": ["0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"]},
        ),
        (
            "azure-grafana-admins-not-object-id",
            f"{C}.monitoring.grafanaAdmins[0]",
            {"login": {}, "monitoring.prometheus": "managed", "monitoring.grafanaAdmins": ["ops@example.com"]},
        ),
        ("aws-type-on-azure", f"{C}.instanceType", {"instanceType": "p5.48xlarge"}),
        ("azure-unknown-size", f"{C}.instanceType", {"instanceType": "Standard_ND96isr_H900_v9"}),
        ("azure-gpu-type-disagree", f"{C}.gpu", {"gpu": "A100:8"}),
        ("azure-fabric-required-t4", f"{C}.fabric", {"instanceType": "Standard_NC4as_T4_v3", "fabric": "required"}),
        ("azure-location-missing", "azure-native:location", {"@azure-native:location": DROP}),
        ("azure-location-bad", "azure-native:location", {"@azure-native:location": "East US"}),
        ("azure-location-unknown", "azure-native:location", {"@azure-native:location": "marsnorth"}),
        ("azure-zone-bad", f"{C}.zone", {"zone": "eastus-1"}),
        ("azure-rdma-overlap", f"{C}.network.cidr", {"network.cidr": "172.16.0.0/16"}),
        ("azure-rdma-overlap-sub", f"{C}.network.cidr", {"network.cidr": "172.16.128.0/20"}),
        ("azure-rdma-overlap-super", f"{C}.network.cidr", {"network.cidr": "172.16.0.0/12"}),
        ("azure-image-bad", f"{C}.image", {"image": "ubuntu"}),
        ("azure-tag-reserved", f"{C}.tags.windows-team", {"tags": {"windows-team": "x", "environment": "test"}}),
        ("azure-with-aws-key", "aws:region", {"@aws:region": "us-east-1"}),
        ("azure-with-alicloud-options", f"{C}.alicloud", {"alicloud": {"scratchPerformanceLevel": "PL1"}}),
        ("azure-resource-group-bad", f"{C}.azure.resourceGroup", {"azure": {"resourceGroup": "bad/name"}}),
        ("azure-options-unknown", f"{C}.azure.subscription", {"azure": {"subscription": "x"}}),
        (
            "azure-serve-public-http",  # a public endpoint on Azure is TCP with TLS on the nodes
            f"{C}.serve.protocol",
            {
                "instanceType": "Standard_NC64as_T4_v3",
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"public": True, "allowedCidrs": ["203.0.113.0/24"]},
            },
        ),
        (
            "azure-serve-requests-per-node",  # the Standard Load Balancer reports no request count
            f"{C}.serve.requestsPerNode",
            {
                "instanceType": "Standard_NC64as_T4_v3",
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"requestsPerNode": 4},
            },
        ),
    ],
    "gcp": [
        # prometheus managed (catalog/monitoring.yaml managed.gcp): not on GKE (already managed there), not without
        # the DCGM exporter the nodes' Ops Agent scrapes
        (
            "gcp-prometheus-managed-gke",
            f"{C}.monitoring.prometheus",
            {"scheduler": "kubernetes", "monitoring.prometheus": "managed"},
        ),
        (
            "gcp-prometheus-managed-no-dcgm",
            f"{C}.monitoring.prometheus",
            {"monitoring.prometheus": "managed", "monitoring.dcgmExporter": False},
        ),
        ("aws-type-on-gcp", f"{C}.instanceType", {"instanceType": "p5.48xlarge"}),
        ("gcp-unknown-machine", f"{C}.instanceType", {"instanceType": "a9-hypergpu-8g"}),
        ("gcp-gpu-type-disagree", f"{C}.gpu", {"gpu": "H200:8"}),
        ("gcp-project-missing", "gcp:project", {"@gcp:project": DROP}),
        ("gcp-region-missing", "gcp:region", {"@gcp:region": DROP}),
        ("gcp-region-bad", "gcp:region", {"@gcp:region": "US Central"}),
        ("gcp-region-unknown", "gcp:region", {"@gcp:region": "mars-central1"}),
        ("gcp-zone-other-region", f"{C}.zone", {"zone": "europe-west4-a"}),
        ("gcp-zone-azure-style", f"{C}.zone", {"zone": "2"}),
        ("gcp-zone-unknown", f"{C}.zone", {"zone": "us-central1-z"}),
        ("gcp-gke-name-hyphen", f"{C}.name", {"name": "corpus-", "scheduler": "kubernetes"}),
        (
            "gcp-flex-start-compact",
            f"{C}.placement",
            {"nodeGroup": "instances", "placement": "cluster", "gcp": {"flexStart": True}},
        ),
        ("gcp-image-bad", f"{C}.image", {"image": "ubuntu 22.04"}),
        ("gcp-with-aws-key", "aws:region", {"@aws:region": "us-east-1"}),
        ("gcp-with-azure-options", f"{C}.azure", {"azure": {}}),
        ("gcp-iap-string", f"{C}.gcp.iap", {"gcp": {"iap": "yes"}}),
        ("gcp-options-unknown", f"{C}.gcp.network", {"gcp": {"network": "default"}}),
        # serve: a public tcp endpoint (the public one is the Application Load Balancer), a certificate of another
        # region, request rate over tcp
        (
            "gcp-serve-public-tcp",
            f"{C}.serve.protocol",
            {
                "instanceType": "g2-standard-24",
                "gpu": "L4:2",
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"public": True, "protocol": "tcp", "allowedCidrs": ["203.0.113.0/24"]},
            },
        ),
        (
            "gcp-serve-certificate-region",
            f"{C}.serve.certificate",
            {
                "instanceType": "g2-standard-24",
                "gpu": "L4:2",
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"certificate": "projects/ml-project/regions/europe-west4/sslCertificates/c"},
            },
        ),
        (
            "gcp-serve-requests-tcp",
            f"{C}.serve.requestsPerNode",
            {
                "instanceType": "g2-standard-24",
                "gpu": "L4:2",
                "placement": "none",
                "nodeGroup": "managed",
                "maxNodes": 4,
                "serve": {"protocol": "tcp", "requestsPerNode": 4},
            },
        ),
    ],
    "alicloud": [
        # prometheus managed on ACK scrapes NVIDIA's DCGM exporter (a PodMonitor): nothing to scrape without it
        (
            "alicloud-prometheus-managed-ack-no-dcgm",
            f"{C}.monitoring.prometheus",
            {"scheduler": "kubernetes", "monitoring.prometheus": "managed", "monitoring.dcgmExporter": False},
        ),
        # notify on Alibaba: the ARMS instance evaluates and sends the alerts, so it needs prometheus managed
        (
            "alicloud-notify-without-managed",
            f"{C}.monitoring.notify",
            {"login": {}, "network.egress": "nat", "monitoring.notify": ["ops@example.com"]},
        ),
        # a vGPU slice (vgn7i-vws) on ACK: its node pools install the Tesla driver, a slice takes GRID
        # (layout/alicloud/nodes.py image_drivers)
        ("slice-on-ack", f"{C}.gpu", {"gpu": "A10:1/6", "instanceType": DROP, "scheduler": "kubernetes"}),
        ("aws-type-on-alicloud", f"{C}.instanceType", {"instanceType": "p5.48xlarge"}),
        ("alicloud-unknown-type", f"{C}.instanceType", {"instanceType": "ecs.gn99-c8g1.2xlarge"}),
        ("alicloud-no-prefix", f"{C}.instanceType", {"instanceType": "gn6i-c4g1.xlarge"}),
        ("alicloud-nvme", f"{C}.storage.scratch", {"storage.scratch": "nvme"}),
        ("alicloud-fabric-required-gn6i", f"{C}.fabric", {"fabric": "required"}),
        ("alicloud-unnamed-gpu-not-picked", f"{C}.gpu", {"gpu": "H20:8", "instanceType": DROP}),
        ("alicloud-region-missing", "alicloud:region", {"@alicloud:region": DROP}),
        ("alicloud-region-bad", "alicloud:region", {"@alicloud:region": "Beijing"}),
        ("alicloud-region-unknown", "alicloud:region", {"@alicloud:region": "cn-mars"}),
        ("alicloud-zone-other-region", f"{C}.zone", {"zone": "cn-shanghai-a"}),
        ("alicloud-image-bad", f"{C}.image", {"image": "ubuntu 22.04"}),
        ("alicloud-with-gcp-key", "gcp:region", {"@gcp:region": "us-central1"}),
        ("alicloud-with-aws-options", f"{C}.aws", {"aws": {}}),
        ("alicloud-pl-bad", f"{C}.alicloud.scratchPerformanceLevel", {"alicloud": {"scratchPerformanceLevel": "PL9"}}),
        ("alicloud-tag-reserved", f"{C}.tags.acs:team", {"tags": {"acs:team": "x", "environment": "test"}}),
        ("alicloud-name-double-hyphen", f"{C}.name", {"name": "corpus--a", "nodeGroup": "instances"}),
        (
            "alicloud-slurm-partitions-reservation",  # the ECS launch template takes no private pool
            f"{C}.reservation",
            {
                "instanceType": "ecs.gn7i-c16g1.4xlarge",
                "nodes": 0,
                "zone": "cn-beijing-l",
                "reservation": "eap-bp67acfmxazb4",
                "scheduler": "slurm",
                "network": {"egress": "nat"},
                "slurm": {"partitions": [{"name": "a10", "maxNodes": 2}]},
            },
        ),
        ("alicloud-tag-url", f"{C}.tags.team", {"tags": {"team": "see https://x", "environment": "test"}}),
        # SM4: a key in an existing KMS instance; creating one, a malformed id, no instance, a scratch disk refused
        (
            "alicloud-kms-instance-create",
            f"{C}.encryption.kmsInstance",
            {"encryption": {"key": "auto", "kmsInstance": "create"}},
        ),
        (
            "alicloud-kms-instance-bad",
            f"{C}.encryption.kmsInstance",
            {"encryption": {"key": "auto", "kmsInstance": "kms-1"}},
        ),
        (
            "alicloud-sm4-no-instance",
            f"{C}.encryption.kmsInstance",
            {"encryption": {"key": "auto", "algorithm": "sm4"}, "storage.scratch": "none"},
        ),
        (
            "alicloud-sm4-scratch-disk",
            f"{C}.storage.scratch",
            {"encryption": {"key": "auto", "algorithm": "sm4", "kmsInstance": KST}},
        ),
        (
            "alicloud-serve-public-http-no-certificate",
            f"{C}.serve.certificate",
            {"nodeGroup": "managed", "maxNodes": 4, "serve": {"public": True, "allowedCidrs": ["203.0.113.0/24"]}},
        ),
        # mlps3 with CPFS (kind lustre): not built (no customer key on CPFS in CreateFileSystem, no sourced mount);
        # the line names nfs
        (
            "alicloud-mlps3-shared-lustre",
            f"{C}.storage.shared.kind",
            {"compliance": "mlps3", "encryption": {"key": "auto"}, "storage": {"shared": {"kind": "lustre"}}},
        ),
        # the cluster's key without mlps3: CPFS still takes no key (a silent key-less filesystem is not built either)
        (
            "alicloud-key-shared-lustre",
            f"{C}.storage.shared.kind",
            {"encryption": {"key": "auto"}, "storage": {"shared": {"kind": "lustre"}}},
        ),
        # built on Alibaba now, but VM mode without a login node has nowhere to run it
        ("alicloud-prometheus-no-login", f"{C}.monitoring.prometheus", {"monitoring": {"prometheus": "selfHosted"}}),
        # monitoring.logs: SLS keeps a logstore 1 to 3650 days (catalog/monitoring.yaml logs.alicloud)
        (
            "alicloud-logs-retention-over",
            f"{C}.monitoring.logs.retentionDays",
            {"monitoring": {"logs": {"enabled": True, "retentionDays": 3653}}},
        ),
    ],
    "tencentcloud": [
        # prometheus managed (TMP): a retention TMP does not take, and TKE (catalog managed.tencentcloud)
        (
            "tencentcloud-prometheus-managed-retention",
            f"{C}.monitoring.prometheus",
            {"login": {}, "network.egress": "nat", "monitoring.prometheus": "managed", "monitoring.retentionDays": 800},
        ),
        (
            "tencentcloud-prometheus-managed-tke",
            f"{C}.monitoring.prometheus",
            {
                "scheduler": "kubernetes",
                "instanceType": "GN7.2XLARGE32",
                "fabric": "none",
                "nodeGroup": DROP,
                "storage.scratch": "none",
                "monitoring.prometheus": "managed",
            },
        ),
        ("aws-type-on-tencentcloud", f"{C}.instanceType", {"instanceType": "p5.48xlarge"}),
        ("tencentcloud-unknown-type", f"{C}.instanceType", {"instanceType": "GN99.2XLARGE32"}),
        ("tencentcloud-hcc-managed", f"{C}.nodeGroup", {"nodeGroup": "managed"}),
        # monitoring.notify: no alarm notice a stack can point at an address (catalog/monitoring.yaml notifyNotBuilt)
        ("tencentcloud-notify", f"{C}.monitoring.notify", {"login": {}, "monitoring.notify": ["ops@example.com"]}),
        (
            "tencentcloud-slurm-managed",
            f"{C}.nodeGroup",
            {"scheduler": "slurm", "nodeGroup": "managed", "instanceType": "GN7.2XLARGE32", "storage.scratch": "none"},
        ),
        ("tencentcloud-hcc-spot", f"{C}.spot", {"spot": True, "@gpu-cluster:maxHourlyUsd": 100}),
        ("tencentcloud-spot-no-cap", "gpu-cluster:maxHourlyUsd", {"spot": True, "instanceType": "GN7.2XLARGE32"}),
        ("tencentcloud-nvme-gn7", f"{C}.storage.scratch", {"storage.scratch": "nvme", "instanceType": "GN7.2XLARGE32"}),
        ("tencentcloud-fabric-required-gn7", f"{C}.fabric", {"fabric": "required", "instanceType": "GN7.2XLARGE32"}),
        ("tencentcloud-region-missing", "tencentcloud:region", {"@tencentcloud:region": DROP}),
        ("tencentcloud-region-bad", "tencentcloud:region", {"@tencentcloud:region": "Guangzhou"}),
        ("tencentcloud-region-unknown", "tencentcloud:region", {"@tencentcloud:region": "ap-mars"}),
        ("tencentcloud-zone-other-region", f"{C}.zone", {"zone": "ap-shanghai-2"}),
        ("tencentcloud-zone-letter", f"{C}.zone", {"zone": "ap-guangzhou-a"}),
        ("tencentcloud-image-bad", f"{C}.image", {"image": "ubuntu 22.04"}),
        ("tencentcloud-with-alicloud-key", "alicloud:region", {"@alicloud:region": "cn-beijing"}),
        ("tencentcloud-with-aws-options", f"{C}.aws", {"aws": {}}),
        ("tencentcloud-access-ssm", f"{C}.access", {"access": "ssm"}),
        (
            "tencentcloud-sshkey-ed25519",
            f"{C}.sshPublicKey",
            {"sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA"},
        ),
        ("tencentcloud-tag-reserved", f"{C}.tags.qcloud:team", {"tags": {"qcloud:team": "x", "environment": "test"}}),
        ("tencentcloud-name-trailing-hyphen", f"{C}.name", {"name": "corpus-"}),
        # built on Tencent now (a login node's file_sd list), but without a login node it has nowhere to run
        (
            "tencentcloud-prometheus-no-login",
            f"{C}.monitoring.prometheus",
            {"monitoring": {"prometheus": "selfHosted"}},
        ),
        # monitoring.logs: a CLS topic keeps standard storage 1 to 3600 days (catalog/monitoring.yaml logs.tencentcloud)
        (
            "tencentcloud-logs-retention-over",
            f"{C}.monitoring.logs.retentionDays",
            {"monitoring": {"logs": {"enabled": True, "retentionDays": 3601}}},
        ),
        # encryption.key: a KMS key id is a UUID (capabilities/tencentcloud.yaml encryption.keyPattern)
        ("tencentcloud-kms-key-malformed", f"{C}.encryption.key", {"encryption": {"key": "kms-1234"}}),
        # compliance mlps3 keeps the nodes' logs at least 180 days (catalog/monitoring.yaml logsRetentionByCompliance)
        (
            "tencentcloud-mlps3-logs-short",
            f"{C}.monitoring.logs.retentionDays",
            {"compliance": "mlps3", "monitoring": {"logs": {"enabled": True, "retentionDays": 30}}},
        ),
    ],
    "huaweicloud": [
        ("aws-type-on-huaweicloud", f"{C}.instanceType", {"instanceType": "p5.48xlarge"}),
        ("huaweicloud-unknown-type", f"{C}.instanceType", {"instanceType": "pi9.2xlarge.4"}),
        # nodeGroup managed (an AS group, capabilities/huaweicloud.yaml asGroup): a key pair (without key_name AS takes
        # the user data as the root password), no scaling, no Slurm, at most 300 nodes
        ("huaweicloud-as-no-key", f"{C}.sshPublicKey", {"nodeGroup": "managed"}),
        ("huaweicloud-as-max-nodes", f"{C}.maxNodes", {**AS_GROUP, "maxNodes": 301}),
        (
            "huaweicloud-as-scaling",
            f"{C}.scaling",
            {**AS_GROUP, "maxNodes": 4, "scaling": {"metric": "gpuUtilization", "target": 70}},
        ),
        (
            "huaweicloud-as-slurm",
            f"{C}.nodeGroup",
            {**AS_GROUP, "scheduler": "slurm", "storage": {"scratch": "none", "shared": {"sizeGb": 500}}},
        ),
        ("huaweicloud-spot", f"{C}.spot", {"spot": True, "@gpu-cluster:maxHourlyUsd": 100}),
        # scheduler slurm: static nodes only (no AS group), no slurmdbd database, no elastic partitions
        # (catalog/slurm.yaml and catalog/accounting.yaml clouds.huaweicloud)
        ("huaweicloud-slurm-managed", f"{C}.nodeGroup", {"scheduler": "slurm", "nodeGroup": "managed"}),
        (
            "huaweicloud-slurm-accounting",
            f"{C}.slurm.accounting",
            {"scheduler": "slurm", "slurm": {"accounting": True}},
        ),
        (
            "huaweicloud-slurm-partitions",
            f"{C}.slurm.partitions",
            {
                "scheduler": "slurm",
                "nodes": 0,
                "slurm": {"partitions": [{"name": "t4", "instanceType": "pi2.2xlarge.4", "maxNodes": 4}]},
            },
        ),
        # scheduler kubernetes (CCE): what CCE or pulumi-huaweicloud 0.0.12's cce module cannot take
        ("huaweicloud-kubernetes-instances", f"{C}.nodeGroup", {**CCE, "nodeGroup": "instances"}),
        (
            "huaweicloud-kubernetes-public-endpoint",
            f"{C}.kubernetes.publicEndpoint",
            {**CCE, "kubernetes": {"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]}},
        ),
        (
            "huaweicloud-kubernetes-sharing",
            f"{C}.kubernetes.gpuSharing.mode",
            {**CCE, "kubernetes": {"gpuSharing": {"mode": "timeSlicing", "replicas": 2}}},
        ),
        ("huaweicloud-kubernetes-version", f"{C}.kubernetes.version", {**CCE, "kubernetes": {"version": "1.30"}}),
        ("huaweicloud-kubernetes-scratch-disk", f"{C}.storage.scratch", {**CCE, "storage.scratch": "disk"}),
        ("huaweicloud-kubernetes-image", f"{C}.image", {**CCE, "image": "0b30658a-ed1a-4922-b8f7-a673ca9c1234"}),
        ("huaweicloud-kubernetes-min-zero", f"{C}.minNodes", {**CCE, "minNodes": 0, "maxNodes": 3}),
        # CCE cluster names are 4 to 128 characters (huaweicloudsdkcce ClusterMetadata name)
        ("huaweicloud-kubernetes-name-short", f"{C}.name", {**CCE, "name": "abc"}),
        # a CCE node pool takes 8 tags (huaweicloudsdkcce NodeTemplate userTags); 6 here, gpu-cluster:cluster,
        # gpu-cluster:stack and Name make 9 (10 on an ECS pass)
        (
            "huaweicloud-kubernetes-pool-tags",
            f"{C}.tags",
            {
                **CCE,
                "tags": {"environment": "test", "team": "ml", "project": "p", "owner": "o", "cost": "c", "app": "a"},
            },
        ),
        ("huaweicloud-kubernetes-shared", f"{C}.storage.shared", {**CCE, "storage.shared": {"kind": "nfs"}}),
        ("huaweicloud-nvme", f"{C}.storage.scratch", {"storage.scratch": "nvme"}),
        ("huaweicloud-fabric-required", f"{C}.fabric", {"fabric": "required"}),
        ("huaweicloud-region-missing", "huaweicloud:region", {"@huaweicloud:region": DROP}),
        ("huaweicloud-region-unknown", "huaweicloud:region", {"@huaweicloud:region": "cn-mars-1"}),
        ("huaweicloud-zone-other-region", f"{C}.zone", {"zone": "cn-east-3a"}),
        ("huaweicloud-zone-number", f"{C}.zone", {"zone": "cn-north-4-1"}),
        ("huaweicloud-image-bad", f"{C}.image", {"image": "Ubuntu 22.04 server 64bit"}),
        ("huaweicloud-key-bad", f"{C}.encryption.key", {"encryption": {"key": "alias/mine"}}),
        ("huaweicloud-with-tencentcloud-key", "tencentcloud:region", {"@tencentcloud:region": "ap-guangzhou"}),
        ("huaweicloud-with-aws-options", f"{C}.aws", {"aws": {}}),
        ("huaweicloud-prometheus-no-login", f"{C}.monitoring.prometheus", {"monitoring": {"prometheus": "selfHosted"}}),
        ("huaweicloud-access-ssm", f"{C}.access", {"access": "ssm"}),
        ("huaweicloud-budget", f"{C}.budget", {"budget": {"monthly": 100, "notify": ["a@example.com"]}}),
        # monitoring.notify: the login node's Prometheus evaluates the rules (none without a login node; CCE has none)
        ("huaweicloud-notify-no-login", f"{C}.monitoring.notify", {"monitoring.notify": ["ops@example.com"]}),
        ("huaweicloud-kubernetes-notify", f"{C}.monitoring.notify", {**CCE, "monitoring.notify": ["ops@example.com"]}),
        (
            "huaweicloud-sshkey-ed25519",
            f"{C}.sshPublicKey",
            {"sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA"},
        ),
        ("huaweicloud-tag-slash", f"{C}.tags.team/ml", {"tags": {"team/ml": "x", "environment": "test"}}),
        ("huaweicloud-tag-key-long", f"{C}.tags.{'k' * 37}", {"tags": {"k" * 37: "x", "environment": "test"}}),
        ("huaweicloud-name-trailing-hyphen", f"{C}.name", {"name": "corpus-"}),
        # monitoring.logs: an LTS group keeps 1 to 365 days (catalog/monitoring.yaml logs.huaweicloud)
        (
            "huaweicloud-logs-retention-over",
            f"{C}.monitoring.logs.retentionDays",
            {"monitoring": {"logs": {"enabled": True, "retentionDays": 366}}},
        ),
        # ICAgent's agency mode needs the region's LTS access address (catalog/logs/huaweicloud.yaml accessIps)
        (
            "huaweicloud-logs-region-unknown-access",
            f"{C}.monitoring.logs.enabled",
            {"@huaweicloud:region": "cn-east-3", "zone": "cn-east-3a", "monitoring": {"logs": {"enabled": True}}},
        ),
        # monitoring.logs.controlPlane on CCE: its log configuration keeps 0 to 30 days and has no IAM authenticator
        # (catalog/monitoring.yaml logs.huaweicloud.kubernetes.controlPlane)
        (
            "huaweicloud-cce-control-plane-retention",
            f"{C}.monitoring.logs.retentionDays",
            {**CCE, "monitoring": {"logs": {"enabled": True, "retentionDays": 60, "controlPlane": ["audit"]}}},
        ),
        (
            "huaweicloud-cce-control-plane-authenticator",
            f"{C}.monitoring.logs.controlPlane",
            {**CCE, "monitoring": {"logs": {"enabled": True, "controlPlane": ["authenticator"]}}},
        ),
    ],
}

# storage.shared (catalog/storage/<cloud>.yaml) on every cloud that builds one: a size off the service's
# increments, `existing` without its mount source, a kind the cloud lacks or the schema does not know, a path
# clashing with scratchPath, a throughput off the tiers (or on a service without tiers).
S = "storage.shared"
SHARED_STORAGE: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "aws": [
        ("shared-size-off", f"{C}.{S}.sizeGb", {S: {"sizeGb": 3000}}),
        ("shared-efs-throughput", f"{C}.{S}.throughput", {S: {"kind": "nfs", "throughput": 250}}),
        ("shared-existing-empty", f"{C}.{S}.existing", {S: {"kind": "existing"}}),
        ("shared-existing-without-kind", f"{C}.{S}.existing", {S: {"existing": "fs-1@tcp:/x"}}),
        ("shared-kind-unknown", f"{C}.{S}.kind", {S: {"kind": "gpfs"}}),
        ("shared-path-scratch", f"{C}.{S}.path", {S: {"path": "/scratch"}}),
        ("shared-path-under-scratch", f"{C}.{S}.path", {S: {"path": "/scratch/shared"}}),
        ("shared-path-relative", f"{C}.{S}.path", {S: {"path": "shared"}}),
        ("shared-path-opt", f"{C}.{S}.path", {S: {"path": "/opt"}}),
        ("shared-throughput-off", f"{C}.{S}.throughput", {S: {"throughput": 300}}),
        ("shared-size-zero", f"{C}.{S}.sizeGb", {S: {"sizeGb": 0}}),
        ("shared-unknown-key", f"{C}.{S}.size", {S: {"size": 1200}}),
    ],
    "azure": [
        ("shared-size-off", f"{C}.{S}.sizeGb", {S: {"sizeGb": 6000}}),
        ("shared-size-off-tier", f"{C}.{S}.sizeGb", {S: {"throughput": 250, "sizeGb": 4096}}),
        ("shared-nfs-size-small", f"{C}.{S}.sizeGb", {S: {"kind": "nfs", "sizeGb": 50}}),
        ("shared-nfs-size-huge", f"{C}.{S}.sizeGb", {S: {"kind": "nfs", "sizeGb": 200000}}),
        ("shared-existing-empty", f"{C}.{S}.existing", {S: {"kind": "existing", "existing": " "}}),
        ("shared-kind-unknown", f"{C}.{S}.kind", {S: {"kind": "cpfs"}}),
        ("shared-path-scratch", f"{C}.{S}.path", {S: {"path": "/scratch"}}),
        ("shared-throughput-off", f"{C}.{S}.throughput", {S: {"throughput": 1000}}),
        ("shared-nfs-throughput", f"{C}.{S}.throughput", {S: {"kind": "nfs", "throughput": 125}}),
        (
            "shared-lustre-existing-network",
            f"{C}.{S}",
            {
                "access": "ssh",
                "network.existing": {
                    "vpcId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/"
                    "Microsoft.Network/virtualNetworks/hub",
                    "subnetIds": [
                        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/"
                        "Microsoft.Network/virtualNetworks/hub/subnets/gpu"
                    ],
                },
                S: {"kind": "lustre"},
            },
        ),
    ],
    "gcp": [
        ("shared-size-off", f"{C}.{S}.sizeGb", {S: {"sizeGb": 10000}}),
        ("shared-filestore-size-off", f"{C}.{S}.sizeGb", {S: {"kind": "nfs", "sizeGb": 1000}}),
        ("shared-existing-empty", f"{C}.{S}.existing", {S: {"kind": "existing"}}),
        ("shared-kind-unknown", f"{C}.{S}.kind", {S: {"kind": "parallelstore"}}),
        ("shared-path-scratch", f"{C}.{S}.path", {S: {"path": "/scratch"}}),
        ("shared-throughput-off", f"{C}.{S}.throughput", {S: {"throughput": 300}}),
    ],
    "alicloud": [
        ("shared-lustre-lacking", f"{C}.{S}.kind", {S: {"kind": "lustre"}}),
        ("shared-existing-empty", f"{C}.{S}.existing", {S: {"kind": "existing"}}),
        ("shared-path-scratch", f"{C}.{S}.path", {S: {"path": "/scratch"}}),
        ("shared-throughput-none", f"{C}.{S}.throughput", {S: {"throughput": 250}}),
        ("shared-existing-without-kind", f"{C}.{S}.existing", {S: {"existing": "x.nas.aliyuncs.com:/"}}),
    ],
    "tencentcloud": [
        ("shared-not-built", f"{C}.{S}.kind", {S: {}}),
    ],
    "huaweicloud": [
        ("shared-size-below", f"{C}.{S}.sizeGb", {S: {"sizeGb": 400}}),
        ("shared-lustre-lacking", f"{C}.{S}.kind", {S: {"kind": "lustre"}}),
        ("shared-throughput-none", f"{C}.{S}.throughput", {S: {"throughput": 250}}),
        ("shared-existing-empty", f"{C}.{S}.existing", {S: {"kind": "existing"}}),
    ],
}

# Files that are broken before any value is read: (name, key named, text)
FILES: list[tuple[str, str, str]] = [
    ("empty", "Pulumi.empty.yaml", ""),
    ("whitespace", "Pulumi.whitespace.yaml", "   \n\n"),
    ("comment-only", "Pulumi.comment-only.yaml", "# nothing here\n"),
    ("yaml-unclosed-bracket", "Pulumi.yaml-unclosed-bracket.yaml", "config: [\n"),
    ("yaml-bad-indent", "Pulumi.yaml-bad-indent.yaml", "config:\n  aws:region: us-east-1\n    gpu: x\n"),
    ("yaml-tab", "Pulumi.yaml-tab.yaml", "config:\n\taws:region: us-east-1\n"),
    ("yaml-list-root", "Pulumi.yaml-list-root.yaml", "- config\n- aws\n"),
    ("yaml-scalar-root", "Pulumi.yaml-scalar-root.yaml", "hello\n"),
    ("config-list", "Pulumi.config-list.yaml: config", "config:\n  - aws:region\n"),
    ("unknown-top-level", "Pulumi.unknown-top-level.yaml: settings", "settings:\n  aws:region: us-east-1\n"),
    ("yaml-duplicate-colon", "Pulumi.yaml-duplicate-colon.yaml", "config:\n  gpu-cluster:cloud: aws: gcp\n"),
]


def _apply(values: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(values)
    for path, value in changes.items():
        if path.startswith("@"):
            target, key = out, path[1:]
        else:
            target = out[C]
            *parents, key = path.split(".")
            for part in parents:
                target = target.setdefault(part, {})
        if value is DROP:
            target.pop(key, None)
        else:
            target[key] = value
    return out


def cases() -> list[tuple[str, str, str, bool]]:
    """(file name, expected key, file text, is_file_level)."""
    out: list[tuple[str, str, str, bool]] = []
    for cloud, base in BASES.items():
        shared = COMMON if cloud == "aws" else [c for c in COMMON if c[0].startswith(SHARED_ACROSS_CLOUDS)]
        for name, key, changes in [*shared, *PER_CLOUD[cloud], *SHARED_STORAGE.get(cloud, [])]:
            values = _apply(base, changes)
            text = yaml.safe_dump({"config": values}, sort_keys=False, width=200)
            stem = name if name.startswith(f"{cloud}-") else f"{cloud}-{name}"
            out.append((f"Pulumi.{stem}.yaml", key, text, False))
    for name, key, text in FILES:
        out.append((f"Pulumi.{name}.yaml", key, text, True))
    return out


# Value errors that are worth repeating on every cloud (the same spec, another cloud's base).
SHARED_ACROSS_CLOUDS = (
    "nodes-string", "nodes-negative", "nodes-huge", "unknown-cluster-key", "scratch-bad", "cidr-public",
    "cidr-malformed", "name-uppercase", "spot-and-reservation", "instances-zero", "nodes-over-max",
    "sshkey-garbage", "cloud-unknown",
)  # fmt: skip


def main() -> None:
    """Write every case; the folder's other files are hand-written cases (kept) or a renamed case's old file, which
    the list printed at the end names for you to remove."""
    made = cases()
    for name, key, text, file_level in made:
        header = f"# expect: {key}\n" + ("# level: file\n" if file_level else "")
        (HERE / name).write_text(header + text)
    written = {name for name, *_ in made}
    others = sorted(p.name for p in HERE.glob("Pulumi.*.yaml") if p.name not in written)
    print(
        f"wrote {len(made)} invalid stack configs to {HERE}; {len(others)} others kept (hand-written, or left by a "
        "renamed case: remove those):"
    )
    print("\n".join(f"  {name}" for name in others))


if __name__ == "__main__":
    main()
