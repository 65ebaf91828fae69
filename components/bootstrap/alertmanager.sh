#!/bin/bash
# gpu-cluster: install the pinned Alertmanager beside the login node's Prometheus (monitoring.notify), check its
# configuration with amtool, then (re)start it; runs at every boot, after gpu-cluster-monitoring (its prometheus user).
#
# The release tarball for this machine's architecture is checked against its pinned sha256 before it is unpacked (a
# wrong file never runs); it is installed only when the installed version differs from the pin.
#
# Environment (/etc/gpu-cluster/alertmanager.env): ALERTMANAGER_VERSION, ALERTMANAGER_URL (with {arch}),
# ALERTMANAGER_SHA256_AMD64/ARM64, ALERTMANAGER_DIR, ALERTMANAGER_CONFIG, ALERTMANAGER_DATA.
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/alertmanager.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

log() { echo "gpu-cluster-alertmanager: $*" >&2; }

# shellcheck source=prometheus_release.sh
. "${BASH_SOURCE[0]%/*}/prometheus_release.sh"

if [ "$(cat "$ALERTMANAGER_DIR/VERSION" 2>/dev/null)" != "$ALERTMANAGER_VERSION" ]; then
  install_release alertmanager "$ALERTMANAGER_VERSION" "$ALERTMANAGER_URL" "$ALERTMANAGER_SHA256_AMD64" \
    "$ALERTMANAGER_SHA256_ARM64" "$ALERTMANAGER_DIR" alertmanager amtool
fi
id prometheus >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin prometheus
install -d -o prometheus -g prometheus -m 0750 "$ALERTMANAGER_DATA"
"$ALERTMANAGER_DIR/amtool" check-config "$ALERTMANAGER_CONFIG" >/dev/null

systemctl daemon-reload
systemctl enable gpu-cluster-alertmanager.service
# the configuration may have changed with this boot's user data: read it again
systemctl restart gpu-cluster-alertmanager.service
