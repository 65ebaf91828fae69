"""Conformance checks: the offline plan judged by consumers no one here wrote (cloud API models, node software)."""
