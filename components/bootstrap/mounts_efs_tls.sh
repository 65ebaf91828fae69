# shellcheck shell=bash
# The mount part's EFS client with encryption in transit: spliced into mounts.sh only for nodes whose EFS is mounted
# through it (bootstrap/mounts.py), so every other node's mounts.sh, and its user data, stays as it was.
#   CLIENT=efs-stunnel-apt  apt installs CLIENT_PACKAGES (stunnel4 nfs-common); MOUNT_SOURCE is the file system's
#                           DNS name and export (fs-ID.efs.REGION.amazonaws.com:/); MOUNT_OPTIONS carry `port=`,
#                           the tunnel's local port, which the kernel NFS client connects to
#   TLS_CAFILE              the CA bundle that verifies the mount target's certificate (Ubuntu's ca-certificates)
#   TLS_CONF                where the tunnel's stunnel configuration is written
#
# What the EFS mount helper's `tls` option did before efs-proxy (aws/efs-utils at def6e74, v3.2.0,
# src/efs_utils_common/proxy.py write_stunnel_config_file and metadata.py STUNNEL_EFS_CONFIG), written here
# without amazon-efs-utils: stunnel listens on 127.0.0.1:PORT, connects to the file system's DNS name on 2049 with
# TLS 1.2 and checks the server's certificate (its chain up to a root in TLS_CAFILE, and the name); NFS mounts
# 127.0.0.1:/ with port=PORT. A systemd service runs the tunnel, restarting it whenever it exits; the mount unit
# requires it and orders after it, so the mount comes back at every boot and survives a tunnel crash (a hard NFS
# mount retries until the restarted tunnel answers again).
TLS_CAFILE="${TLS_CAFILE:-/etc/ssl/certs/ca-certificates.crt}"
TLS_CONF="${TLS_CONF:-/etc/gpu-cluster/efs-tls.conf}"
TLS_SERVICE=gpu-cluster-efs-tls.service
STUNNEL=/usr/bin/stunnel4 # Ubuntu's stunnel4 package

tls_port() {
  local opt
  local -a opts
  IFS=, read -r -a opts <<<"$MOUNT_OPTIONS"
  for opt in "${opts[@]}"; do
    case "$opt" in port=*) echo "${opt#port=}" ;; esac
  done
}

write_tunnel_config() {
  local host=$1 port=$2
  mkdir -p "$(dirname "$TLS_CONF")"
  # The meaning of each option, as efs-utils sets it (proxy.py write_stunnel_config_file, metadata.py):
  #   foreground       systemd supervises the process (efs-utils: STUNNEL_GLOBAL_CONFIG foreground)
  #   pid =            empty: no pid file (systemd tracks the process)
  #   socket           SO_REUSEADDR on the listener and bound to the loopback device (STUNNEL_GLOBAL_CONFIG socket)
  #   sslVersion       EFS speaks TLS 1.2 (STUNNEL_EFS_CONFIG sslVersion = TLSv1.2), renegotiation off
  #   TIMEOUT*         busy 20 s, close 0 s, idle 70 s (STUNNEL_EFS_CONFIG)
  #   delay            resolve the DNS name at each connection, not once at start (the mount target may not
  #                    resolve yet when the first nodes boot; STUNNEL_EFS_CONFIG delay = yes)
  #   verifyChain      efs-utils' `verify = 2` (DEFAULT_STUNNEL_VERIFY_LEVEL), which stunnel's manual calls obsolete
  #                    for verifyChain; with `checkHost` the certificate must name the file system (efs-utils:
  #                    checkHost = the DNS name from the file system id on, stunnel_check_cert_hostname = true)
  #   CAfile           efs-utils bundles Amazon Root CA 1-4 (dist/efs-utils.crt); the same four roots are in
  #                    Ubuntu's ca-certificates bundle (the Mozilla store), which efs-utils itself uses in the
  #                    Regions it overrides (dist/efs-utils.conf stunnel_cafile)
  #   libwrap = no     /etc/hosts.allow and hosts.deny do not apply to the tunnel (efs-utils, where stunnel has it:
  #                    Ubuntu's stunnel4 is built with libwrap)
  # OCSP stays off, as efs-utils' default (stunnel_check_cert_validity = false).
  cat >"$TLS_CONF" <<EOF
# gpu-cluster: NFS to EFS over TLS for $MOUNT_PATH (written by gpu-cluster-mounts)
foreground = yes
pid =
socket = l:SO_REUSEADDR=yes
socket = a:SO_BINDTODEVICE=lo

[efs]
client = yes
accept = 127.0.0.1:$port
connect = $host:2049
sslVersion = TLSv1.2
renegotiation = no
TIMEOUTbusy = 20
TIMEOUTclose = 0
TIMEOUTidle = 70
delay = yes
verifyChain = yes
CAfile = $TLS_CAFILE
checkHost = $host
libwrap = no
EOF
}

write_tunnel_unit() {
  local host=$1
  cat >"$UNIT_DIR/$TLS_SERVICE" <<EOF
[Unit]
Description=gpu-cluster TLS tunnel to EFS $host for $MOUNT_PATH
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=$STUNNEL $TLS_CONF
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
EOF
}

start_tunnel() {
  # the tunnel to the file system, then the mount through it: MOUNT_SOURCE becomes the tunnel's end
  local host=${MOUNT_SOURCE%%:*} export_path=${MOUNT_SOURCE#*:} port
  port=$(tls_port)
  if [ -z "$port" ]; then
    log "MOUNT_OPTIONS has no port= for the TLS tunnel's local end"
    return 1
  fi
  write_tunnel_config "$host" "$port"
  write_tunnel_unit "$host"
  systemctl daemon-reload
  systemctl enable --now "$TLS_SERVICE"
  log "TLS tunnel 127.0.0.1:$port -> $host:2049 ($TLS_SERVICE)"
  MOUNT_SOURCE="127.0.0.1:$export_path"
}
