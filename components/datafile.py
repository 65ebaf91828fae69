"""The project's YAML data files, parsed with libyaml where PyYAML was built with it.

The catalogs are about 400 KB of YAML read by every plan: the pure-Python parser took about 40% of a plan's CPU,
libyaml (PyYAML's `CSafeLoader`, the same safe constructor and resolver) a tenth of that. The wheels PyPI serves
for Linux, macOS and Windows carry libyaml; without it the pure-Python `SafeLoader` gives the same data, slower.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str | bytes) -> Any:
    """`yaml.safe_load`, with libyaml where present."""
    return yaml.load(text, Loader=SAFE_LOADER)


def load_yaml(path: Path) -> Any:
    """A data file's content (`parse_yaml` of its bytes)."""
    return parse_yaml(path.read_bytes())
