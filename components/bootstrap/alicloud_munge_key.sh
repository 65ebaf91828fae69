#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Alibaba Cloud.
#
# The key reaches the node only as a KMS ciphertext (MUNGE_CIPHERTEXT, in /etc/gpu-cluster/munge-key.env, 0600),
# encrypted with the cluster's own KMS key and bound to ENCRYPTION_CONTEXT. This hook calls KMS Decrypt (API version
# 2016-01-20) through the shared gateway's VPC domain (KMS_ENDPOINT) with the node RAM role's STS credentials from the
# metadata service; the role may call kms:Decrypt on exactly that key. The request is signed in shell and the
# decryption shared with the accounting database's password hook (alicloud_rpc.sh kms_decrypt). Nothing but the key
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
    local plaintext status=0
    [ -n "${MUNGE_CIPHERTEXT:-}" ] && [ -n "${KMS_ENDPOINT:-}" ] || { log "no ciphertext or endpoint in ${ENV_FILE}"; return 1; }
    plaintext=$(kms_decrypt "$KMS_ENDPOINT" "$MUNGE_CIPHERTEXT" "${ENCRYPTION_CONTEXT:-}") || status=$?
    case "$status" in
        0) printf '%s\n' "$plaintext" ;;
        1) log "no RAM role attached: cannot call KMS" ;;
        2) log "kms:Decrypt failed (the role's grant on the cluster's key, or the route to ${KMS_ENDPOINT})" ;;
        *) log "kms:Decrypt returned no plaintext" ;;
    esac
    [ "$status" -eq 0 ]
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
