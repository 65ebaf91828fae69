#!/bin/bash
# gpu-cluster health check: does this node have the GPUs, fabric devices and local NVMe it was sold?
# Runs at every boot once the drivers are up (systemd unit), writes the result to HEALTH_RESULT
# (JSON) and the journal, and on failure runs the cloud's hook that takes the node out of service
# (ACTION=replace) or only reports (ACTION=report). A node with 7 of 8 GPUs or a dead fabric device
# must not silently join a job: it slows or hangs every rank.
#
# Settings come from the environment (written by the bootstrap to /etc/gpu-cluster/health.env):
#   EXPECTED_GPUS            GPUs the instance type has
#   GPU_MODEL                text every GPU name must contain (nvidia-smi --query-gpu=name), e.g. H100
#   FABRIC_KIND              efa | infiniband | erdma | gpudirect-rdma | gpudirect-tcpx | gpudirect-tcpxo | none
#   EXPECTED_FABRIC_DEVICES  fabric devices (EFA interfaces, active IB ports, RDMA ports, GPU NICs)
#   EXPECTED_NVME            local NVMe devices; NVME_GLOBS the by-id globs that match them
#   EXPECTED_MIG_DEVICES     MIG devices the node should show (gpuPartition), 0 without MIG
#   DCGM_LEVEL               0 to skip, else the `dcgmi diag -r` level when DCGM is installed
#   ACTION                   replace | report
#   UNHEALTHY_HOOK           the cloud's command file run on failure with ACTION=replace
set -uo pipefail

EXPECTED_GPUS="${EXPECTED_GPUS:-0}"
GPU_MODEL="${GPU_MODEL:-}"
FABRIC_KIND="${FABRIC_KIND:-none}"
EXPECTED_FABRIC_DEVICES="${EXPECTED_FABRIC_DEVICES:-0}"
EXPECTED_NVME="${EXPECTED_NVME:-0}"
NVME_GLOBS="${NVME_GLOBS:-}"
EXPECTED_MIG_DEVICES="${EXPECTED_MIG_DEVICES:-0}"
DCGM_LEVEL="${DCGM_LEVEL:-0}"
ACTION="${ACTION:-report}"
UNHEALTHY_HOOK="${UNHEALTHY_HOOK:-/usr/local/sbin/gpu-cluster-unhealthy}"
HEALTH_RESULT="${HEALTH_RESULT:-/var/lib/gpu-cluster/health.json}"
SYSFS_NET="${SYSFS_NET:-/sys/class/net}"
WAIT_SECONDS="${WAIT_SECONDS:-300}"

log() { echo "gpu-cluster-health: $*" >&2; }

checks=()
failed=0

# A result from an earlier boot must never be read as this boot's: say "running" until the end.
mkdir -p "$(dirname "$HEALTH_RESULT")"
printf '{"healthy": null, "status": "running", "boot": "%s"}\n' "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true)" >"$HEALTH_RESULT"

