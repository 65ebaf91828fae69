"""Reading a plan JSON file for `gpu-cluster diff`: one clear error for anything that is not a plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def read_plan(path: Path) -> dict[str, Any]:
    """A plan JSON file, checked enough to diff: an object with a `resources` list of URN'd entries."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(str(path), "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            str(path), f"is not JSON (line {exc.lineno}); give `gpu-cluster plan -f json` output"
        ) from None
    resources = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(resources, list) or not all(isinstance(r, dict) and "urn" in r for r in resources):
        raise ConfigError(str(path), "is not a gpu-cluster plan: expected an object with a `resources` list")
    return dict(doc)
