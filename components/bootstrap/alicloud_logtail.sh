#!/bin/bash
# monitoring.logs on Alibaba Cloud: Logtail, Simple Log Service's agent, installed once with Alibaba's documented
# command (the OOS action ACS::ECS::InstallLogtail) from the region's internal OSS endpoint, reached inside the VPC
# without NAT; then the cluster's user-defined identity, which joins this node to the cluster's machine group. A
# same-account ECS instance needs no account id file and no RAM grant. Runs at every boot; idempotent.
set -euo pipefail

: "${INSTALLER_URL:?}" "${INSTALLER_ARGS:?}" "${LOGTAIL_DIR:?}" "${ID_FILE:?}" "${USER_DEFINED_ID:?}"

if [ ! -x "$LOGTAIL_DIR/ilogtail" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  curl -fsSL --retry 5 --retry-delay 10 -o "$work/logtail.sh" "$INSTALLER_URL"
  chmod 755 "$work/logtail.sh"
  # INSTALLER_ARGS is "install <region>": split on purpose
  # shellcheck disable=SC2086
  (cd "$work" && ./logtail.sh $INSTALLER_ARGS)
fi

# Logtail reads the identity file while it runs: rewritten only when it differs
if [ "$(cat "$ID_FILE" 2>/dev/null || true)" != "$USER_DEFINED_ID" ]; then
  mkdir -p "$(dirname "$ID_FILE")"
  printf '%s\n' "$USER_DEFINED_ID" >"$ID_FILE"
fi
echo "gpu-cluster: Logtail installed in $LOGTAIL_DIR, machine group identity $USER_DEFINED_ID"
