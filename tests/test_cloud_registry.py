"""A new cloud is cheap (issue 34): its own packages and data, plus at most five shared Python files.

Per cloud, the Python files under components/ and bench/ outside its own packages (components/<cloud>/,
components/layout/<cloud>/ and its bootstrap modules components/bootstrap/<cloud>_*) that name it: its id
(`huaweicloud`), its resource type prefix (`huaweicloud:`) or its SDK module (`pulumi_huaweicloud`), all from
components/catalog/clouds.yaml. Each cloud's set is listed here: a file that starts naming a cloud fails with its
name. Huawei, the newest cloud, is the template for the next: its set is the four files a new cloud touches
(its `Cloud` value, its options block and field, and the schema generated from them), at most five. The older
clouds are still named by per-cloud code (their audit trails, interruption notices, ...): their sets may only shrink.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.catalog import CLOUDS
from components.catalog.clouds import cloud_entries
from components.datafile import load_yaml

ROOT = Path(__file__).resolve().parent.parent
MAX_SHARED_FILES = 5
# the shared files every new cloud touches: rows.py (the `Cloud` Literal: mypy needs one), spec/model.py (its
# <Cloud>Options block and field), provider_types.py (generated from spec/model.py) and args.py (its options field)
NEW_CLOUD_FILES = frozenset(
    {"components/catalog/rows.py", "components/spec/model.py", "components/provider_types.py", "components/args.py"}
)
# clouds added through the registry and the data, held to MAX_SHARED_FILES
DATA_DRIVEN_CLOUDS = ("huaweicloud",)
ALLOWED: dict[str, frozenset[str]] = {
    "huaweicloud": NEW_CLOUD_FILES,
    "tencentcloud": NEW_CLOUD_FILES
    | {
        "components/bootstrap/interruption.py",
        "components/cluster.py",
        "components/layout/huaweicloud/slurm.py",
        "components/plan/bill.py",
        "components/policy/__init__.py",
        "components/policy/rules/data.py",
        "components/provider.py",
    },
    "alicloud": NEW_CLOUD_FILES
    | {
        "components/bootstrap/interruption.py",
        "components/cli/browse.py",
        "components/cluster.py",
        "components/layout/tencentcloud/monitoring.py",
        "components/plan/bill.py",
        "components/policy/__init__.py",
        "components/policy/rules/data.py",
        "components/policy/rules/kubernetes.py",
        "components/policy/rules/nodes.py",
        "components/provider.py",
        "components/spec/resolve.py",
        "components/spec/resolved.py",
    },
    "gcp": NEW_CLOUD_FILES
    | {
        "components/bootstrap/interruption.py",
        "components/bootstrap/mounts.py",
        "components/catalog/__init__.py",
        "components/catalog/tags.py",
        "components/cli/browse.py",
        "components/cluster.py",
        "components/policy/rules/data.py",
        "components/policy/rules/kubernetes.py",
        "components/policy/rules/network.py",
        "components/policy/rules/nodes.py",
        "components/policy/rules/tags.py",
        "components/policy/transit.py",
        "components/provider.py",
        "components/recommend.py",
        "components/spec/resolve.py",
        "components/spec/resolved.py",
        "components/spec/rules/capacity.py",
        "components/spec/rules/identity.py",
    },
    "azure": NEW_CLOUD_FILES
    | {
        "components/bootstrap/interruption.py",
        "components/bootstrap/monitoring.py",
        "components/catalog/__init__.py",
        "components/cli/browse.py",
        "components/cluster.py",
        "components/layout/arch.py",
        "components/policy/rules/data.py",
        "components/policy/rules/kubernetes.py",
        "components/policy/rules/network.py",
        "components/policy/rules/nodes.py",
        "components/policy/transit.py",
        "components/provider.py",
        "components/spec/resolve.py",
        "components/spec/resolved.py",
        "components/spec/rules/names.py",
        "components/spec/rules/nodes.py",
    },
    "aws": NEW_CLOUD_FILES
    | {
        "bench/__main__.py",
        "bench/floor.py",
        "components/bootstrap/interruption.py",
        "components/catalog/__init__.py",
        "components/cli/browse.py",
        "components/cluster.py",
        "components/layout/azure/__init__.py",
        "components/layout/slurm.py",
        "components/plan/__init__.py",
        "components/policy/rules/data.py",
        "components/policy/rules/kubernetes.py",
        "components/policy/rules/network.py",
        "components/policy/rules/nodes.py",
        "components/policy/rules/tags.py",
        "components/policy/transit.py",
        "components/provider.py",
        "components/spec/__init__.py",
        "components/spec/resolve.py",
        "components/spec/rules/capacity.py",
        "components/spec/rules/update.py",
    },
}


def naming_files(cloud: str) -> set[str]:
    entry = cloud_entries()[cloud]  # type: ignore[index]
    pattern = re.compile(
        rf"(?<![\w.-]){re.escape(cloud)}(?!\w)|{re.escape(entry.type_prefix)}|\b{re.escape(entry.sdk)}\b"
    )
    own = (
        f"components/{entry.package}/",
        f"components/layout/{entry.package}/",
        f"components/bootstrap/{entry.package}_",
    )
    found = set()
    for top in ("components", "bench"):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(own) and pattern.search(path.read_text()):
                found.add(rel)
    return found


@pytest.mark.parametrize("cloud", CLOUDS)
def test_only_the_listed_shared_files_name_the_cloud(cloud: str) -> None:
    extra = sorted(naming_files(cloud) - ALLOWED[cloud])
    assert not extra, f"{cloud} is named outside its packages by {extra}: move the fact into its data or package"


@pytest.mark.parametrize("cloud", DATA_DRIVEN_CLOUDS)
def test_a_data_driven_cloud_touches_at_most_five_shared_files(cloud: str) -> None:
    assert naming_files(cloud) == ALLOWED[cloud]  # the list is exact: a file that stopped naming it leaves it
    assert len(ALLOWED[cloud]) <= MAX_SHARED_FILES


def test_every_cloud_has_its_registry_row_packages_and_sdk() -> None:
    assert tuple(cloud_entries()) == CLOUDS
    for cloud, entry in cloud_entries().items():
        assert (ROOT / "components" / entry.package / "__init__.py").is_file(), cloud
        assert (ROOT / "components" / "layout" / entry.package / "__init__.py").is_file(), cloud
        package_text = "".join(p.read_text() for p in (ROOT / "components" / entry.package).rglob("*.py"))
        assert re.search(rf"^\s*import {re.escape(entry.sdk)}\b", package_text, re.M), (cloud, entry.sdk)


def test_every_policy_type_token_belongs_to_a_registered_cloud() -> None:
    """The policy's per-type rows (resource_types.yaml) are keyed by type tokens a registered cloud's SDK registers
    (or Kubernetes', which every cloud's clusters share)."""
    prefixes = (*(e.type_prefix for e in cloud_entries().values()), "kubernetes:")
    data = load_yaml(ROOT / "components" / "policy" / "resource_types.yaml")
    tokens = set()
    for value in data.values():
        tokens |= set(value) if isinstance(value, dict | list) else {value}
    assert tokens and all(str(t).startswith(prefixes) for t in tokens), sorted(
        t for t in tokens if not str(t).startswith(prefixes)
    )
