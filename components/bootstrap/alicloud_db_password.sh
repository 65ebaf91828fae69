#!/bin/bash
# gpu-cluster: print the Slurm accounting database's password, for slurm_dbd.sh on the head (Alibaba Cloud).
#
# The password reaches the head only as a KMS ciphertext (in /etc/gpu-cluster/db-password.env, 0600), bound to
# ENCRYPTION_CONTEXT, encrypted with the cluster's key (encryption.key) or a key of the password's own; the head's own
# RAM role alone may call kms:Decrypt on that key (the GPU and login nodes carry another role). The decryption is the
# MUNGE key hook's, run as it is installed on the head (DECRYPT, alicloud_munge_key.sh: KMS Decrypt signed in shell
# with the role's STS credentials) with this env file instead of its own, so the env file names the ciphertext as that
# hook reads it (MUNGE_CIPHERTEXT) and every node keeps its hook unchanged. KMS returns the base64 the stack encrypted;
# the password itself goes to stdout and nothing else: the caller puts it into slurmdbd.conf (0600, SlurmUser). It
# never reaches argv, a log or stderr.
#
# Environment: ENV_FILE (default /etc/gpu-cluster/db-password.env: MUNGE_CIPHERTEXT, KMS_ENDPOINT, ENCRYPTION_CONTEXT),
# DECRYPT (default /usr/local/sbin/gpu-cluster-munge-key).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"
DECRYPT="${DECRYPT:-/usr/local/sbin/gpu-cluster-munge-key}"

log() { echo "gpu-cluster-db-password: $*" >&2; }

main() {
    local plaintext password
    [ -r "$ENV_FILE" ] || { log "no ${ENV_FILE}"; return 1; }
    # its own messages (without the secret) go to stderr
    plaintext=$(ENV_FILE="$ENV_FILE" "$DECRYPT") || { log "the password's KMS decryption failed"; return 1; }
    # decoded whole before anything is printed: a bad answer never reaches slurmdbd.conf half-decoded
    password=$(base64 -d <<<"$plaintext" 2>/dev/null) || { log "the decrypted password is not base64"; return 1; }
    [ -n "$password" ] || { log "the decrypted password is empty"; return 1; }
    printf '%s' "$password"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
