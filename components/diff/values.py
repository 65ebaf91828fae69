"""Values in a diff's lines: cut to a width, and an old/new pair cut so that the part that changed stays in view."""

from __future__ import annotations

import json
from typing import Any

MAX_VALUE = 80


def short(value: Any, limit: int = MAX_VALUE) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def from_to(old: Any, new: Any, limit: int = MAX_VALUE) -> str:
    """`old -> new`, each cut to `limit`; two long strings that share a beginning lose it first (`...20260417 of` ->
    `...20260619 of`), so the cut never hides the part that changed."""
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > limit:
        common = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        if common > 24:  # keep a few characters before the difference for context
            cut = common - 16
            return f"...{short(old[cut:], limit - 3)} -> ...{short(new[cut:], limit - 3)}"
    return f"{short(old, limit)} -> {short(new, limit)}"
