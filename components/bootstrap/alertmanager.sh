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

install_alertmanager() {
  local arch sum url
  arch=$(dpkg --print-architecture)
  case "$arch" in
    amd64) sum="$ALERTMANAGER_SHA256_AMD64" ;;
    arm64) sum="$ALERTMANAGER_SHA256_ARM64" ;;
    *) log "no Alertmanager release pinned for $arch"; return 1 ;;
  esac
  url="${ALERTMANAGER_URL//\{arch\}/$arch}"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT  # also when the checksum does not match (set -e)
  curl -fsSL --retry 5 -o "$tmp/alertmanager.tar.gz" "$url"
  echo "$sum  $tmp/alertmanager.tar.gz" | sha256sum -c - >/dev/null
  tar -xzf "$tmp/alertmanager.tar.gz" -C "$tmp"
  install -d "$ALERTMANAGER_DIR"
  install -m 0755 "$tmp/alertmanager-$ALERTMANAGER_VERSION.linux-$arch/alertmanager" \
    "$tmp/alertmanager-$ALERTMANAGER_VERSION.linux-$arch/amtool" "$ALERTMANAGER_DIR/"
  echo "$ALERTMANAGER_VERSION" >"$ALERTMANAGER_DIR/VERSION"
  log "installed Alertmanager $ALERTMANAGER_VERSION ($arch)"
}

if [ "$(cat "$ALERTMANAGER_DIR/VERSION" 2>/dev/null)" != "$ALERTMANAGER_VERSION" ]; then
  install_alertmanager
fi
id prometheus >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin prometheus
install -d -o prometheus -g prometheus -m 0750 "$ALERTMANAGER_DATA"
"$ALERTMANAGER_DIR/amtool" check-config "$ALERTMANAGER_CONFIG" >/dev/null

systemctl daemon-reload
systemctl enable gpu-cluster-alertmanager.service
# the configuration may have changed with this boot's user data: read it again
systemctl restart gpu-cluster-alertmanager.service
