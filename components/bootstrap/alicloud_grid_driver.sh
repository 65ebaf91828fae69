#!/bin/bash
# gpu-cluster Alibaba GRID driver: NVIDIA's vGPU (GRID) guest driver on an Alibaba vGPU slice (vgn6i-vws, vgn7i-vws,
# sgn7i-vws), installed the way Alibaba documents it ('Use Cloud Assistant to install a GRID driver'): its Cloud
# Assistant plugin, run here on the node with the agent's own tool rather than sent through the Cloud Assistant API,
# so it needs no instance RAM role and reaches nodes an ESS group launches later. The agent is pre-installed on public
# images. Idempotent: nothing happens where nvidia-smi already answers. Runs before the health check and the metrics.
#   PLUGIN           the Cloud Assistant plugin (grid_driver_install)
#   DRIVER_VERSION   the GRID version Alibaba names for the plugin; the plugin is Alibaba's and unpinned, so another
#                    version is reported, not refused
#   TIMEOUT_SECONDS  the plugin's run time limit (Alibaba's documented command timeout)
set -euo pipefail

PLUGIN="${PLUGIN:?PLUGIN is required}"
DRIVER_VERSION="${DRIVER_VERSION:?DRIVER_VERSION is required}"
TIMEOUT_SECONDS="${TIMEOUT_SECONDS:-600}"
AGENT_WAIT_SECONDS="${AGENT_WAIT_SECONDS:-300}"
POLL_SECONDS="${POLL_SECONDS:-5}"

log() { echo "gpu-cluster-alicloud-grid-driver: $*" >&2; }

installed() { nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true; }

have="$(installed)"
if [ -n "$have" ]; then
  log "driver $have answers; nothing to do"
  exit 0
fi
# the agent may still be starting this early in the boot: wait for its tool
waited=0
until command -v acs-plugin-manager >/dev/null 2>&1; do
  if [ "$waited" -ge "$AGENT_WAIT_SECONDS" ]; then
    log "acs-plugin-manager (Cloud Assistant Agent >= 1.0.2.510) not found after ${AGENT_WAIT_SECONDS}s; the image needs the agent"
    exit 1
  fi
  sleep "$POLL_SECONDS"
  waited=$((waited + POLL_SECONDS))
done
# Alibaba's command: drop a copy of the plugin left from an earlier run, then run it. -w: gpu_grid_driver_install
# (sgn8ia's plugin) is another plugin
if acs-plugin-manager --list --local 2>/dev/null | grep -w -- "$PLUGIN" >/dev/null; then
  acs-plugin-manager --remove --plugin "$PLUGIN"
fi
if ! timeout "$TIMEOUT_SECONDS" acs-plugin-manager --exec --plugin "$PLUGIN"; then
  log "the Cloud Assistant plugin $PLUGIN failed or ran over ${TIMEOUT_SECONDS}s"
  exit 1
fi
have="$(installed)"
if [ -z "$have" ]; then
  log "nvidia-smi does not answer after the plugin $PLUGIN ran"
  exit 1
fi
if [ "$have" != "$DRIVER_VERSION" ]; then
  log "the plugin installed GRID driver $have; Alibaba's doc names $DRIVER_VERSION (the plugin is Alibaba's, unpinned)"
fi
log "GRID driver $have installed by the Cloud Assistant plugin $PLUGIN"
