#!/bin/bash
# gpu-cluster GRID driver: NVIDIA's vGPU (GRID) guest driver, on a vGPU slice whose cloud publishes no image that
# carries it (Azure NVadsA10 v5 partial sizes, AWS g6f/gr6f: catalog/<cloud>.yaml images.families gridDriver). The
# steps are Azure/aks-gpu's (download.sh, install.sh, blacklist-nouveau.conf) and the EC2 User Guide's for Ubuntu
# (nvidia-GRID-driver.html): blacklist nouveau and rebuild the initramfs, install the running kernel's headers,
# download the runfile the cloud publishes, extract it (-x) and run its nvidia-installer silently with DKMS, then check
# nvidia-smi. Idempotent: nothing happens where nvidia-smi already answers. Runs before the health check.
#   DRIVER_URL       the runfile: https://... (Azure: NVIDIA-Linux-x86_64-<version>-grid-azure.run) or s3://BUCKET/KEY
#                    (AWS: ec2-linux-nvidia-drivers, read with the node role through the AWS CLI)
#   DRIVER_VERSION   its version, checked against what nvidia-smi reports afterwards
#   KERNEL_PACKAGES  apt packages of the running kernel, each NAME installed as NAME-$(uname -r)
#   BLACKLIST_MODULES  modules blacklisted before the install (nouveau also gets modeset=0)
set -euo pipefail

DRIVER_URL="${DRIVER_URL:?DRIVER_URL is required}"
DRIVER_VERSION="${DRIVER_VERSION:?DRIVER_VERSION is required}"
KERNEL_PACKAGES="${KERNEL_PACKAGES:-linux-headers}"
BLACKLIST_MODULES="${BLACKLIST_MODULES:-nouveau}"
WORKDIR="${WORKDIR:-/var/lib/gpu-cluster/grid-driver}"
BLACKLIST="${BLACKLIST:-/etc/modprobe.d/blacklist-nouveau.conf}"
INSTALL_LOG="${INSTALL_LOG:-/var/log/gpu-cluster-grid-driver.log}"

# shellcheck source=aws_cli.sh
. "${BASH_SOURCE[0]%/*}/aws_cli.sh"

log() { echo "gpu-cluster-grid-driver: $*" >&2; }

installed() { nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1; }

# The runfile from its URL: an S3 object with the node's credentials (the region's endpoint names the partition; the
# CLI follows the bucket's region from there), anything else over HTTPS.
fetch() {
  case "$1" in
    s3://*) aws s3 cp --only-show-errors --region "$(aws_region)" "$1" "$2" ;;
    *) curl -fsSL --retry 5 -o "$2" "$1" ;;
  esac
}

if [ -n "$(installed)" ]; then
  log "driver $(installed) answers; nothing to do"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  log "the GRID driver is published for x86_64 only"  # aks-gpu install.sh refuses it elsewhere too
  exit 1
fi
# blacklisted first: linux-modules-extra brings nouveau, which must never bind the vGPU
{
  for module in $BLACKLIST_MODULES; do echo "blacklist $module"; done
  case " $BLACKLIST_MODULES " in *" nouveau "*) echo "options nouveau modeset=0" ;; esac
} >"$BLACKLIST"
export DEBIAN_FRONTEND=noninteractive
kernel="$(uname -r)"
packages=()
for name in $KERNEL_PACKAGES; do packages+=("$name-$kernel"); done
apt-get update -q
apt-get install -y -q build-essential dkms "${packages[@]}"
update-initramfs -u
mkdir -p "$WORKDIR"
runfile="$(basename "$DRIVER_URL")"
fetch "$DRIVER_URL" "$WORKDIR/$runfile"
(cd "$WORKDIR" && sh "./$runfile" -x)
"$WORKDIR/${runfile%.run}/nvidia-installer" -s -k="$kernel" --log-file-name="$INSTALL_LOG" -a --no-drm --dkms
have="$(installed)"
if [ "$have" != "$DRIVER_VERSION" ]; then
  log "nvidia-smi reports driver '${have:-none}', expected $DRIVER_VERSION (see $INSTALL_LOG)"
  exit 1
fi
rm -rf "${WORKDIR:?}/${runfile%.run}" "${WORKDIR:?}/$runfile"
log "installed the GRID driver $DRIVER_VERSION"
