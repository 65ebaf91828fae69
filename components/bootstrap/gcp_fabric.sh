#!/bin/bash
# gpu-cluster: make a GCP GPU node's fabric usable by NCCL (runs at every boot from the startup script).
#
#   gpudirect-tcpxo (A3 Mega): the DMABUF import helper (DKMS) from Google's gpudirect-tcpxo apt repository,
#     the aperture devices (udev rule written by the bootstrap), docker with the NVIDIA runtime, the TCPXO
#     NCCL plugin installer container (writes /var/lib/tcpxo/lib64 and nccl-env-profile.sh), then the
#     receive-datapath manager (gpu-cluster-rxdm.service) until it reports ready. As Cluster Toolkit's
#     a3mega blueprints and slurm-gcp's receive-data-path-manager-mega do (sources in catalog/gcp.yaml).
#   gpudirect-rdma (A3 Ultra, A4): the gIB NCCL plugin (nccl-gib, held) and ibverbs-utils from Google's
#     gpudirect-gib apt repository, /usr/local/gib/lib64 on the loader path.
#
# The static NCCL environment is in NCCL_ENV (written by the bootstrap before this runs); for TCPXO the
# installer's profile is appended to it, between markers, so a re-run replaces rather than repeats it.
# Settings: /etc/gpu-cluster/gcp-fabric.env. Exit 1 when something the fabric needs is not there.
set -euo pipefail

FABRIC_KIND="${FABRIC_KIND:?FABRIC_KIND is not set}"
NCCL_ENV="${NCCL_ENV:-/etc/gpu-cluster/nccl.env}"
APT_SOURCES="${APT_SOURCES:-/etc/apt/sources.list.d}"
KEYRINGS="${KEYRINGS:-/etc/apt/trusted.gpg.d}"  # apt trusts every *.gpg here
VAR_LIB="${VAR_LIB:-/var/lib}"
RXDM_WAIT="${RXDM_WAIT:-120}"
BEGIN="# >>> from Google's TCPXO installer (gpu-cluster-gcp-fabric)"
END="# <<< from Google's TCPXO installer"

log() { echo "gpu-cluster-gcp-fabric: $*" >&2; }

installed() { dpkg -s "${1%%=*}" >/dev/null 2>&1; }

apt_install() {
    local missing=() pkg
    for pkg in "$@"; do
        installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

# apt_source NAME LINE: one sources.list.d file per repository (rewritten only when it changes)
apt_source() {
    local file="${APT_SOURCES}/$1.list"
    if [ "$(cat "$file" 2>/dev/null)" != "$2" ]; then
        mkdir -p "$APT_SOURCES"
        printf '%s\n' "$2" >"$file"
        apt-get update -q
    fi
}

artifact_registry_transport() {
    apt_source gpu-cluster-artifact-registry "${AR_TRANSPORT_REPO:?}"
    apt_install apt-transport-artifact-registry
}

tcpxo() {
    artifact_registry_transport
    apt_source gpu-cluster-gpudirect-tcpxo "${APT_REPO:?}"
    # shellcheck disable=SC2086 # PACKAGES is a list
    apt_install ${PACKAGES:?}
    modprobe "${MODULE:?}"
    # aperture devices: the udev rule is in place; replay the PCI add events for this boot
    udevadm control --reload-rules
    udevadm trigger --action=add --subsystem-match=pci --attr-match=vendor=0x1ae0
    udevadm settle
    if ! command -v docker >/dev/null 2>&1 || ! command -v nvidia-ctk >/dev/null 2>&1; then
        command -v add-nvidia-repositories >/dev/null 2>&1 && add-nvidia-repositories -y
        apt-get update -q
        # shellcheck disable=SC2086 # CONTAINER_PACKAGES is a list
        apt_install ${CONTAINER_PACKAGES:?}
        nvidia-ctk runtime configure --runtime=docker
        systemctl restart docker
    fi
    # slurm-gcp's RxDM prolog pulls with the node's credentials (gcloud's docker credential helper)
    if command -v gcloud >/dev/null 2>&1; then
        gcloud auth configure-docker --quiet us-docker.pkg.dev >/dev/null 2>&1 || log "gcloud auth configure-docker failed"
    fi
    rm -rf "${VAR_LIB}/tcpxo/lib64"
    docker run --rm --name gpu-cluster-nccl-installer --network=host -v "${VAR_LIB}:/var/lib" \
        "${NCCL_PLUGIN_IMAGE:?}" install --install-nccl
    local profile="${ENV_PROFILE:?}"
    if [ ! -f "$profile" ]; then
        log "the NCCL plugin installer wrote no ${profile}"
        exit 1
    fi
    # NCCL_ENV holds KEY=VALUE lines (sourced with set -a): the profile's `export KEY=VALUE` lines
    sed -i "/^${BEGIN}\$/,/^${END}\$/d" "$NCCL_ENV"
    {
        echo "$BEGIN"
        sed -n 's/^[[:space:]]*export[[:space:]]\{1,\}//p' "$profile"
        echo "$END"
    } >>"$NCCL_ENV"
    systemctl restart gpu-cluster-rxdm.service
    local _
    for _ in $(seq 1 "$RXDM_WAIT"); do
        if journalctl -u gpu-cluster-rxdm.service -b --no-pager 2>/dev/null |
            grep -q "Buffer manager initialization complete"; then
            log "receive-datapath manager ready"
            return 0
        fi
        sleep 1
    done
    log "the receive-datapath manager did not become ready in ${RXDM_WAIT}s (journalctl -u gpu-cluster-rxdm)"
    exit 1
}

rdma() {
    local url name
    mkdir -p "$KEYRINGS"
    for url in ${SIGNING_KEYS:?}; do
        name="${KEYRINGS}/gpu-cluster-$(basename "$url" .gpg).gpg"
        [ -s "$name" ] || curl -fsSL "$url" | gpg --dearmor --yes -o "$name"
    done
    artifact_registry_transport
    apt_source gpu-cluster-gpudirect-gib "${APT_REPO:?}"
    # shellcheck disable=SC2086 # PACKAGES and HOLD are lists
    apt_install ${PACKAGES:?}
    # shellcheck disable=SC2086
    [ -z "${HOLD:-}" ] || apt-mark hold ${HOLD}
    ldconfig
    if [ ! -d "${LIB_DIR:?}" ]; then
        log "the gIB NCCL plugin is not in ${LIB_DIR}"
        exit 1
    fi
    log "gIB NCCL plugin in ${LIB_DIR}"
}

case "$FABRIC_KIND" in
    gpudirect-tcpxo) tcpxo ;;
    gpudirect-rdma) rdma ;;
    *)
        log "nothing to enable for ${FABRIC_KIND}"
        exit 1
        ;;
esac
