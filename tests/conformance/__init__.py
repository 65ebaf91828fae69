"""Conformance checks: the plans judged by the clouds' own API models and by the software on the nodes."""
