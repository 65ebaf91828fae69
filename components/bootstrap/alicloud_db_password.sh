#!/bin/bash
# gpu-cluster: print the Slurm accounting database's password, for slurm_dbd.sh on the head (Alibaba Cloud).
#
# The password reaches the head only as a KMS ciphertext (DB_PASSWORD_CIPHERTEXT, in /etc/gpu-cluster/db-password.env,
# 0600), bound to ENCRYPTION_CONTEXT, encrypted with the cluster's key (encryption.key) or a key of the password's own;
# the head's own RAM role alone may call kms:Decrypt on that key (the GPU and login nodes carry another role). The
# decryption is the MUNGE key hook's (alicloud_rpc.sh kms_decrypt: signed in shell with the role's STS credentials,
# the metadata service's token first). KMS returns the base64 the stack encrypted; the password itself goes to stdout
# and nothing else: the caller puts it into slurmdbd.conf (0600, SlurmUser). It never reaches argv, a log or stderr.
#
# Environment: ENV_FILE, METADATA (metadata service), and from the env file DB_PASSWORD_CIPHERTEXT, KMS_ENDPOINT,
# ENCRYPTION_CONTEXT (JSON).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-db-password: $*" >&2; }

# shellcheck source=alicloud_rpc.sh
. "${BASH_SOURCE[0]%/*}/alicloud_rpc.sh"

main() {
    local plaintext password status=0
    [ -n "${DB_PASSWORD_CIPHERTEXT:-}" ] && [ -n "${KMS_ENDPOINT:-}" ] || { log "no ciphertext or endpoint in ${ENV_FILE}"; return 1; }
    plaintext=$(kms_decrypt "$KMS_ENDPOINT" "$DB_PASSWORD_CIPHERTEXT" "${ENCRYPTION_CONTEXT:-}") || status=$?
    case "$status" in
        # decoded whole before anything is printed: a bad answer never reaches slurmdbd.conf half-decoded
        0) password=$(base64 -d <<<"$plaintext" 2>/dev/null) || { log "the decrypted password is not base64"; return 1; }
           printf '%s' "$password" ;;
        1) log "no RAM role attached: cannot call KMS" ;;
        2) log "kms:Decrypt failed (the head role's grant on the password's key, or the route to ${KMS_ENDPOINT})" ;;
        *) log "kms:Decrypt returned no plaintext" ;;
    esac
    [ "$status" -eq 0 ]
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
