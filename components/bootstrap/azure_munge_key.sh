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
# IMDS_TOKEN_URL, IMDS_API_VERSION, KEYVAULT_RESOURCE, KEYVAULT_API_VERSION (catalog/slurm.yaml clouds.azure).
set -euo pipefail

# shellcheck source=munge_key_bearer.sh
. "${BASH_SOURCE[0]%/*}/munge_key_bearer.sh"

main() {
    local token
    require_settings MUNGE_VAULT_URI MUNGE_SECRET_NAME IMDS_TOKEN_URL IMDS_API_VERSION KEYVAULT_RESOURCE \
        KEYVAULT_API_VERSION || return 1
    token=$(metadata_token "Metadata: true" \
        "${IMDS_TOKEN_URL}?api-version=${IMDS_API_VERSION}&resource=${KEYVAULT_RESOURCE}" \
        "the Instance Metadata Service" "is a managed identity on this VM?") || return 1
    secret_field "$token" "${MUNGE_VAULT_URI%/}/secrets/${MUNGE_SECRET_NAME}?api-version=${KEYVAULT_API_VERSION}" value \
        "reading secret ${MUNGE_SECRET_NAME} from ${MUNGE_VAULT_URI} failed (role, private endpoint or DNS)" \
        "secret ${MUNGE_SECRET_NAME} has no value"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
