#!/bin/bash
# Elastic fleets (scaling.metric gpuUtilization): install the CloudWatch agent once and start it with the
# cluster's configuration, which publishes the GPU utilisation (nvidia_gpu) into one namespace through
# PutMetricData, the only permission the node role has for it. Runs at every boot; idempotent.
set -euo pipefail

: "${AGENT_URL:?}" "${AGENT_CTL:?}" "${AGENT_CONFIG:?}" "${AGENT_PACKAGE:?}"

if ! dpkg -s "$AGENT_PACKAGE" >/dev/null 2>&1; then
  arch="$(dpkg --print-architecture)"
  deb="$(mktemp --suffix=.deb)"
  trap 'rm -f "$deb"' EXIT
  # the package URL holds {arch}: amd64 or arm64, as AWS publishes them
  curl -fsSL --retry 5 --retry-delay 10 -o "$deb" "${AGENT_URL//\{arch\}/$arch}"
  dpkg -i -E "$deb"
fi

# -m ec2: credentials from the instance profile; -s: (re)start with this configuration
"$AGENT_CTL" -a fetch-config -m ec2 -s -c "file:$AGENT_CONFIG"
echo "gpu-cluster: CloudWatch agent publishing GPU utilisation with $AGENT_CONFIG"
