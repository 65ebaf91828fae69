#!/bin/bash
# gpu-cluster GPU driver on Tencent Cloud's public Ubuntu image (catalog/tencentcloud.yaml images.default gpuDriver):
# the image has no NVIDIA driver and the SDK has no argument for the console's automatic install, so the node installs
# Ubuntu's own server driver branch (the nvidia-graphics-drivers-<branch> packages, restricted component) from
# Tencent's private-network Ubuntu mirror, built for the running kernel by DKMS, and checks that nvidia-smi answers
# with that branch. Idempotent: nothing happens where nvidia-smi already answers. Runs before the health check.
#   DRIVER_BRANCH  the branch, as the package names carry it (580-server)
#   PACKAGES       the packages installed (nvidia-headless-<branch> nvidia-utils-<branch>)
#   MIRROR         the Ubuntu archive mirror (http://mirrors.tencentyun.com/ubuntu)
set -euo pipefail

DRIVER_BRANCH="${DRIVER_BRANCH:?DRIVER_BRANCH is required}"
PACKAGES="${PACKAGES:?PACKAGES is required}"
MIRROR="${MIRROR:?MIRROR is required}"
OS_RELEASE="${OS_RELEASE:-/etc/os-release}"
SOURCES="${SOURCES:-/etc/apt/sources.list.d/gpu-cluster-nvidia.list}"
BLACKLIST="${BLACKLIST:-/etc/modprobe.d/blacklist-nouveau.conf}"

log() { echo "gpu-cluster-gpu-driver: $*" >&2; }

installed() { nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1; }

if [ -n "$(installed)" ]; then
  log "driver $(installed) answers; nothing to do"
  exit 0
fi
codename="$(sed -n 's/^VERSION_CODENAME=//p' "$OS_RELEASE" | tr -d '"')"
if [ -z "$codename" ]; then
  log "no VERSION_CODENAME in $OS_RELEASE: not an Ubuntu image, install the driver another way"
  exit 1
fi
# the restricted component of the release, its updates and its security pocket (where the driver branches are updated)
{
  for pocket in "" -updates -security; do echo "deb $MIRROR $codename$pocket restricted"; done
} >"$SOURCES"
# nouveau must never bind the GPU the NVIDIA module is loaded for
printf 'blacklist nouveau\noptions nouveau modeset=0\n' >"$BLACKLIST"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086  # PACKAGES is a list of package names
apt-get install -y -q --no-install-recommends "linux-headers-$(uname -r)" $PACKAGES
modprobe nvidia
have="$(installed)"
case "$have" in
  "${DRIVER_BRANCH%%-*}".*) ;;
  *)
    log "nvidia-smi reports driver '${have:-none}', expected the ${DRIVER_BRANCH%%-*} branch"
    exit 1
    ;;
esac
log "installed the NVIDIA driver $have (Ubuntu's $DRIVER_BRANCH branch from $MIRROR)"
