#!/bin/bash
# monitoring.logs on Tencent Cloud: LogListener, Cloud Log Service's agent, installed once as Tencent documents it
# from the private-network mirror (inside the VPC, no NAT), then initialised at every boot with the cluster's label
# (which joins this node to the cluster's machine group) and the API key LogListener needs: read from the cluster's
# SSM secret with this node's CAM role (tccli --use-cvm-role), so no key is in the boot data. Idempotent.
set -euo pipefail

: "${REGION:?}" "${LOGLISTENER_URL:?}" "${LOGLISTENER_DIR:?}" "${NETWORK:?}" "${LABEL:?}" "${SECRET_NAME:?}"
: "${SECRET_VERSION:?}" "${SSM_ENDPOINT:?}" "${TCCLI_INDEX:?}" "${TCCLI_HOST:?}" "${TCCLI_VENV:?}"

tccli="$TCCLI_VENV/bin/tccli"
if [ ! -x "$tccli" ]; then
  # Ubuntu's python3 has no pip: tccli goes into a venv of its own
  python3 -m venv "$TCCLI_VENV" || { apt-get update -q && apt-get install -y -q python3-venv && python3 -m venv "$TCCLI_VENV"; }
  "$TCCLI_VENV/bin/pip" install -q --index-url "$TCCLI_INDEX" --trusted-host "$TCCLI_HOST" tccli
fi

if [ ! -x "$LOGLISTENER_DIR/tools/loglistener.sh" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  curl -fsSL --retry 5 --retry-delay 10 -o "$work/loglistener.tar.gz" "$LOGLISTENER_URL"
  tar -zxf "$work/loglistener.tar.gz" -C "$(dirname "$LOGLISTENER_DIR")"
  (cd "$LOGLISTENER_DIR/tools" && ./loglistener.sh install)
fi

# through SSM's private-network endpoint (no NAT needed); the secret and the role's grant are created beside the
# nodes: wait for them (10 minutes) rather than fail the boot
for try in $(seq 1 60); do
  if answer="$("$tccli" ssm GetSecretValue --region "$REGION" --SecretName "$SECRET_NAME" \
    --VersionId "$SECRET_VERSION" --endpoint "$SSM_ENDPOINT" --use-cvm-role)"; then
    break
  fi
  [ "$try" -lt 60 ] || { echo "gpu-cluster: SSM secret $SECRET_NAME unreadable" >&2; exit 1; }
  sleep 10
done
key() { python3 -c 'import json,sys; print(json.loads(json.load(sys.stdin)["SecretString"])[sys.argv[1]])' "$1"; }
secret_id="$(key SecretId <<<"$answer")"
secret_key="$(key SecretKey <<<"$answer")"

(cd "$LOGLISTENER_DIR/tools" && ./loglistener.sh init -secretid "$secret_id" -secretkey "$secret_key" \
  -region "$REGION" -network "$NETWORK" -label "$LABEL")
systemctl restart loglistenerd
echo "gpu-cluster: LogListener in $LOGLISTENER_DIR, machine group label $LABEL"
