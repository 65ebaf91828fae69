"""Pulumi helpers every cloud package uses the same way (so a rule is kept in one place).

- `from_config`: a value taken from the cluster config stays secret in state and in plans when the
  config holds `secure:` values (the engine marks the whole `gpu-cluster:cluster` object secret).
- `invoke_options`: every invoke gets `parent`, so it runs with the parent's explicit provider
  (region, credentials) instead of the default one (pulumi-eks does the same).
"""

from __future__ import annotations

from typing import TypeVar

import pulumi

from .spec import ClusterSpec

T = TypeVar("T")


def from_config(spec: ClusterSpec, value: T) -> pulumi.Input[T]:
    if spec.secret_config and value is not None:
        return pulumi.Output.secret(value)
    return value


def invoke_options(parent: pulumi.Resource) -> pulumi.InvokeOutputOptions:
    return pulumi.InvokeOutputOptions(parent=parent)
