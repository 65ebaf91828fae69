#!/bin/bash
# gpu-cluster GRID driver: NVIDIA's vGPU (GRID) guest driver, on a vGPU slice whose cloud publishes no image that
# carries it (Azure NVadsA10 v5 partial sizes: catalog/azure.yaml images.families gridDriver). The steps are
# Azure/aks-gpu's (download.sh, install.sh, blacklist-nouveau.conf): blacklist nouveau and rebuild the initramfs,
# download the runfile Microsoft publishes, extract it (-x) and run its nvidia-installer silently with DKMS, then
# check nvidia-smi. Idempotent: nothing happens where nvidia-smi already answers. Runs before the health check.
#   DRIVER_URL      the runfile (NVIDIA-Linux-x86_64-<version>-grid-azure.run)
#   DRIVER_VERSION  its version, checked against what nvidia-smi reports afterwards
set -euo pipefail

DRIVER_URL="${DRIVER_URL:?DRIVER_URL is required}"
DRIVER_VERSION="${DRIVER_VERSION:?DRIVER_VERSION is required}"
WORKDIR="${WORKDIR:-/var/lib/gpu-cluster/grid-driver}"
BLACKLIST="${BLACKLIST:-/etc/modprobe.d/blacklist-nouveau.conf}"
INSTALL_LOG="${INSTALL_LOG:-/var/log/gpu-cluster-grid-driver.log}"

log() { echo "gpu-cluster-grid-driver: $*" >&2; }

installed() { nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1; }

if [ -n "$(installed)" ]; then
  log "driver $(installed) answers; nothing to do"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  log "the GRID driver is published for x86_64 only"  # aks-gpu install.sh refuses it elsewhere too
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q build-essential dkms "linux-headers-$(uname -r)"
printf 'blacklist nouveau\noptions nouveau modeset=0\n' >"$BLACKLIST"
update-initramfs -u
mkdir -p "$WORKDIR"
runfile="$(basename "$DRIVER_URL")"
curl -fsSL --retry 5 -o "$WORKDIR/$runfile" "$DRIVER_URL"
(cd "$WORKDIR" && sh "./$runfile" -x)
"$WORKDIR/${runfile%.run}/nvidia-installer" -s -k="$(uname -r)" --log-file-name="$INSTALL_LOG" -a --no-drm --dkms
have="$(installed)"
if [ "$have" != "$DRIVER_VERSION" ]; then
  log "nvidia-smi reports driver '${have:-none}', expected $DRIVER_VERSION (see $INSTALL_LOG)"
  exit 1
fi
rm -rf "${WORKDIR:?}/${runfile%.run}" "${WORKDIR:?}/$runfile"
log "installed the GRID driver $DRIVER_VERSION"
