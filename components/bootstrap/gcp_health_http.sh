#!/bin/bash
# gpu-cluster: the endpoint a MIG's autohealing health check probes (GCP).
#
# Answers GET HEALTH_PATH on HEALTH_PORT from HEALTH_RESULT (written by gpu-cluster-health):
#   200  this boot's check passed ("healthy": true), or is still running (a rebooted node is given the
#        time the check takes: its own waits are bounded; it then says healthy or not)
#   503  the check failed, or there is no result of this boot yet (missing, unreadable, or written in an
#        earlier boot: its "boot" is not /proc/sys/kernel/random/boot_id): a new VM is covered by the
#        MIG's initialDelaySec, and after unhealthyThreshold failed probes the MIG recreates the VM
#   404  any other path
# The firewall admits the port from Google's health-check ranges only. Python 3 is on every Ubuntu image.
set -euo pipefail

export HEALTH_PORT="${HEALTH_PORT:?HEALTH_PORT is not set}"
export HEALTH_PATH="${HEALTH_PATH:-/health}"
export HEALTH_RESULT="${HEALTH_RESULT:-/var/lib/gpu-cluster/health.json}"
export BOOT_ID_FILE="${BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}"

exec python3 -c '
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESULT, PATH = os.environ["HEALTH_RESULT"], os.environ["HEALTH_PATH"]


def boot_id():
    try:
        with open(os.environ["BOOT_ID_FILE"]) as f:
            return f.read().strip()
    except OSError:
        return ""


def verdict():
    try:
        with open(RESULT) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return 503, b"no health result yet\n"
    if not isinstance(data, dict):
        return 503, b"no health result yet\n"
    boot = boot_id()
    if data.get("boot") and boot and data["boot"] != boot:
        return 503, b"no health result of this boot yet\n"
    if data.get("status") == "running":
        return 200, b"check running\n"
    if data.get("healthy") is True:
        return 200, b"healthy\n"
    return 503, b"unhealthy\n"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        code, body = verdict() if self.path.split("?")[0] == PATH else (404, b"not found\n")
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("", int(os.environ["HEALTH_PORT"])), Handler).serve_forever()
'
