#!/bin/bash
# gpu-cluster: the health endpoint the Azure Application Health extension probes (Rich Health States).
#
# Run once per connection by gpu-cluster-health-http.socket (Accept=yes, 127.0.0.1 only): reads one HTTP
# request on stdin and writes the answer on stdout, from the boot health check's result (HEALTH_RESULT):
#   GET /health  200 {"ApplicationHealthState": "Healthy"}    this boot's check passed
#                200 {"ApplicationHealthState": "Unhealthy"}  this boot's check failed
#                503                                          no result of this boot yet (the check still runs):
#                                                             a new instance stays Initializing until the
#                                                             extension's gracePeriod ends, then Unknown
#   otherwise    404
# Unhealthy and Unknown both make the scale set's automatic repairs replace the instance (MicrosoftDocs
# virtual-machine-scale-sets-health-extension.md). A result older than this boot is not trusted.
set -uo pipefail

HEALTH_RESULT="${HEALTH_RESULT:-/var/lib/gpu-cluster/health.json}"
PROC_STAT="${PROC_STAT:-/proc/stat}"

request=""
IFS= read -r -t 5 request || true
while IFS= read -r -t 5 line; do
    line="${line%$'\r'}"
    [ -n "$line" ] || break
done
read -r method path _ <<<"${request%$'\r'}"

respond() {
    printf 'HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
        "$1" "${#2}" "$2"
}

# The result was written during this boot (health.json survives a reboot; the check rewrites it).
fresh() {
    local boot written
    [ -s "$HEALTH_RESULT" ] || return 1
    boot=$(awk '$1 == "btime" { print $2 }' "$PROC_STAT" 2>/dev/null)
    written=$(stat -c %Y "$HEALTH_RESULT" 2>/dev/null)
    [ -n "$boot" ] && [ -n "$written" ] && [ "$written" -ge "$boot" ]
}

if [ "${method:-}" != GET ] || [ "${path%%\?*}" != /health ]; then
    respond "404 Not Found" '{"error": "only GET /health"}'
elif ! fresh || grep -Eq '"status":[[:space:]]*"running"' "$HEALTH_RESULT"; then
    respond "503 Service Unavailable" '{"detail": "the boot health check has not written its result yet"}'
elif grep -Eq '"healthy":[[:space:]]*true' "$HEALTH_RESULT"; then
    respond "200 OK" '{"ApplicationHealthState": "Healthy"}'
else
    respond "200 OK" '{"ApplicationHealthState": "Unhealthy"}'
fi
