#!/bin/bash
# gpu-cluster: install the eRDMA stack (after the GPU driver), bring up every ERI (Alibaba elastic RDMA
# interface) of a GPU node and set its MTU for NCCL.
#
# Order (Alibaba doc 2248432, "configure eRDMA on GPU instances", as quoted in research review-2): the
# eRDMA-only install (`env_setup.sh --egs`) is for a host whose GPU driver and CUDA are already installed,
# then `eadm ver`, `dhclient -v eth1`, and both eRDMA ports ACTIVE in `ibv_devinfo`. When the node's
# user data is installing the GPU driver in this very boot (it reboots the node when done), the stack is
# deferred to the next boot, where this unit runs again.
#
# An ERI is an ENI in HighPerformance mode. The image configures the primary ENI only, so the secondary
# one stays down without an address until something runs DHCP on it. NCCL over eRDMA needs MTU 8500 with
# jumbo frames and 1400 without them (Alibaba "Enable eRDMA on GPU instances"; a wrong MTU causes
# data-consistency problems).
#
# Environment (/etc/gpu-cluster/erdma.env): ERI_COUNT (ERIs wired on this node, primary first), MTU (the
# value for every ERI), ERDMA_INSTALLER (URL of Alibaba's env_setup.sh; empty: never install),
# DRIVER_BOOT_FILE (the boot id the GPU-driver step of the user data recorded when it started).
# Runs at every boot: leases and MTUs do not survive a reboot. Exit 1 when fewer ERIs come up than were
# wired, so `systemctl --failed` shows a half-rate node.
set -euo pipefail

ERI_COUNT="${ERI_COUNT:?ERI_COUNT is not set}"
MTU="${MTU:?MTU is not set}"
NETWORKD_DIR="${NETWORKD_DIR:-/run/systemd/network}"
ERDMA_INSTALLER="${ERDMA_INSTALLER:-}"
DRIVER_BOOT_FILE="${DRIVER_BOOT_FILE:-/var/lib/gpu-cluster/gpu-driver-install-boot}"
BOOT_ID_FILE="${BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}"

log() { echo "gpu-cluster-erdma: $*" >&2; }

# The user data started the GPU driver installer in this boot (it reboots the node when it is done).
driver_installing() {
    [ -f "$DRIVER_BOOT_FILE" ] && [ "$(cat "$DRIVER_BOOT_FILE")" = "$(cat "$BOOT_ID_FILE" 2>/dev/null)" ]
}

install_stack() {
    local dir
    dir=$(mktemp -d)
    log "installing the eRDMA stack for GPU instances: ${ERDMA_INSTALLER} --egs"
    (cd "$dir" && wget -q -t 10 --timeout=10 -O env_setup.sh "$ERDMA_INSTALLER" && bash env_setup.sh --egs)
    eadm ver >&2 || true
}

deferred=0
if ! command -v eadm >/dev/null 2>&1; then
    if [ -z "$ERDMA_INSTALLER" ]; then
        log "eadm not found and no installer configured: the image must bring the eRDMA stack"
    elif driver_installing; then
        log "the GPU driver is being installed in this boot: the eRDMA stack follows it at the next boot"
        deferred=1
    else
        install_stack
    fi
fi

# ENIs in kernel index order (eth0 = primary ENI, eth1 = the first secondary ENI, ...).
mapfile -t nics < <(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(eth|en)' || true)
if ((${#nics[@]} < ERI_COUNT)); then
    log "expected ${ERI_COUNT} ERIs, found ${#nics[@]} interfaces: ${nics[*]:-none}"
    exit 1
fi

has_ipv4() { ip -4 -o addr show dev "$1" | grep -q ' inet '; }

dhcp() {
    local nic="$1"
    if command -v dhclient >/dev/null 2>&1; then
        dhclient -v "$nic"
    else
        # images without dhclient (newer Ubuntu): a runtime networkd unit for the interface
        mkdir -p "$NETWORKD_DIR"
        printf '[Match]\nName=%s\n\n[Network]\nDHCP=ipv4\n\n[Link]\nMTUBytes=%s\n' "$nic" "$MTU" \
            >"${NETWORKD_DIR}/10-gpu-cluster-${nic}.network"
        networkctl reload
        networkctl reconfigure "$nic"
    fi
}

for nic in "${nics[@]:0:ERI_COUNT}"; do
    ip link set dev "$nic" up
    if ! has_ipv4 "$nic"; then
        log "${nic}: no IPv4 address, running DHCP"
        dhcp "$nic"
    fi
    # after DHCP: a lease may carry its own MTU
    ip link set dev "$nic" mtu "$MTU"
    log "${nic}: up, mtu ${MTU}"
done

# The eRDMA devices (one per ERI) must be ACTIVE; ibv_devinfo comes with the eRDMA stack.
if command -v ibv_devinfo >/dev/null 2>&1; then
    active=$(ibv_devinfo | grep -c 'PORT_ACTIVE' || true)
    if ((active < ERI_COUNT)); then
        log "${active} of ${ERI_COUNT} eRDMA ports are ACTIVE (ibv_devinfo)"
        exit 1
    fi
    log "${active} eRDMA ports ACTIVE"
elif ((deferred)); then
    log "ibv_devinfo not found: the eRDMA stack is installed at the next boot, after the GPU driver"
else
    log "ibv_devinfo not found: the eRDMA software stack is not installed"
    exit 1
fi
