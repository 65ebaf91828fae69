#!/bin/bash
# Installs Google's Ops Agent once (its repository script, pinned major version), then restarts it so it reads
# the gpu-cluster receiver (/etc/google-cloud-ops-agent/config.yaml: the DCGM exporter's GPU utilisation).
# Runs at every boot; a failed download is retried at the next boot and does not fail the node.
set -euo pipefail

installer_url="${OPS_AGENT_INSTALLER:?OPS_AGENT_INSTALLER is not set}"
version="${OPS_AGENT_VERSION:?OPS_AGENT_VERSION is not set}"

if ! dpkg -s google-cloud-ops-agent >/dev/null 2>&1; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  if ! curl -fsS --retry 5 --max-time 120 -o "$work/add-repo.sh" "$installer_url"; then
    echo "gpu-cluster-ops-agent: could not download $installer_url; no GPU metric for the autoscaler" >&2
    exit 0
  fi
  bash "$work/add-repo.sh" --also-install --version="$version"
fi
systemctl restart google-cloud-ops-agent
echo "gpu-cluster-ops-agent: the Ops Agent runs with the gpu-cluster DCGM receiver"
