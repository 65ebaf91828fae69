#!/bin/bash
# monitoring.logs on Huawei Cloud: ICAgent, Log Tank Service's collector, installed once with the installer Huawei's
# console gives for an intra-region host in IAM-agency mode: no AK/SK here, ICAgent uses this ECS's agency (the
# cluster's, granted the role ICAgent needs) through the metadata service. Idempotent: skipped once installed.
set -euo pipefail

: "${REGION:?}" "${INSTALLER_URL:?}" "${ACCESS_IP:?}" "${ACCESS_DOMAIN:?}" "${OBS_DOMAIN:?}" "${ICAGENT_DIR:?}"

if [ -d "$ICAGENT_DIR" ]; then
  echo "gpu-cluster: ICAgent already in $ICAGENT_DIR"
  exit 0
fi

# the agency's credentials reach the metadata service some time after the instance starts (Huawei: the agency takes
# effect within minutes): the installer exits without them, so wait for them (10 minutes) rather than fail the boot
for try in $(seq 1 60); do
  if curl -fsS -o /dev/null --connect-timeout 5 -m 5 http://169.254.169.254/openstack/latest/securitykey; then
    break
  fi
  [ "$try" -lt 60 ] || { echo "gpu-cluster: no agency credentials in the metadata service" >&2; exit 1; }
  sleep 10
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 5 --retry-delay 10 -o "$work/apm_agent_install.sh" "$INSTALLER_URL"
# the installer reads REGION from the environment too (the unit's environment file sets it)
export REGION
(cd "$work" && bash apm_agent_install.sh -region "$REGION" -accessip "$ACCESS_IP" \
  -accessdomain "$ACCESS_DOMAIN" -obsdomain "$OBS_DOMAIN")
echo "gpu-cluster: ICAgent installed in $ICAGENT_DIR"
