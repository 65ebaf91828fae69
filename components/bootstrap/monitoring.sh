#!/bin/bash
# gpu-cluster: install the pinned Prometheus and Grafana on the login node, then (re)start them; runs at every boot.
#
# Prometheus: the release tarball for this machine's architecture, checked against its pinned sha256 before it is
# unpacked (a wrong file never runs). Grafana: from Grafana's apt repository at the pinned version, held so an
# unattended upgrade does not move it. Each is installed only when the installed version differs from the pin.
# The Grafana admin password is generated here once (never in user data) into PASSWORD_FILE, root and grafana only.
#
# Environment (/etc/gpu-cluster/monitoring.env): PROMETHEUS_VERSION, PROMETHEUS_URL (with {arch}),
# PROMETHEUS_SHA256_AMD64/ARM64, PROMETHEUS_DIR, PROMETHEUS_CONFIG, TSDB_DIR, GRAFANA_VERSION, GRAFANA_REPOSITORY,
# GRAFANA_KEY_URL, PASSWORD_FILE; KEYRING and APT_LIST (the tests point them elsewhere).
set -euo pipefail

ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/monitoring.env}"
# shellcheck source=/dev/null
[ -r "$ENV_FILE" ] && . "$ENV_FILE"

KEYRING="${KEYRING:-/etc/apt/keyrings/grafana.gpg}"
APT_LIST="${APT_LIST:-/etc/apt/sources.list.d/grafana.list}"

log() { echo "gpu-cluster-monitoring: $*" >&2; }

# shellcheck source=prometheus_release.sh
. "${BASH_SOURCE[0]%/*}/prometheus_release.sh"

install_grafana() {
  install -d -m 0755 "${KEYRING%/*}"
  curl -fsSL --retry 5 "$GRAFANA_KEY_URL" | gpg --dearmor --yes -o "$KEYRING"
  echo "deb [signed-by=$KEYRING] $GRAFANA_REPOSITORY" >"$APT_LIST"
  apt-get update -q
  apt-mark unhold grafana >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "grafana=$GRAFANA_VERSION"
  apt-mark hold grafana >/dev/null
  log "installed Grafana $GRAFANA_VERSION"
}

if [ "$(cat "$PROMETHEUS_DIR/VERSION" 2>/dev/null)" != "$PROMETHEUS_VERSION" ]; then
  install_release prometheus "$PROMETHEUS_VERSION" "$PROMETHEUS_URL" "$PROMETHEUS_SHA256_AMD64" \
    "$PROMETHEUS_SHA256_ARM64" "$PROMETHEUS_DIR" prometheus promtool
fi
id prometheus >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin prometheus
install -d -o prometheus -g prometheus -m 0750 "$TSDB_DIR"
"$PROMETHEUS_DIR/promtool" check config "$PROMETHEUS_CONFIG" >/dev/null

if [ "$(dpkg-query -W -f='${Version}' grafana 2>/dev/null)" != "$GRAFANA_VERSION" ]; then
  install_grafana
fi
if [ ! -s "$PASSWORD_FILE" ]; then
  (umask 077 && openssl rand -base64 24 | tr -d '\n' >"$PASSWORD_FILE")
fi
chown root:grafana "$PASSWORD_FILE"
chmod 0640 "$PASSWORD_FILE"

systemctl daemon-reload
systemctl enable gpu-cluster-prometheus.service grafana-server.service
# the configuration and dashboards may have changed with this boot's user data: read them again
systemctl restart gpu-cluster-prometheus.service grafana-server.service
