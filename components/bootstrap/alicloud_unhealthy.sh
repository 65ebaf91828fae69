#!/bin/bash
# gpu-cluster: the unhealthy hook of an Alibaba ESS node. Marks this instance Unhealthy in its scaling
# group, so ESS removes it and launches a replacement to keep the desired capacity.
#
# ESS API SetInstanceHealth (version 2014-08-28): InstanceId, HealthStatus=Unhealthy; RAM action
# ess:SetInstanceHealth on acs:ess:{regionId}:{accountId}:scalinggroup/{ScalingGroupId}: the stack grants
# exactly that action on this group to the node's RAM role. The request is signed in shell with the role's STS
# credentials (alicloud_rpc.sh).
#
# Not while the user data is installing the GPU driver in this boot (the node has no GPU until the
# installer's reboot): a node is never replaced for being new.
#
# Environment: METADATA (metadata service), ESS_ENDPOINT, DRIVER_BOOT_FILE, BOOT_ID_FILE (tests).
set -euo pipefail

ESS_ENDPOINT="${ESS_ENDPOINT:-https://ess.aliyuncs.com}"
DRIVER_BOOT_FILE="${DRIVER_BOOT_FILE:-/var/lib/gpu-cluster/gpu-driver-install-boot}"
BOOT_ID_FILE="${BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}"

log() { echo "gpu-cluster-unhealthy: $*" >&2; }

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

driver_installing() {
    [ -f "$DRIVER_BOOT_FILE" ] && [ "$(cat "$DRIVER_BOOT_FILE")" = "$(cat "$BOOT_ID_FILE" 2>/dev/null)" ]
}

main() {
    if driver_installing; then
        log "the GPU driver is being installed in this boot: not asking ESS to replace this node"
        return 0
    fi
    local instance role
    instance=$(metadata instance-id)
    role=$(ram_role)
    [ -n "$role" ] || { log "no RAM role attached: cannot call ESS"; return 1; }
    log "marking ${instance} Unhealthy in its ESS scaling group (ess:SetInstanceHealth)"
    rpc_call "$ESS_ENDPOINT" "$role" SetInstanceHealth 2014-08-28 "HealthStatus=Unhealthy" "InstanceId=${instance}" >&2
    echo >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
