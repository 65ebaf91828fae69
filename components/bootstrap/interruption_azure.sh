#!/bin/bash
# gpu-cluster-interruption on Azure: drains this node on the Scheduled Events that stop or restart it, then
# approves them (StartRequests) so the platform proceeds without waiting for NotBefore.
#
# Every POLL_SECONDS: GET scheduledevents (Metadata: true). Events are delivered to every VM of an availability set
# or a scale set's placement group: only those whose Resources name this VM (instance/compute/name), in status
# Scheduled and of a type in DRAIN_EVENTS count. The drain lasts until the earliest NotBefore. Other types (Freeze,
# a pause of seconds) are left to the platform.
# Endpoints, versions and event types: catalog/interruption.yaml (clouds.azure), written to this unit's
# EnvironmentFile.
#
# Environment: METADATA, HEADER, EVENTS_PATH, EVENTS_API_VERSION, NAME_PATH, INSTANCE_API_VERSION, DRAIN_EVENTS
# (space-separated), POLL_SECONDS (and interruption_common.sh's).
set -uo pipefail

# shellcheck source=interruption_common.sh
. "${BASH_SOURCE[0]%/*}/interruption_common.sh"

EVENTS_URL="${METADATA}${EVENTS_PATH}?api-version=${EVENTS_API_VERSION}"

# stdin: the Scheduled Events document; $1: this VM's name; $2: the event types to drain for.
# stdout: "EventId<TAB>EventType<TAB>NotBefore" per event to drain for.
ours() {
    python3 -c '
import json, sys
name, wanted = sys.argv[1], sys.argv[2].split()
for e in json.load(sys.stdin).get("Events") or []:
    if e.get("EventType") in wanted and e.get("EventStatus") == "Scheduled" and name in (e.get("Resources") or []):
        print("\t".join((str(e.get("EventId", "")), str(e.get("EventType", "")), str(e.get("NotBefore") or ""))))
' "$1" "$2"
}

notice() {
    local name doc id type not_before when first=""
    name=$(curl -sf -H "$HEADER" "${METADATA}${NAME_PATH}?api-version=${INSTANCE_API_VERSION}&format=text") || return 0
    doc=$(curl -sf -H "$HEADER" "$EVENTS_URL") || return 0
    while IFS=$'\t' read -r id type not_before; do
        [ -n "$id" ] || continue
        NOTICE="${NOTICE:+${NOTICE},}${id}"
        WHY="${WHY:+${WHY}, }${type}"
        # the earliest NotBefore; an empty one (the event may start now) is now
        when=$(epoch "$not_before" "$(now)")
        if [ -z "$first" ] || [ "$when" -lt "$first" ]; then first=$when; fi
    done < <(ours "$name" "$DRAIN_EVENTS" <<<"$doc")
    if [ -n "$NOTICE" ]; then
        WHY="Azure Scheduled Event(s) ${WHY} for ${name}"
        DEADLINE=$first
    fi
}

after_drain() {
    local id body=""
    for id in ${NOTICE//,/ }; do
        body="${body:+${body},}{\"EventId\": \"${id}\"}"
    done
    if curl -sf -H "$HEADER" -X POST -d "{\"StartRequests\": [${body}]}" "$EVENTS_URL" >/dev/null; then
        log "approved ${NOTICE}: the platform proceeds"
    else
        log "could not approve ${NOTICE}: the platform proceeds at NotBefore"
    fi
}

watch
