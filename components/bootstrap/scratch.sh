#!/bin/bash
# gpu-cluster scratch bootstrap: stripe the node's local NVMe devices (RAID0) or format its scratch
# disk, and mount the result at SCRATCH_PATH. Runs at every boot (systemd unit): it re-mounts an
# existing array and re-creates it when the cloud wiped the devices (stop/start, host maintenance).
#
# Settings come from the environment (written by cloud-init to /etc/gpu-cluster/scratch.env):
#   SCRATCH_PATH      mount point
#   DEVICE_GLOBS      space-separated globs that match the scratch devices (by-id links)
#   EXPECTED_DEVICES  how many devices the instance type has; wait up to WAIT_SECONDS for them
#   EXCLUDE_ROOT      1 to skip the disk that holds / (needed when globs also match the root disk)
set -euo pipefail

SCRATCH_PATH="${SCRATCH_PATH:?SCRATCH_PATH is required}"
DEVICE_GLOBS="${DEVICE_GLOBS:?DEVICE_GLOBS is required}"
EXPECTED_DEVICES="${EXPECTED_DEVICES:-1}"
EXCLUDE_ROOT="${EXCLUDE_ROOT:-1}"
WAIT_SECONDS="${WAIT_SECONDS:-120}"
MD_DEVICE="${MD_DEVICE:-/dev/md/gpu-cluster-scratch}"
FS_LABEL="${FS_LABEL:-gc-scratch}"

log() { echo "gpu-cluster-scratch: $*" >&2; }

root_disk() {
  local source
  source=$(findmnt -n -o SOURCE /)
  lsblk -n -d -o PKNAME "$source" 2>/dev/null | head -n 1
}

find_devices() {
  local glob dev real root
  root=$(if [ "$EXCLUDE_ROOT" = 1 ]; then root_disk; fi)
  for glob in $DEVICE_GLOBS; do
    for dev in $glob; do
      [ -e "$dev" ] || continue
      case "$dev" in *-part[0-9]*) continue ;; esac
      real=$(readlink -f "$dev")
      if [ -n "$root" ] && [ "$(basename "$real")" = "$root" ]; then continue; fi
      echo "$real"
    done
  done | sort -u
}

if mountpoint -q "$SCRATCH_PATH"; then
  log "$SCRATCH_PATH already mounted"
  exit 0
fi
mkdir -p "$SCRATCH_PATH"

# An array or filesystem from an earlier boot survives a reboot: mount it instead of re-creating.
mdadm --assemble --scan >/dev/null 2>&1 || true
existing=$(blkid -L "$FS_LABEL" 2>/dev/null || true)
if [ -n "$existing" ]; then
  mount -o defaults,noatime,nofail "$existing" "$SCRATCH_PATH"
  log "mounted existing $existing at $SCRATCH_PATH"
  exit 0
fi

devices=()
for _ in $(seq 1 "$WAIT_SECONDS"); do
  mapfile -t devices < <(find_devices)
  [ "${#devices[@]}" -ge "$EXPECTED_DEVICES" ] && break
  sleep 1
done
if [ "${#devices[@]}" -eq 0 ]; then
  log "no scratch devices match: $DEVICE_GLOBS"
  exit 1
fi
# Some GPU images stripe local NVMe themselves (the AWS DLAMI mounts it at /opt/dlami/nvme):
# reuse that mount rather than tearing it down.
in_use=$(lsblk -n -o MOUNTPOINT "${devices[@]}" 2>/dev/null | grep -v '^[[:space:]]*$' | head -n 1 || true)
if [ -n "$in_use" ]; then
  mount --bind "$in_use" "$SCRATCH_PATH"
  log "devices already striped and mounted at $in_use by the image: bind-mounted at $SCRATCH_PATH"
  exit 0
fi
if [ "${#devices[@]}" -lt "$EXPECTED_DEVICES" ]; then
  log "expected $EXPECTED_DEVICES devices, found ${#devices[@]}: using what is there"
fi

if [ "${#devices[@]}" -eq 1 ]; then
  target="${devices[0]}"
else
  mdadm --create "$MD_DEVICE" --name=gpu-cluster-scratch --homehost=any --level=0 --chunk=512 \
    --run --force --raid-devices="${#devices[@]}" "${devices[@]}"
  target="$MD_DEVICE"
fi
mkfs.xfs -f -L "$FS_LABEL" "$target"
mount -o defaults,noatime,nofail "$target" "$SCRATCH_PATH"
chmod 1777 "$SCRATCH_PATH"
log "striped ${#devices[@]} device(s) into $target at $SCRATCH_PATH"
