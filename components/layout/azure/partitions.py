"""Elastic Slurm partitions on Azure, pure: each partition's nodes and the VM the head's resume program PUTs for one.

Per partition a scale set in Flexible orchestration with no VM profile (components/azure/partitions.py): a container
the node VMs join (platformFaultDomainCount 1, the partition's proximity placement group), as Azure CycleCloud's Slurm
creates one VM per node named after it. The head's program (components/bootstrap/azure_slurm_power.sh) PUTs the VM
`<cluster>-<node>` with the body rendered here: the partition's size, image, disks, customData (the partition's GPU
node cloud-init, gzip: cloud-init unpacks gzip user data), the nodes' identity, Spot with evictionPolicy Delete, and
the NIC made with the VM in the node subnet (networkInterfaceConfigurations, deleted with the VM). The values known
only at deploy (ids, the filled custom data) are placeholders here, replaced by the cloud package; `NODE_TOKEN` is
replaced by the node's name on the head. The bodies travel in the head's userData (the channel) with nodes.conf.
"""

from __future__ import annotations

NODE_TOKEN = "@@GPU_CLUSTER_SLURM_NODE@@"
# what the cloud package fills at deploy (components/azure/partitions.py)
SUBNET = "@@GPU_CLUSTER_AZURE_SUBNET_ID@@"
IDENTITY = "@@GPU_CLUSTER_AZURE_NODE_IDENTITY_ID@@"
SCALE_SET = "@@GPU_CLUSTER_AZURE_SCALE_SET_ID@@"
PPG = "@@GPU_CLUSTER_AZURE_PPG_ID@@"
CUSTOM_DATA = "@@GPU_CLUSTER_AZURE_CUSTOM_DATA@@"
DISK_SET = "@@GPU_CLUSTER_AZURE_DISK_ENCRYPTION_SET_ID@@"
BODY_PREFIX = "azure-launch-"  # a partition's VM body in the channel: azure-launch-<partition>.json


def vm_name(cluster: str, node: str) -> str:
    """The node's VM name and computer name: the cluster's prefix, then the Slurm name (the node strips the prefix)."""
    return f"{cluster}-{node}"
