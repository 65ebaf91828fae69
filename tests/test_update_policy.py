"""The update policy per config key (issue 28): the table as data, the plan's `config`, the diff per key, the CLI."""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console
from typer.testing import CliRunner

from components.cli import REFUSED_EXIT, app
from components.diff import diff_plans, render_json, render_markdown, render_table
from components.diff.spec_changes import changed_keys, mode_of, spec_changes
from components.spec import updates
from components.spec.model import ClusterConfig, StackKeys
from components.spec.update_table import BEGIN, END, docs_with_table, policy_rows, render_rows
from components.spec.updates import POLICIES, config_document, model_keys, update_policies

from .conftest import ROOT, aws_values, plan_json, plan_values

# --- the table: one entry per key of the model, each with a source ----------------------------------------------


def _walk(model: type[BaseModel], prefix: str) -> set[str]:
    """Every key a stack file can set, blocks too, walked here independently of components/spec/updates.py."""
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        key = prefix + (info.alias or name)
        keys.add(key)
        for inner in typing.get_args(info.annotation) or (info.annotation,):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                keys |= _walk(inner, key + ".")
    return keys


def test_every_key_of_the_config_model_has_exactly_one_entry_and_no_entry_names_another() -> None:
    expected = _walk(StackKeys, "") | _walk(ClusterConfig, "cluster.")
    table = update_policies()
    assert expected - set(table) == set(), "keys without an update policy in components/spec/updates.yaml"
    assert set(table) - expected == set(), "entries naming no key of components/spec/model.py"
    assert sorted(model_keys()) == sorted(expected)
    # the provider option blocks and the nested keys are in, not only the top level
    assert {"cluster.azure.encryptionAtHost", "cluster.storage.shared.sizeGb", "cluster.scaling.schedule.cron"} <= set(
        table
    )


def test_a_key_given_twice_in_the_data_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "updates.yaml"
    entry = "    policy: in-place\n    jobs: x.\n    source: y\n"
    data.write_text(f"keys:\n  cluster.nodes:\n{entry}  cluster.nodes:\n{entry}")
    monkeypatch.setattr(updates, "DATA", data)
    updates.update_policies.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"key given twice: cluster\.nodes"):
            updates.update_policies()
    finally:
        updates.update_policies.cache_clear()


def test_every_entry_and_override_has_a_policy_jobs_and_a_source_and_refused_says_how() -> None:
    effects = [(key, e) for key, entry in update_policies().items() for e in (entry, *entry.when)]
    assert len(effects) > len(update_policies())  # overrides were read
    for key, effect in effects:
        assert effect.policy in POLICIES, key
        assert effect.jobs.strip().endswith("."), f"{key}: jobs is one sentence"
        assert len(effect.source.strip()) > 10, f"{key}: no source"
        if effect.policy == "refused":
            assert effect.how and len(effect.how) > 10, f"{key}: refused without the safe way"
        else:
            assert effect.how is None, f"{key}: how is for refused changes"


def test_when_overrides_match_on_the_mode_and_the_first_match_wins() -> None:
    image = update_policies()["cluster.image"]
    assert image.effect({"nodeGroup": "managed", "scheduler": "none", "cloud": "aws"}).policy == "rolling"
    assert image.effect({"nodeGroup": "instances", "scheduler": "none", "cloud": "gcp"}).policy == "replace"
    size = update_policies()["cluster.storage.shared.sizeGb"]
    assert size.effect({"cloud": "azure", "sharedKind": "lustre"}).policy == "refused"
    assert size.effect({"cloud": "azure", "sharedKind": "nfs"}).policy == "in-place"  # every match key must hold
    assert size.effect(None).policy == "in-place"
    gpu = update_policies()["cluster.instanceType"]  # kubernetes on aws: the first override, before the general one
    assert gpu.effect({"scheduler": "kubernetes", "cloud": "aws", "nodeGroup": "managed"}).policy == "replace"
    assert gpu.effect({"scheduler": "kubernetes", "cloud": "gcp", "nodeGroup": "managed"}).policy == "rolling"


def test_the_docs_table_is_the_data() -> None:
    page = (ROOT / "docs" / "day2.md").read_text()
    assert BEGIN in page and END in page
    assert docs_with_table(page) == page, "run: python3 -m uv run python -m components.spec.update_table docs/day2.md"
    assert "docs/day2.md" in (ROOT / "README.md").read_text()


def test_the_rows_per_cloud_keep_only_the_overrides_that_can_apply() -> None:
    azure = {(r["key"], r["when"]) for r in policy_rows("azure")}
    gcp = {(r["key"], r["when"]) for r in policy_rows("gcp")}
    lustre_on_azure = ("cluster.storage.shared.sizeGb", "cloud azure, sharedKind lustre")
    assert lustre_on_azure in azure and lustre_on_azure not in gcp
    assert ("cluster.image", "nodeGroup instances") in azure and ("cluster.image", "nodeGroup instances") in gcp
    markdown = render_rows(policy_rows("azure"))
    assert "| `cluster.nodes` |  | in-place |" in markdown


# --- the plan carries its config ----------------------------------------------------------------------------------


def test_the_plan_json_carries_the_config_as_written_with_defaults_and_camel_case_keys() -> None:
    doc = plan_json(plan_values(aws_values(nodes=3, storage={"rootGb": 300})))
    config = doc["config"]
    assert config["cloud"] == "aws" and config["region"] == "us-east-1"
    cluster = config["cluster"]
    assert cluster["nodes"] == 3 and cluster["storage"]["rootGb"] == 300
    assert cluster["storage"]["scratchPath"] == "/scratch"  # a default, filled in
    assert cluster["nodeGroup"] == "managed" and "node_group" not in cluster


