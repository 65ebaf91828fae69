#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Azure.
#
# The key is a secret in the cluster's own Key Vault (RBAC mode, reached through its private endpoint). The node's
# user-assigned managed identity holds Key Vault Secrets User on exactly that secret. This hook asks the Instance
# Metadata Service for a Key Vault token (the node's only identity, so no client_id) and reads the secret's latest
# version. Nothing but the key goes to stdout; the caller decodes it into /etc/munge/munge.key. The token and the
# key never reach argv, a log or stderr (the Authorization header goes to curl on stdin).
#
# Environment: ENV_FILE, and from it MUNGE_VAULT_URI (https://<vault>.vault.azure.net/), MUNGE_SECRET_NAME,
# IMDS_TOKEN_URL, IMDS_API_VERSION, KEYVAULT_RESOURCE, KEYVAULT_API_VERSION (catalog/azure_slurm.yaml).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# a string field of a flat JSON object (a JWT and base64 hold no quotes)
field() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

main() {
    local answer token
    for name in MUNGE_VAULT_URI MUNGE_SECRET_NAME IMDS_TOKEN_URL IMDS_API_VERSION KEYVAULT_RESOURCE KEYVAULT_API_VERSION; do
        [ -n "${!name:-}" ] || { log "${name} is not set in ${ENV_FILE}"; return 1; }
    done
    if ! answer=$(curl -fsS --max-time 5 --retry 3 -H "Metadata: true" \
        "${IMDS_TOKEN_URL}?api-version=${IMDS_API_VERSION}&resource=${KEYVAULT_RESOURCE}" 2>/dev/null); then
        log "no token from the Instance Metadata Service (is a managed identity on this VM?)"
        return 1
    fi
    token=$(field access_token <<<"$answer")
    [ -n "$token" ] || { log "the metadata service answered without an access_token"; return 1; }
    # the answer holds the key: it stays in this variable, never in a log
    if ! answer=$(printf 'Authorization: Bearer %s\n' "$token" | curl -fsS --max-time 10 --retry 3 -H @- \
        "${MUNGE_VAULT_URI%/}/secrets/${MUNGE_SECRET_NAME}?api-version=${KEYVAULT_API_VERSION}" 2>/dev/null); then
        log "reading secret ${MUNGE_SECRET_NAME} from ${MUNGE_VAULT_URI} failed (role, private endpoint or DNS)"
        return 1
    fi
    answer=$(field value <<<"$answer")
    [ -n "$answer" ] || { log "secret ${MUNGE_SECRET_NAME} has no value"; return 1; }
    printf '%s\n' "$answer"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
