"""Sizes in the PR diff are judged by their direction (issue 26 defect 9): growing a filesystem is in place where its
provider says so, shrinking it is still flagged. Rules: `sized:` in components/diff/replacement/<cloud>.yaml."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.diff import diff_plans, load_rules
from components.diff.rules import classify
from components.plan import load_stack

from .conftest import ROOT, plan_stack, plan_values

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
GCP_LUSTRE = "gcp:lustre/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"
NAS = "alicloud:nas/fileSystem:FileSystem"
AML = "azure-native:storagecache:AmlFilesystem"


def _shared_size(stack: str, size_gb: int | None = None) -> dict[str, Any]:
    """The plan JSON of a shipped stack, with its shared filesystem resized when `size_gb` is given."""
    if size_gb is None:
        return json.loads(json.dumps(plan_stack(stack).as_json(), default=str))
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    values["gpu-cluster:cluster"]["storage"]["shared"]["sizeGb"] = size_gb
    return json.loads(json.dumps(plan_values(values, stack).as_json(), default=str))


def _loss(diff: Any) -> list[str]:
    return [w for w in diff.warnings if w.startswith("DATA LOSS")]


@pytest.mark.parametrize(
    ("token", "path", "old", "new", "verdict"),
    [
        (FSX, "storageCapacity", 4800, 7200, "update"),  # the defect: was may-replace -> DATA LOSS
        (FSX, "storageCapacity", 7200, 4800, "replace"),
        (FSX, "fileSystemTypeVersion", "2.12", "2.15", "update"),
        (FSX, "fileSystemTypeVersion", "2.15", "2.12", "replace"),
        (FSX, "fileSystemTypeVersion", "2.9", "2.10", "update"),  # versions compare as numbers, not text
        (FSX, "metadataConfiguration.iops", 12000, 24000, "update"),
        (FSX, "metadataConfiguration.iops", 24000, 12000, "replace"),
        (GCP_LUSTRE, "capacityGib", "18000", "36000", "update"),  # pulumi-gcp types it as a string
        (GCP_LUSTRE, "capacityGib", "36000", "18000", "may-replace"),
        (FILESTORE, "fileShares.capacityGb", 2560, 5120, "update"),
        (FILESTORE, "fileShares.capacityGb", 5120, 2560, "update"),  # Zonal: "Up or down" within its range
        (FILESTORE, "fileShares.capacityGb", 5120, 12800, "may-replace"),  # across the 10 TiB range
        (NAS, "capacity", 100, 200, "update"),
        (NAS, "capacity", 200, 100, "may-replace"),  # UpgradeFileSystem: the new capacity must be greater
        (AML, "storageCapacityTiB", 8, 16, "replace"),  # the PATCH body has no size: either way replaces
    ],
)
def test_a_size_is_judged_by_its_direction(token, path, old, new, verdict):
    assert classify(load_rules().rule(token), path, old, new, {}) == verdict


@pytest.mark.parametrize(("old", "new"), [(None, 4800), ("<computed>", 4800), (4800, None)])
def test_a_size_whose_direction_is_unknown_gets_the_worst_verdict(old, new):
    assert classify(load_rules().rule(FSX), "storageCapacity", old, new, {}) == "replace"
    assert classify(load_rules().rule(FSX), "storageCapacity") == "replace"  # no values at all


def test_fsx_scratch_1_replaces_even_when_it_grows():
    # lustre_file_system.go: ForceNew when `n < o || deployment_type == SCRATCH_1`
    rule = load_rules().rule(FSX)
    assert classify(rule, "storageCapacity", 1200, 2400, {"deploymentType": "SCRATCH_1"}) == "replace"
    assert classify(rule, "storageCapacity", 1200, 2400, {"deploymentType": "PERSISTENT_2"}) == "update"


def test_a_sized_rule_with_a_bad_verdict_is_refused(tmp_path):
    rule = 'types:\n  "x:y:Z":\n    holds: data\n    source: s\n    sized: {size: {grow: maybe}}\n'
    (tmp_path / "x.yaml").write_text(rule)
    with pytest.raises(ValueError, match="sized size: verdict 'maybe'"):
        load_rules(tmp_path)


def test_growing_the_fsx_filesystem_of_aws_h100_is_no_data_loss():
    grown = diff_plans(_shared_size("aws-h100"), _shared_size("aws-h100", 9600))
    fsx = next(c for c in grown.changed if c.type == FSX)
    assert [ch.path for ch in fsx.changes] == ["storageCapacity"] and fsx.verdict == "update"
    assert not _loss(grown) and fsx.urn not in grown.may_replace


def test_shrinking_the_fsx_filesystem_of_aws_h100_is_still_data_loss():
    shrunk = diff_plans(_shared_size("aws-h100", 9600), _shared_size("aws-h100"))
    fsx = next(c for c in shrunk.changed if c.type == FSX)
    assert fsx.verdict == "replace" and fsx.urn in shrunk.may_replace
    assert any("the shared filesystem" in w and "storageCapacity" in w for w in _loss(shrunk)), shrunk.warnings


def test_growing_gcp_managed_lustre_and_filestore_is_no_data_loss():
    lustre = diff_plans(_shared_size("gcp-a3mega"), _shared_size("gcp-a3mega", 36000))
    assert next(c for c in lustre.changed if c.type == GCP_LUSTRE).verdict == "update" and not _loss(lustre)
    filestore = diff_plans(_shared_size("gcp-h100-cmk"), _shared_size("gcp-h100-cmk", 5120))
    assert next(c for c in filestore.changed if c.type == FILESTORE).verdict == "update" and not _loss(filestore)
