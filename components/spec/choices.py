"""The closed sets of values a key takes: each a named `Choice`, with a description per value where the name alone
does not say it (the generated enums and the docs' key table read them)."""

from __future__ import annotations

from typing import Annotated, Literal

from .markers import Choice

SharedKind = Annotated[
    Literal["auto", "lustre", "nfs", "existing"],
    Choice(
        "SharedStorageKind",
        "The kind of shared filesystem.",
        {
            "auto": "The cloud's Lustre service where it has one, else its NFS service.",
            "lustre": "The cloud's managed Lustre (FSx for Lustre, Azure Managed Lustre, Managed Lustre, CPFS).",
            "nfs": "The cloud's managed NFS (EFS, Azure Files NFS, Filestore, NAS).",
            "existing": "A filesystem that exists: its mount source in `existing`.",
        },
    ),
]
ScratchKind = Annotated[Literal["auto", "nvme", "disk", "none"], Choice("Scratch", "Node-local scratch space.")]
Egress = Annotated[Literal["nat", "none"], Choice("Egress", "Outbound access of the nodes.")]
PerformanceLevel = Annotated[
    Literal["PL0", "PL1", "PL2", "PL3"], Choice("ScratchPerformanceLevel", "Alibaba ESSD performance level.")
]
HealthAction = Annotated[Literal["auto", "replace", "report"], Choice("HealthAction", "What an unhealthy node gets.")]
SlurmContainers = Annotated[
    Literal["none", "pyxis"], Choice("SlurmContainers", "Containers in Slurm jobs (pyxis: NVIDIA's enroot and pyxis).")
]
ControlPlaneLog = Annotated[
    Literal["api", "audit", "authenticator", "controllerManager", "scheduler"],
    Choice(
        "ControlPlaneLog",
        "A Kubernetes control plane log type (EKS: botocore eks LogType).",
        {
            "api": "The API server's own log.",
            "audit": "Who did what through the API, request by request.",
            "authenticator": "The IAM authenticator: which IAM principal became which Kubernetes user.",
            "controllerManager": "The controller manager (node, replication, service account controllers).",
            "scheduler": "The scheduler: where each pod was placed and why.",
        },
    ),
]
GpuSoftware = Annotated[
    Literal["operator", "device-plugin"],
    Choice(
        "GpuSoftware",
        "The NVIDIA software installed in a Kubernetes cluster.",
        {
            "operator": "The NVIDIA GPU operator (its driver off where the image or the cloud installs one).",
            "device-plugin": "NVIDIA's device plugin alone.",
        },
    ),
]
SpotFallback = Annotated[
    Literal["onDemand", "none"],
    Choice(
        "SpotFallback",
        "What a Spot mix does when Spot capacity is short.",
        {
            "onDemand": "Launch on-demand nodes instead (where the cloud's group can).",
            "none": "Wait for Spot capacity (default).",
        },
    ),
]
ScalingMetric = Annotated[
    Literal["gpuUtilization", "queueDepth", "schedule", "none"],
    Choice(
        "ScalingMetric",
        "What moves a managed group between minNodes and maxNodes.",
        {
            "gpuUtilization": "The DCGM GPU utilisation, in percent.",
            "queueDepth": "Messages waiting in a cloud queue, per node.",
            "schedule": "Sizes set by cron entries alone.",
            "none": "Nothing (default).",
        },
    ),
]
EncryptionAlgorithm = Annotated[
    Literal["aes256", "sm4"],
    Choice(
        "EncryptionAlgorithm",
        "The algorithm of a key the stack creates (key auto).",
        {"aes256": "AES-256 (default).", "sm4": "Alibaba KMS Aliyun_SM4 keys, in a KMS instance (kmsInstance)."},
    ),
]
NodeGroup = Annotated[
    Literal["managed", "instances"],
    Choice(
        "NodeGroup",
        "How the nodes are grouped.",
        {
            "managed": "The cloud's scaling group (Auto Scaling group, scale set, managed instance group, ESS).",
            "instances": "A fixed list of VMs.",
        },
    ),
]
ReservationType = Annotated[
    Literal["odcr", "capacity-block"], Choice("ReservationType", "AWS: the kind of reservation.")
]
Fabric = Annotated[
    Literal["auto", "required", "none"], Choice("Fabric", "The HPC fabric (EFA, InfiniBand, GPUDirect, eRDMA).")
]
Placement = Annotated[Literal["auto", "cluster", "spread", "none"], Choice("Placement", "Placement of the nodes.")]
Access = Annotated[
    Literal["auto", "ssm", "iap", "bastion", "session-manager", "ssh", "none"],
    Choice("Access", "How people reach the nodes (auto: the cloud's default)."),
]
Scheduler = Annotated[
    Literal["none", "kubernetes", "slurm"],
    Choice(
        "Scheduler",
        "What schedules work on the GPU nodes.",
        {
            "none": "Nothing: the nodes as they are (default).",
            "kubernetes": "The cloud's managed Kubernetes (EKS, GKE, AKS, ACK) with the GPU nodes as a node pool.",
            "slurm": "A Slurm head node; the GPU nodes run slurmd.",
        },
    ),
]
UpdateStrategy = Annotated[
    Literal["rolling", "manual"],
    Choice(
        "UpdateStrategy",
        "How a managed group's running nodes take a new image, driver or template.",
        {
            "rolling": "Drain, then replace in batches with the cloud's own machinery (default).",
            "manual": "Nothing rolls: new nodes launch with the change, running ones keep theirs until replaced.",
        },
    ),
]
BudgetCurrency = Annotated[
    Literal["auto", "USD", "CNY"],
    Choice(
        "BudgetCurrency",
        "The currency of a budget's amount: the one the cloud bills in (catalog/capabilities/<cloud>.yaml `budget:`).",
        {
            "auto": "The cloud's billing currency (default).",
            "USD": "US dollars (AWS, Azure, GCP).",
            "CNY": "Chinese yuan (Alibaba Cloud, Tencent Cloud).",
        },
    ),
]
ServeProtocol = Annotated[
    Literal["http", "tcp"],
    Choice(
        "ServeProtocol",
        "What the serving endpoint speaks.",
        {
            "http": "HTTP: the health check asks healthPath for a 2xx; TLS at the load balancer with a certificate.",
            "tcp": "Plain TCP: the health check opens a connection to the port.",
        },
    ),
]
Compliance = Annotated[
    Literal["none", "cis", "mlps3"],
    Choice(
        "Compliance",
        "A named set of policy rules and their levels (components/policy/profiles.yaml).",
        {
            "none": "No profile: the policy pack's default levels.",
            "cis": "The cluster-level controls of the cloud's CIS benchmark.",
            "mlps3": "GB/T 22239-2019 level 3 (等保 2.0 三级) controls a cluster stack can meet.",
        },
    ),
]