# JSON string content: backslashes and double quotes escaped (GPU names and details are free text)
json_text() {
  local text=${1//\\/\\\\}
  printf '%s' "${text//\"/\\\"}"
}

# record NAME OK EXPECTED FOUND DETAIL
record() {
  checks+=("{\"name\": \"$1\", \"ok\": $2, \"expected\": \"$(json_text "$3")\", \"found\": \"$(json_text "$4")\", \"detail\": \"$(json_text "$5")\"}")
  if [ "$2" = true ]; then
    log "ok: $1 ($4)"
  else
    failed=1
    log "FAILED: $1: expected $3, found $4${5:+ ($5)}"
  fi
}

count_gpus() {
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c . || true
}

check_gpus() {
  local names found wrong
  # The driver may still be loading at boot: wait for the GPUs before judging.
  for _ in $(seq 1 "$WAIT_SECONDS"); do
    found=$(count_gpus)
    [ "$found" -ge "$EXPECTED_GPUS" ] && break
    sleep 1
  done
  names=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
  found=$(printf '%s\n' "$names" | grep -c . || true)
  if [ "$found" -ne "$EXPECTED_GPUS" ]; then
    record gpus false "$EXPECTED_GPUS" "$found" "nvidia-smi lists $found GPU(s)"
    return
  fi
  wrong=$(printf '%s\n' "$names" | grep -v -F -- "$GPU_MODEL" | grep -c . || true)
  if [ -n "$GPU_MODEL" ] && [ "$wrong" -gt 0 ]; then
    record gpus false "$EXPECTED_GPUS x $GPU_MODEL" "$found" "$wrong GPU(s) are not $GPU_MODEL"
  else
    record gpus true "$EXPECTED_GPUS" "$found" ""
  fi
}

check_ecc() {
  # Uncorrectable ECC errors since boot, or pages waiting for retirement: the GPU returns wrong
  # results or must be reset. Newer GPUs answer [N/A] for retired pages (they remap rows instead).
  local bad
  bad=$(nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,retired_pages.pending \
    --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' '($2 ~ /^[0-9]+$/ && $2 > 0) || $3 == "Yes" { printf "%s%s", sep, $1; sep = "," }')
  if [ -n "$bad" ]; then
    record ecc false "no uncorrectable ECC errors" "GPU $bad" "uncorrectable ECC errors or retired pages pending"
  else
    record ecc true "no uncorrectable ECC errors" "none" ""
  fi
}

count_fabric() {
  case "$FABRIC_KIND" in
    efa)
      # one RDM domain per EFA device (fi_info -p efa -t FI_EP_RDM)
      fi_info -p efa -t FI_EP_RDM 2>/dev/null | grep -c 'domain:' || true
      ;;
    infiniband)
      # active ports whose link layer is InfiniBand (the accelerated-networking VF is Ethernet)
      ibstat 2>/dev/null | awk '/State:/ { active = ($2 == "Active") } /Link layer:/ { if (active && $3 == "InfiniBand") n++ } END { print n + 0 }'
      ;;
    erdma | gpudirect-rdma)
      ibv_devinfo 2>/dev/null | grep -c 'state:[[:space:]]*PORT_ACTIVE' || true
      ;;
    gpudirect-tcpx | gpudirect-tcpxo)
      # GPU NICs: physical interfaces that are up, less the host NIC
      local n=0 dev
      for dev in "$SYSFS_NET"/*; do
        [ -e "$dev/device" ] || continue
        [ "$(cat "$dev/operstate" 2>/dev/null)" = up ] || continue
        n=$((n + 1))
      done
      echo $((n > 0 ? n - 1 : 0))
      ;;
    *) echo 0 ;;
  esac
}

check_fabric() {
  local found
  [ "$FABRIC_KIND" = none ] && return
  for _ in $(seq 1 "$WAIT_SECONDS"); do
    found=$(count_fabric)
    [ "$found" -ge "$EXPECTED_FABRIC_DEVICES" ] && break
    sleep 1
  done
  if [ "$found" -ge "$EXPECTED_FABRIC_DEVICES" ]; then
    record fabric true "$EXPECTED_FABRIC_DEVICES $FABRIC_KIND" "$found" ""
  else
    record fabric false "$EXPECTED_FABRIC_DEVICES $FABRIC_KIND" "$found" "fabric devices missing or down"
  fi
}

check_nvme() {
  local n glob dev
  [ "$EXPECTED_NVME" -gt 0 ] || return
  # by-id links: several names (and several globs) may point at one device, so count real devices
  n=$(for glob in $NVME_GLOBS; do
    for dev in $glob; do
      [ -e "$dev" ] || continue
      case "$dev" in *-part[0-9]*) continue ;; esac
      readlink -f "$dev"
    done
  done | sort -u | grep -c . || true)
  if [ "$n" -ge "$EXPECTED_NVME" ]; then
    record nvme true "$EXPECTED_NVME" "$n" ""
  else
    record nvme false "$EXPECTED_NVME" "$n" "local NVMe devices missing"
  fi
}

check_mig() {
  local found
  [ "$EXPECTED_MIG_DEVICES" -gt 0 ] || return
  found=$(nvidia-smi -L 2>/dev/null | grep -c 'MIG ' || true)
  if [ "$found" -eq "$EXPECTED_MIG_DEVICES" ]; then
    record mig true "$EXPECTED_MIG_DEVICES" "$found" ""
  else
    record mig false "$EXPECTED_MIG_DEVICES" "$found" "MIG partitioning not as configured"
  fi
}

check_dcgm() {
  [ "$DCGM_LEVEL" -gt 0 ] || return
  if ! command -v dcgmi >/dev/null 2>&1; then
    log "dcgmi not installed: DCGM diagnostics skipped"
    return
  fi
  if dcgmi diag -r "$DCGM_LEVEL" >/dev/null 2>&1; then
    record dcgm true "diag level $DCGM_LEVEL passes" "pass" ""
  else
    record dcgm false "diag level $DCGM_LEVEL passes" "fail" "dcgmi diag -r $DCGM_LEVEL"
  fi
}

if [ "$EXPECTED_GPUS" -gt 0 ]; then
  check_gpus
  check_ecc
fi
check_fabric
check_nvme
check_mig
check_dcgm

healthy=true
[ "$failed" = 0 ] || healthy=false
{
  printf '{"healthy": %s, "status": "done", "boot": "%s", "action": "%s", "checks": [' \
    "$healthy" "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true)" "$ACTION"
  for i in "${!checks[@]}"; do
    [ "$i" -gt 0 ] && printf ', '
    printf '%s' "${checks[$i]}"
  done
  printf ']}\n'
} >"$HEALTH_RESULT"

if [ "$healthy" = true ]; then
  log "healthy"
  exit 0
fi
if [ "$ACTION" = replace ] && [ -x "$UNHEALTHY_HOOK" ]; then
  log "unhealthy: asking the cloud to replace this node ($UNHEALTHY_HOOK)"
  "$UNHEALTHY_HOOK" || log "the unhealthy hook failed"
else
  log "unhealthy: reported only (action $ACTION)"
fi
exit 1
