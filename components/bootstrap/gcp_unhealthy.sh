#!/bin/bash
# gpu-cluster: what a GCP node does when its health check fails with action replace.
#
# Nothing to call: the MIG's autohealing health check probes gpu-cluster-health-http, which answers
# 503 as soon as /var/lib/gpu-cluster/health.json says unhealthy; after unhealthyThreshold probes the
# MIG recreates this VM. No permission is needed for that. This hook only says so in the journal.
# Installed on MIG members only: standalone instances (nodeGroup: instances) are reported, not replaced.
set -uo pipefail

RESULT="${HEALTH_RESULT:-/var/lib/gpu-cluster/health.json}"
msg="unhealthy (${RESULT}); the managed instance group's autohealing recreates this VM after its health check fails"
logger -t gpu-cluster-health "$msg" 2>/dev/null || true
echo "gpu-cluster-unhealthy: $msg" >&2
