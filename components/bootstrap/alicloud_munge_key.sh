#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Alibaba Cloud.
#
# The key reaches the node only as a KMS ciphertext (MUNGE_CIPHERTEXT, in /etc/gpu-cluster/munge-key.env, 0600),
# encrypted with the cluster's own KMS key and bound to ENCRYPTION_CONTEXT. This hook calls KMS Decrypt (API version
# 2016-01-20) through the shared gateway's VPC domain (KMS_ENDPOINT) with the node RAM role's STS credentials from the
# metadata service; the role may call kms:Decrypt on exactly that key. The aliyun CLI is not on Alibaba's public
# Ubuntu images, so the request is signed here (RPC signature v1, as alicloud_unhealthy.sh does). Nothing but the key
# goes to stdout; the caller decodes it into /etc/munge/munge.key. Errors go to stderr without the key.
#
# Environment: ENV_FILE, METADATA (metadata service), and from the env file MUNGE_CIPHERTEXT, KMS_ENDPOINT,
# ENCRYPTION_CONTEXT (JSON).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"
METADATA="${METADATA:-http://100.100.100.200/latest/meta-data}"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

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

# a string field of a flat JSON object
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

main() {
    local role creds key secret token nonce stamp signature answer plaintext
    [ -n "${MUNGE_CIPHERTEXT:-}" ] && [ -n "${KMS_ENDPOINT:-}" ] || { log "no ciphertext or endpoint in ${ENV_FILE}"; return 1; }
    role=$(metadata ram/security-credentials/ | head -n 1)
    [ -n "$role" ] || { log "no RAM role attached: cannot call KMS"; return 1; }
    creds=$(metadata "ram/security-credentials/${role}")
    key=$(field AccessKeyId <<<"$creds")
    secret=$(field AccessKeySecret <<<"$creds")
    token=$(field SecurityToken <<<"$creds")
    nonce=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || date +%s%N)
    stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    local params=(
        "AccessKeyId=${key}" "Action=Decrypt" "CiphertextBlob=${MUNGE_CIPHERTEXT}" "Format=JSON"
        "SecurityToken=${token}" "SignatureMethod=HMAC-SHA1" "SignatureNonce=${nonce}" "SignatureVersion=1.0"
        "Timestamp=${stamp}" "Version=2016-01-20"
    )
    if [ -n "${ENCRYPTION_CONTEXT:-}" ]; then
        params+=("EncryptionContext=${ENCRYPTION_CONTEXT}")
    fi
    signature=$(rpc_signature "$secret" "${params[@]}")
    # the answer holds the key: it stays in this variable, never in a log
    if ! answer=$(curl -fsS --max-time 10 --retry 3 \
        "${KMS_ENDPOINT}/?$(canonical_query "${params[@]}")&Signature=$(encode "$signature")" 2>/dev/null); then
        log "kms:Decrypt failed (role ${role})"
        return 1
    fi
    plaintext=$(field Plaintext <<<"$answer")
    [ -n "$plaintext" ] || { log "kms:Decrypt returned no plaintext"; return 1; }
    printf '%s\n' "$plaintext"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
