#!/bin/bash
# gpu-cluster: print the Slurm accounting database's password from the cluster's Key Vault, for slurm_dbd.sh on the
# head (Azure).
#
# The password is a secret in the cluster's Slurm Key Vault, beside the MUNGE key; the head's own user-assigned
# identity alone holds Key Vault Secrets User on it (the GPU and login nodes carry another identity). The read is the
# MUNGE key hook's (azure_munge_key.sh, inlined below by `bootstrap.script`): an IMDS token for Key Vault, then the
# secret's latest value over the vault's private endpoint, printed on stdout and nowhere else. Its settings keep the
# key hook's names, read from this hook's own file: MUNGE_VAULT_URI, MUNGE_SECRET_NAME (the password's secret),
# IMDS_TOKEN_URL, IMDS_API_VERSION, KEYVAULT_RESOURCE, KEYVAULT_API_VERSION. Its messages keep that hook's prefix.
#
# Environment: ENV_FILE (default /etc/gpu-cluster/db-password.env).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"
# shellcheck source=azure_munge_key.sh
. "${BASH_SOURCE[0]%/*}/azure_munge_key.sh"
