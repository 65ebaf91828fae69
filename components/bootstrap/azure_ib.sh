#!/bin/bash
# gpu-cluster: check at every boot that an Azure InfiniBand node has what NCCL needs (NDv4, NDv5, ND H200 v5).
#
# The Azure HPC image (microsoft-dsvm:ubuntu-hpc) ships DOCA OFED, NCCL and the per-size NCCL topology files
# in /opt/microsoft, and its sku-customizations unit loads nvidia-peermem (Azure/azhpc-images
# setup_sku_customizations.sh, customizations/ndv4.sh, ndv5.sh). This script checks what NCCL reads on the
# node: the topology file named by NCCL_TOPO_FILE (/etc/gpu-cluster/nccl.env), the nvidia_peermem module for
# GPUDirect RDMA (loaded here when missing) and the InfiniBand ports. It exits 1 naming what is missing, so
# `systemctl status gpu-cluster-azure-ib` says why a node is not ready for NCCL over IB.
#
# Environment: NCCL_TOPO_FILE (the unit reads /etc/gpu-cluster/nccl.env), EXPECTED_IB_DEVICES (IB ports the
# size has); SYSFS_IB and SYSFS_MODULE point elsewhere in tests.
set -uo pipefail

NCCL_TOPO_FILE="${NCCL_TOPO_FILE:-}"
EXPECTED_IB_DEVICES="${EXPECTED_IB_DEVICES:-0}"
SYSFS_IB="${SYSFS_IB:-/sys/class/infiniband}"
SYSFS_MODULE="${SYSFS_MODULE:-/sys/module}"

log() { echo "gpu-cluster-azure-ib: $*" >&2; }

missing=()

if [ -n "$NCCL_TOPO_FILE" ] && [ -s "$NCCL_TOPO_FILE" ]; then
    log "NCCL topology file ${NCCL_TOPO_FILE}"
else
    missing+=("NCCL topology file ${NCCL_TOPO_FILE:-(NCCL_TOPO_FILE not set)}")
fi

if [ ! -d "${SYSFS_MODULE}/nvidia_peermem" ]; then
    log "nvidia_peermem not loaded: loading it"
    modprobe nvidia-peermem || true
fi
if [ -d "${SYSFS_MODULE}/nvidia_peermem" ]; then
    log "nvidia_peermem loaded (GPUDirect RDMA)"
else
    missing+=("the nvidia_peermem kernel module (GPUDirect RDMA)")
fi

# One entry per HCA port; the accelerated-networking VF is an Ethernet port and does not count.
ib=0
for port in "$SYSFS_IB"/*/ports/*; do
    [ -r "$port/link_layer" ] || continue
    if [ "$(cat "$port/link_layer")" = InfiniBand ]; then
        ib=$((ib + 1))
    fi
done
if ((ib >= EXPECTED_IB_DEVICES)); then
    log "${ib} InfiniBand ports"
else
    missing+=("InfiniBand ports: ${ib} of ${EXPECTED_IB_DEVICES}")
fi

if ((${#missing[@]} > 0)); then
    for item in "${missing[@]}"; do
        log "missing: ${item}"
    done
    exit 1
fi
log "ready for NCCL over InfiniBand (environment in /etc/gpu-cluster/nccl.env)"
