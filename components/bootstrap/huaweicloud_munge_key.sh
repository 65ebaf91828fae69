#!/bin/bash
# gpu-cluster: print the cluster's MUNGE key (base64) for the Slurm parts, on Huawei Cloud.
#
# The key is the text of one DEW CSMS secret of the cluster's own (MUNGE_SECRET); the nodes' agency may read exactly
# that secret (and the head's configuration) and decrypt with the cluster's key. Read with the agency's temporary
# credentials (huaweicloud_csms.sh). Nothing but the key goes to stdout; the caller decodes it into
# /etc/munge/munge.key. Errors go to stderr without the key.
#
# Environment: ENV_FILE, and from it MUNGE_SECRET and huaweicloud_csms.sh's settings.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-munge-key: $*" >&2; }

# shellcheck source=huaweicloud_csms.sh
. "${BASH_SOURCE[0]%/*}/huaweicloud_csms.sh"

main() {
    [ -n "${MUNGE_SECRET:-}" ] || { log "no secret in ${ENV_FILE}"; return 1; }
    csms_secret "$MUNGE_SECRET"
    echo
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
