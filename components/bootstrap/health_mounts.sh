# shellcheck shell=bash
# The health check's mount check (storage.shared): spliced into health.sh only for nodes that mount a shared
# filesystem (bootstrap/health.py), so every other node's health.sh, and its user data, stays as it was.
#   EXPECTED_MOUNTS          shared filesystems (mount points) that must be mounted
EXPECTED_MOUNTS="${EXPECTED_MOUNTS:-}"

check_mounts() {
  local path ok
  for path in $EXPECTED_MOUNTS; do
    # the mount unit retries until the filesystem answers: give it the same wait as the devices
    ok=false
    for _ in $(seq 1 "$WAIT_SECONDS"); do
      if mountpoint -q "$path"; then ok=true; break; fi
      sleep 1
    done
    if [ "$ok" = true ]; then
      record mount true "$path mounted" "mounted" ""
    else
      record mount false "$path mounted" "not mounted" "shared filesystem missing (gpu-cluster-mounts.service)"
    fi
  done
}