def test_secure_values_in_the_config_are_masked_as_the_plan_masks_them() -> None:
    values = aws_values(sshPublicKey="[secret]", tags={"team": "ml", "token": "[secret]"})
    doc = config_document(values, "us-east-1", None)
    assert doc["cluster"]["sshPublicKey"] == "[secret]"  # not the stand-in the plan validates with
    assert doc["cluster"]["tags"] == {"team": "ml", "token": "[secret]"}


# --- the diff speaks per key ----------------------------------------------------------------------------------


def test_changed_keys_compare_blocks_by_their_keys_and_a_block_added_whole_as_one_key() -> None:
    old = {"cloud": "aws", "cluster": {"nodes": 2, "storage": {"rootGb": 200, "shared": None}, "tags": {"a": "1"}}}
    new = copy.deepcopy(old)
    new["cluster"]["nodes"] = 3
    new["cluster"]["storage"]["shared"] = {"kind": "lustre"}
    new["cluster"]["tags"]["b"] = "2"
    assert changed_keys(old, new) == [
        ("cluster.nodes", 2, 3),
        ("cluster.storage.shared", None, {"kind": "lustre"}),
        ("cluster.tags", {"a": "1"}, {"a": "1", "b": "2"}),  # a map is one key's value
    ]
    assert changed_keys(old, copy.deepcopy(old)) == []


def _plan(config: dict[str, Any], cloud: str = "aws", node_group: str = "managed") -> dict[str, Any]:
    return {
        "stack": "s",
        "cloud": cloud,
        "resources": [],
        "summary": {"nodeGroup": node_group, "scheduler": "none", "sharedStorage": {"kind": "lustre"}},
        "config": config,
    }


def test_spec_changes_take_the_policy_of_the_new_plans_mode() -> None:
    old = {"cloud": "aws", "cluster": {"image": "auto", "nodes": 2, "network": {"cidr": "10.0.0.0/16"}}}
    new = {"cloud": "aws", "cluster": {"image": "ami-0abc", "nodes": 3, "network": {"cidr": "10.1.0.0/16"}}}
    managed = {c.key: c for c in spec_changes(_plan(old), _plan(new))}
    assert managed["cluster.image"].policy == "rolling" and managed["cluster.nodes"].policy == "in-place"
    refused = managed["cluster.network.cidr"]
    assert refused.refused and refused.how and refused.line().startswith("REFUSED: cluster.network.cidr: ")
    instances = {c.key: c for c in spec_changes(_plan(old), _plan(new, node_group="instances"))}
    assert instances["cluster.image"].policy == "replace"
    assert mode_of(_plan(new, cloud="gcp")) == {
        "nodeGroup": "managed",
        "scheduler": "none",
        "cloud": "gcp",
        "sharedKind": "lustre",
    }
    # a plan from before plans carried their config: no per-key lines, no guess
    assert spec_changes({"resources": []}, _plan(new)) == []


def test_the_rendered_diff_says_each_changed_key_before_the_warnings_and_json_has_spec_changes() -> None:
    base = plan_json(plan_values(aws_values(nodes=2)))
    grown = plan_json(plan_values(aws_values(nodes=1, image="ami-0123456789abcdef0")))
    d = diff_plans(base, grown)
    assert [c.key for c in d.spec_changes] == ["cluster.nodes", "cluster.image"]
    doc = json.loads(render_json([d]))
    assert doc["specChanges"][0] == {**doc["specChanges"][0], "key": "cluster.nodes", "old": 2, "new": 1}
    assert doc["specChanges"][0]["policy"] == "in-place"
    markdown = render_markdown([d])
    first_key = markdown.index("cluster.nodes: 2 -> 1 (in-place)")
    assert first_key < markdown.index("DATA LOSS: node count 2 -> 1")
    console = Console(record=True, width=400)
    render_table([d], console)
    text = console.export_text()
    assert text.index("cluster.image: auto -> ami-0123456789abcdef0 (rolling)") < text.index("DATA LOSS")


def test_gpu_cluster_diff_exits_4_for_a_refused_change_and_prints_the_diff(tmp_path: Path) -> None:
    base = plan_json(plan_values(aws_values(nodes=2)))
    moved = plan_json(plan_values(aws_values(nodes=2, network={"cidr": "10.50.0.0/16"})))
    grown = plan_json(plan_values(aws_values(nodes=3)))
    paths = {}
    for name, doc in (("base", base), ("moved", moved), ("grown", grown)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(doc))
    runner = CliRunner()
    refused = runner.invoke(app, ["diff", str(paths["base"]), str(paths["moved"]), "-f", "markdown"])
    assert refused.exit_code == REFUSED_EXIT == 4, refused.output
    assert "REFUSED: cluster.network.cidr: 10.42.0.0/16 -> 10.50.0.0/16" in refused.output
    assert "Safe way: Create a new stack with the new range" in refused.output
    fine = runner.invoke(app, ["diff", str(paths["base"]), str(paths["grown"])])
    assert fine.exit_code == 0, fine.output


def test_gpu_cluster_update_policy_prints_the_table_in_each_format() -> None:
    runner = CliRunner()
    rows = json.loads(runner.invoke(app, ["update-policy", "-f", "json", "--cloud", "aws"]).output)
    assert rows == policy_rows("aws")
    assert {r["key"] for r in rows} == set(update_policies())
    markdown = runner.invoke(app, ["update-policy", "--format", "markdown"]).output
    assert markdown == render_rows(policy_rows())
    table = runner.invoke(app, ["update-policy"], env={"COLUMNS": "100"})
    assert table.exit_code == 0 and "cluster.storage.shared.sizeGb" in table.output
    bad = runner.invoke(app, ["update-policy", "--cloud", "ibm"])
    assert bad.exit_code == 2 and "--cloud: got 'ibm'" in bad.output
