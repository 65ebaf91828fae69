"""Errors and findings shared by every layer.

`ConfigError` is a plain exception, so the spec and the layouts need no Pulumi; the program
(`__main__.py`) re-raises it as `pulumi.RunError`, which `pulumi up` prints as the message alone,
without the program text and stack trace it shows for other exceptions. It is raised before any
resource is registered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

CLUSTER_KEY = "gpu-cluster:cluster"


def _one_line(text: str) -> str:
    """Control characters (a newline in a YAML key) shown escaped: an error is always one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class ConfigError(ValueError):
    """One invalid configuration value: the key path, what was given, what is allowed. Always one line."""

    def __init__(self, key: str, message: str) -> None:
        self.key = _one_line(key)
        self.message = _one_line(message)
        super().__init__(f"{self.key}: {self.message}" if self.key else self.message)


class ConfigErrors(ConfigError):
    """Every problem of one config at once: one line each, in the order the rules report them."""

    def __init__(self, errors: list[ConfigError]) -> None:
        first = errors[0]
        super().__init__(first.key, first.message)
        self.errors = errors
        self.args = ("\n".join(str(e) for e in errors),)

    def __str__(self) -> str:
        return str(self.args[0])


def refuse(problems: Iterable[ConfigError]) -> None:
    """Raise every problem a validator found, one line each (ConfigErrors), or nothing: a user fixing a config
    sees all its problems in one run, not one per run."""
    found = list(problems)
    if len(found) == 1:
        raise found[0]
    if found:
        raise ConfigErrors(found)


@dataclass(frozen=True)
class Finding:
    """A validation result that does not stop the plan (ParallelCluster-style levels)."""

    level: Literal["warning", "info"]
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"
