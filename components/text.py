"""Text helpers shared by every layer (a leaf: standard library only)."""

from __future__ import annotations

from typing import Any


def one_line(text: Any) -> str:
    """A data file's folded text (`>-`, several spaces, line breaks) as one line, for messages and the plan."""
    return " ".join(str(text).split())
