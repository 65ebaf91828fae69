#!/bin/bash
# gpu-cluster: the unhealthy hook of an Alibaba ESS node. Marks this instance Unhealthy in its scaling
# group, so ESS removes it and launches a replacement to keep the desired capacity.
#
# ESS API SetInstanceHealth (version 2014-08-28): InstanceId, HealthStatus=Unhealthy; RAM action
# ess:SetInstanceHealth on acs:ess:{regionId}:{accountId}:scalinggroup/{ScalingGroupId}: the stack grants
# exactly that action on this group to the node's RAM role. The aliyun CLI is not on Alibaba's public
# Ubuntu images, so the request is signed here (RPC signature v1: HMAC-SHA1 of the sorted, percent-encoded
# query with "<AccessKeySecret>&"), with the role's STS credentials from the metadata service.
#
# Not while the user data is installing the GPU driver in this boot (the node has no GPU until the
# installer's reboot): a node is never replaced for being new.
#
# Environment: METADATA (metadata service), ESS_ENDPOINT, DRIVER_BOOT_FILE, BOOT_ID_FILE (tests).
set -euo pipefail

METADATA="${METADATA:-http://100.100.100.200/latest/meta-data}"
ESS_ENDPOINT="${ESS_ENDPOINT:-https://ess.aliyuncs.com}"
DRIVER_BOOT_FILE="${DRIVER_BOOT_FILE:-/var/lib/gpu-cluster/gpu-driver-install-boot}"
BOOT_ID_FILE="${BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}"

log() { echo "gpu-cluster-unhealthy: $*" >&2; }

# RFC 3986 percent-encoding as Alibaba's RPC signature wants it: only A-Z a-z 0-9 - _ . ~ stay literal.
encode() {
    local LC_ALL=C
    local text="$1" out="" char i
    for ((i = 0; i < ${#text}; i++)); do
        char="${text:i:1}"
        case "$char" in
            [A-Za-z0-9._~-]) out+="$char" ;;
            *) printf -v char '%%%02X' "'$char" && out+="$char" ;;
        esac
    done
    printf '%s' "$out"
}

# The canonical query of KEY=VALUE arguments: each side encoded, sorted by key, joined with '&'.
canonical_query() {
    local pair
    for pair in "$@"; do
        printf '%s=%s\n' "$(encode "${pair%%=*}")" "$(encode "${pair#*=}")"
    done | LC_ALL=C sort | paste -sd '&' -
}

# rpc_signature SECRET KEY=VALUE...: Base64(HMAC-SHA1(SECRET&, "GET&%2F&" + encode(canonical query)))
rpc_signature() {
    local secret="$1"
    shift
    printf 'GET&%%2F&%s' "$(encode "$(canonical_query "$@")")" |
        openssl dgst -sha1 -hmac "${secret}&" -binary | openssl base64 -A
}

metadata() { curl -fsS --max-time 5 --retry 3 "${METADATA}/$1"; }

# a string field of the (flat) STS credentials JSON
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

driver_installing() {
    [ -f "$DRIVER_BOOT_FILE" ] && [ "$(cat "$DRIVER_BOOT_FILE")" = "$(cat "$BOOT_ID_FILE" 2>/dev/null)" ]
}

main() {
    if driver_installing; then
        log "the GPU driver is being installed in this boot: not asking ESS to replace this node"
        return 0
    fi
    local instance role creds key secret token nonce stamp signature
    instance=$(metadata instance-id)
    role=$(metadata ram/security-credentials/ | head -n 1)
    [ -n "$role" ] || { log "no RAM role attached: cannot call ESS"; return 1; }
    creds=$(metadata "ram/security-credentials/${role}")
    key=$(field AccessKeyId <<<"$creds")
    secret=$(field AccessKeySecret <<<"$creds")
    token=$(field SecurityToken <<<"$creds")
    nonce=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || date +%s%N)
    stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    local params=(
        "AccessKeyId=${key}" "Action=SetInstanceHealth" "Format=JSON" "HealthStatus=Unhealthy"
        "InstanceId=${instance}" "SecurityToken=${token}" "SignatureMethod=HMAC-SHA1"
        "SignatureNonce=${nonce}" "SignatureVersion=1.0" "Timestamp=${stamp}" "Version=2014-08-28"
    )
    signature=$(rpc_signature "$secret" "${params[@]}")
    log "marking ${instance} Unhealthy in its ESS scaling group (ess:SetInstanceHealth)"
    curl -fsS --max-time 10 --retry 3 \
        "${ESS_ENDPOINT}/?$(canonical_query "${params[@]}")&Signature=$(encode "$signature")" >&2
    echo >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
