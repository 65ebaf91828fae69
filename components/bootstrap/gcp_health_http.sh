#!/bin/bash
# gpu-cluster: the endpoint a MIG's autohealing health check probes (GCP).
#
# Answers GET HEALTH_PATH on HEALTH_PORT with 200 only while HEALTH_RESULT (written by
# gpu-cluster-health) says "healthy": true; 503 while it is missing (still booting: the MIG's
# initialDelaySec covers that) or unhealthy, so the MIG recreates the VM. Any other path: 404.
# The firewall admits the port from Google's health-check ranges only. Python 3 is on every Ubuntu image.
set -euo pipefail

export HEALTH_PORT="${HEALTH_PORT:?HEALTH_PORT is not set}"
export HEALTH_PATH="${HEALTH_PATH:-/health}"
export HEALTH_RESULT="${HEALTH_RESULT:-/var/lib/gpu-cluster/health.json}"

exec python3 -c '
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESULT, PATH = os.environ["HEALTH_RESULT"], os.environ["HEALTH_PATH"]


def verdict():
    try:
        with open(RESULT) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return 503, b"no health result yet\n"
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
