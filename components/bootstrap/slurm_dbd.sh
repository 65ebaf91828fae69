#!/bin/bash
# gpu-cluster Slurm head node, slurm.accounting: slurmdbd.conf from its template with the database password from the
# cloud's secret store, the head's address in slurm.conf (AccountingStorageHost), slurmdbd (re)started, and the cluster
# registered so slurmctld's job records are kept. A oneshot unit slurmctld's start pulls in and waits for. The password
# goes from the hook's stdout into the file (0600, SlurmUser) and nowhere else: not into argv, a log or stderr.
#
# Environment: DBD_TEMPLATE (slurmdbd.conf with the two tokens below), DB_PASSWORD_HOOK (prints the password),
#   CONF_DIR (default /etc/slurm, where slurm_head.sh wrote slurm.conf), CLUSTER_NAME (slurm.conf's ClusterName),
#   ATTEMPTS / RETRY_SECONDS (default 30 / 10), SLURM_USER (default slurm).
set -uo pipefail

CONF_DIR="${CONF_DIR:-/etc/slurm}"
ATTEMPTS="${ATTEMPTS:-30}"
RETRY_SECONDS="${RETRY_SECONDS:-10}"
SLURM_USER="${SLURM_USER:-slurm}"
PASSWORD_TOKEN="@@GPU_CLUSTER_DB_PASSWORD@@"
HOST_TOKEN="@@GPU_CLUSTER_DBD_HOST@@"
ADDRESS_TOKEN="@@GPU_CLUSTER_HEAD_ADDRESS@@"

log() { echo "gpu-cluster-slurmdbd: $*" >&2; }

# the password: the hook's one line; an empty answer is an error, never a password
password() {
  local answer
  answer=$("$DB_PASSWORD_HOOK" 2>/dev/null) || return 1
  [ -n "$answer" ] || return 1
  printf '%s' "$answer"
}

write_conf() {
  local secret="" text attempt target="${CONF_DIR}/slurmdbd.conf"
  for attempt in $(seq 1 "$ATTEMPTS"); do
    secret=$(password) && break
    log "no database password from ${DB_PASSWORD_HOOK} (attempt ${attempt} of ${ATTEMPTS})"
    secret=""
    [ "$attempt" -lt "$ATTEMPTS" ] && sleep "$RETRY_SECONDS"
  done
  [ -n "$secret" ] || return 1
  text=$(<"$DBD_TEMPLATE") || return 1
  # quoted replacements: the password is taken literally, whatever its characters
  text=${text//"$PASSWORD_TOKEN"/"$secret"}
  text=${text//"$HOST_TOKEN"/"$(hostname -s)"}
  mkdir -p "$CONF_DIR"
  # slurmdbd refuses a slurmdbd.conf that group or others may read
  (umask 077 && printf '%s\n' "$text" >"${target}.new") || return 1
  chown "${SLURM_USER}:${SLURM_USER}" "${target}.new" && chmod 0600 "${target}.new" && mv -f "${target}.new" "$target"
}

# AccountingStorageHost: this head's address, known only here (slurm_head.sh writes slurm.conf with the token)
fill_address() {
  local address
  address=$(hostname -I | awk '{ print $1 }')
  [ -n "$address" ] || return 1
  sed -i "s|${ADDRESS_TOKEN}|${address}|g" "${CONF_DIR}/slurm.conf"
}

# slurmdbd answers once it has reached the database (sacctmgr asks it); the cluster is added once
register_cluster() {
  local attempt found error
  for attempt in $(seq 1 "$ATTEMPTS"); do
    if found=$(sacctmgr --noheader --parsable2 show cluster "$CLUSTER_NAME" format=cluster 2>&1); then
      if [ "$found" = "$CLUSTER_NAME" ]; then
        log "cluster ${CLUSTER_NAME} is registered"
        return 0
      fi
      error=$(sacctmgr --immediate add cluster "$CLUSTER_NAME" 2>&1) && { log "cluster ${CLUSTER_NAME} registered"; return 0; }
      found=$error
    fi
    log "slurmdbd does not answer yet (attempt ${attempt} of ${ATTEMPTS}): $(tr "\n" " " <<<"$found")"
    [ "$attempt" -lt "$ATTEMPTS" ] && sleep "$RETRY_SECONDS"
  done
  return 1
}

fill_address || { log "slurm.conf: no address for AccountingStorageHost"; exit 1; }
write_conf || { log "slurmdbd.conf not written"; exit 1; }
systemctl enable slurmdbd >/dev/null 2>&1 || true
systemctl restart slurmdbd || { log "slurmdbd did not start"; exit 1; }
register_cluster || { log "slurmdbd did not answer: jobs run, sacct has no history until it does"; exit 1; }
