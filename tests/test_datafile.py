"""The data files parse the same with libyaml as with PyYAML's pure-Python safe loader (issue 35: plans read them
with libyaml for speed; nothing they hold may read differently)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components import datafile

ROOT = Path(__file__).resolve().parents[1]
DATA_FILES = sorted(p for p in (ROOT / "components").rglob("*.yaml"))


def test_libyaml_is_used_where_pyyaml_has_it() -> None:
    # the wheels PyPI serves carry libyaml; a plan on them must not fall back to the slow parser
    assert yaml.__with_libyaml__
    assert datafile.SAFE_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_data_file_reads_as_the_safe_loader_reads_it(path: Path) -> None:
    assert datafile.load_yaml(path) == yaml.safe_load(path.read_text())


def test_the_yaml_1_1_scalars_read_alike() -> None:
    text = "a: yes\nb: 0o17\nc: 017\nd: 1_000\ne: 2026-12-02\nf: .inf\ng: ~\nh: 0x1F\n"
    assert datafile.parse_yaml(text) == yaml.safe_load(text)
