#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Alibaba Cloud.
#
# The key reaches the node only as a KMS ciphertext (MUNGE_CIPHERTEXT, in /etc/gpu-cluster/munge-key.env, 0600),
# encrypted with the cluster's own KMS key and bound to ENCRYPTION_CONTEXT. This hook calls KMS Decrypt (API version
# 2016-01-20) through the shared gateway's VPC domain (KMS_ENDPOINT) with the node RAM role's STS credentials from the
# metadata service; the role may call kms:Decrypt on exactly that key. The request is signed in shell
# (alicloud_rpc.sh). Nothing but the key
# goes to stdout; the caller decodes it into /etc/munge/munge.key. Errors go to stderr without the key.
#
# Environment: ENV_FILE, METADATA (metadata service), and from the env file MUNGE_CIPHERTEXT, KMS_ENDPOINT,
# ENCRYPTION_CONTEXT (JSON).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

main() {
    local role answer plaintext
    [ -n "${MUNGE_CIPHERTEXT:-}" ] && [ -n "${KMS_ENDPOINT:-}" ] || { log "no ciphertext or endpoint in ${ENV_FILE}"; return 1; }
    role=$(ram_role)
    [ -n "$role" ] || { log "no RAM role attached: cannot call KMS"; return 1; }
    local params=("CiphertextBlob=${MUNGE_CIPHERTEXT}")
    if [ -n "${ENCRYPTION_CONTEXT:-}" ]; then
        params+=("EncryptionContext=${ENCRYPTION_CONTEXT}")
    fi
    # the answer holds the key: it stays in this variable, never in a log
    if ! answer=$(rpc_call "$KMS_ENDPOINT" "$role" Decrypt 2016-01-20 "${params[@]}" 2>/dev/null); then
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
