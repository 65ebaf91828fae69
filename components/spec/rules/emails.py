"""Email targets (budget.notify, monitoring.notify): one error per bad, repeated or surplus address."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...errors import ConfigError
from ..messages import describe

# one address, no display name: what the clouds' email fields take (RFC 5321 local@domain, a dot in the domain)
EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+$")


def email_errors(addresses: tuple[str, ...], key: str, most: int | None, limit: str) -> Iterator[ConfigError]:
    """Each address well formed and given once, and no more than `most` (`limit` says whose limit it is)."""
    for i, address in enumerate(addresses):
        if not EMAIL.fullmatch(address):
            yield ConfigError(f"{key}[{i}]", f"got {describe(address)}; an email address such as ops@example.com")
    if len(set(addresses)) != len(addresses):
        yield ConfigError(key, "an address is given twice; each once")
    if most is not None and len(addresses) > most:
        yield ConfigError(key, f"{len(addresses)} addresses; {limit}")
