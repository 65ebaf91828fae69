#!/bin/bash
# gpu-cluster container runtime: Docker with the NVIDIA runtime, which the DCGM exporter (and any
# GPU container) needs. Idempotent: nothing happens where both are already there (the AWS DLAMI, the
# Azure HPC image). Elsewhere: docker.io from the Ubuntu archive and nvidia-container-toolkit from
# NVIDIA's repository, as NVIDIA's Container Toolkit install guide gives it (apt: the gpgkey, the
# stable/deb list with signed-by, apt-get install, then `nvidia-ctk runtime configure --runtime=docker`).
set -euo pipefail

KEYRING="${KEYRING:-/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg}"
LIST="${LIST:-/etc/apt/sources.list.d/nvidia-container-toolkit.list}"
REPO="${REPO:-https://nvidia.github.io/libnvidia-container}"

log() { echo "gpu-cluster-container-runtime: $*" >&2; }

if command -v docker >/dev/null 2>&1 && command -v nvidia-ctk >/dev/null 2>&1; then
  log "docker and the NVIDIA container toolkit are installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! command -v nvidia-ctk >/dev/null 2>&1; then
  curl -fsSL "$REPO/gpgkey" | gpg --batch --yes --dearmor -o "$KEYRING"
  curl -fsSL "$REPO/stable/deb/nvidia-container-toolkit.list" |
    sed "s#deb https://#deb [signed-by=$KEYRING] https://#g" >"$LIST"
fi
apt-get update -q
command -v docker >/dev/null 2>&1 || apt-get install -y -q docker.io
command -v nvidia-ctk >/dev/null 2>&1 || apt-get install -y -q nvidia-container-toolkit
nvidia-ctk runtime configure --runtime=docker
systemctl restart docker
log "installed docker and the NVIDIA container toolkit"
