#!/bin/bash
# gpu-cluster Slurm containers (slurm.containers: pyxis): NVIDIA's enroot and pyxis, so that
# `srun --container-image=nvcr.io#nvidia/pytorch:<tag> ...` runs a job in a container. A oneshot unit ordered before
# slurmd (GPU nodes) or sackd (login node): the daemon starts with the plugin in place. Idempotent, every boot.
#   GPU nodes:  enroot (the .deb packages of its release, and enroot+caps so users import images unprivileged), then
#               pyxis built against this node's Slurm (slurm-smd-dev of the pinned version: pyxis "must be compiled
#               against the release of Slurm that is going to be deployed", its README)
#   login node: pyxis only (srun loads the plugin to take --container-image)
# Settings (/etc/gpu-cluster/slurm-containers.env), with slurm_common.sh's SLURM_* for the dev package:
#   ENROOT_VERSION ENROOT_URL (with {version} and {arch}) ENROOT (true: install it) PYXIS_REPO PYXIS_VERSION
#   PLUGSTACK_DIR (default /etc/slurm/plugstack.conf.d) BUILD_DIR (default /var/lib/gpu-cluster/pyxis)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=slurm_common.sh
. "${SLURM_COMMON:-/usr/local/lib/gpu-cluster/slurm_common.sh}"

PLUGSTACK_DIR="${PLUGSTACK_DIR:-/etc/slurm/plugstack.conf.d}"
BUILD_DIR="${BUILD_DIR:-/var/lib/gpu-cluster/pyxis}"
PYXIS_PREFIX="${PYXIS_PREFIX:-/usr/local}"

install_enroot() {
  local arch url pkg tmp
  [ "$(dpkg-query -W -f='${Version}' enroot 2>/dev/null)" = "${ENROOT_VERSION}-1" ] && return 0
  arch=$(dpkg --print-architecture) || return 1
  tmp=$(mktemp -d) || return 1
  for pkg in enroot enroot+caps; do
    url="${ENROOT_URL//\{version\}/$ENROOT_VERSION}"
    url="${url//\{arch\}/$arch}"
    url="${url//\{package\}/$pkg}"
    retry curl -fsSL -o "${tmp}/${pkg}.deb" "$url" || { rm -rf "$tmp"; return 1; }
  done
  retry apt-get install -y -q "${tmp}/enroot.deb" "${tmp}/enroot+caps.deb" || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
  log "enroot ${ENROOT_VERSION} installed"
}

install_pyxis() {
  local version
  if [ -f "${BUILD_DIR}/.built-${PYXIS_VERSION}-${SLURM_VERSION}" ] && [ -L "${PLUGSTACK_DIR}/pyxis.conf" ]; then
    return 0
  fi
  retry add_slurm_repo || return 1
  version=$(slurm_debian_version)
  [ -n "$version" ] || { log "slurm-smd ${SLURM_VERSION} is not in ${SLURM_REPO}"; return 1; }
  retry apt-get install -y -q build-essential git "slurm-smd-dev=${version}" || return 1
  rm -rf "$BUILD_DIR" && mkdir -p "$(dirname "$BUILD_DIR")" || return 1
  retry git clone --quiet --depth 1 --branch "$PYXIS_VERSION" "$PYXIS_REPO" "$BUILD_DIR" || return 1
  make -C "$BUILD_DIR" prefix="$PYXIS_PREFIX" install >/dev/null || return 1
  mkdir -p "$PLUGSTACK_DIR" && ln -sf "${PYXIS_PREFIX}/share/pyxis/pyxis.conf" "${PLUGSTACK_DIR}/pyxis.conf" || return 1
  touch "${BUILD_DIR}/.built-${PYXIS_VERSION}-${SLURM_VERSION}"
  log "pyxis ${PYXIS_VERSION} built against slurm-smd ${version}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "${ENROOT:-false}" = true ]; then install_enroot || exit 1; fi
  install_pyxis || exit 1
fi
