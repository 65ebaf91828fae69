"""Plan diffs: the engine on synthetic and real plans, replacement rules, renderers, the CLI, git bases."""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from components.cli import app
from components.diff import MARKER, diff_plans, load_rules, render_json, render_markdown
from components.diff.render import COMMENT_LIMIT, change_lines, grouped_warnings, render_table
from components.diff.rules import RULES_DIR, classify
from components.plan import load_stack

from .conftest import ROOT, plan_stack, plan_values

runner = CliRunner()
ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"


def res(name: str, type_: str = "test:index:Thing", **inputs: Any) -> dict[str, Any]:
    return {"urn": f"urn:pulumi:s::p::{type_}::{name}", "type": type_, "name": name, "custom": True, "inputs": inputs}


def plan_doc(*resources: dict[str, Any], **summary: Any) -> dict[str, Any]:
    return {"stack": "s", "cloud": "aws", "resources": list(resources), "summary": summary, "warnings": []}


@cache
def variant(stack: str, **cluster: Any) -> dict[str, Any]:
    """The plan of a shipped stack with some cluster keys changed (None removes a key)."""
    values = copy.deepcopy(load_stack(ROOT, stack).values)
    for key, value in cluster.items():
        if isinstance(value, tuple):  # a mapping, passed hashable for the cache
            value = dict(value)
        if value is None:
            values["gpu-cluster:cluster"].pop(key, None)
        else:
            values["gpu-cluster:cluster"][key] = value
    return json.loads(json.dumps(plan_values(values, stack).as_json(), default=str))


def base(stack: str) -> dict[str, Any]:
    return json.loads(json.dumps(plan_stack(stack).as_json(), default=str))


def by_name(diff, name: str):
    return next(c for c in diff.changed if c.name == name)


# --- the engine on synthetic plans -------------------------------------------------------------


def test_created_deleted_changed_unchanged_with_paths():
    nics = [{"interfaceType": "efa"} for _ in range(4)]
    old = plan_doc(
        res("keep", a=1),
        res("gone"),
        res("lt", networkInterfaces=nics, tags={"team": "ml"}),
    )
    new_nics = copy.deepcopy(nics)
    new_nics[3]["interfaceType"] = "efa-only"
    new = plan_doc(res("keep", a=1), res("born"), res("lt", networkInterfaces=new_nics, tags={"team": "ai"}))
    d = diff_plans(old, new)
    assert [u.rsplit("::", 1)[1] for u in d.created] == ["born"]
    assert [u.rsplit("::", 1)[1] for u in d.deleted] == ["gone"]
    assert d.unchanged == 1
    changes = {c.path: (c.old, c.new) for c in by_name(d, "lt").changes}
    assert changes == {"networkInterfaces[3].interfaceType": ("efa", "efa-only"), "tags.team": ("ml", "ai")}


def test_type_changes_count_as_changes():
    d = diff_plans(plan_doc(res("x", flag=True, n=1)), plan_doc(res("x", flag=1, n=1.5)))
    assert {c.path for c in d.changed[0].changes} == {"flag", "n"}


def test_secrets_are_masked_everywhere():
    old = plan_doc(res("vm", password="hunter2", nested={"apiKey": "k-old"}, sshKey="[secret]"))
    new = plan_doc(res("vm", password="hunter3", nested={"apiKey": "k-new"}, sshKey="[secret]"))
    d = diff_plans(old, new)
    out = render_json([d]) + render_markdown([d])
    for leaked in ("hunter", "k-old", "k-new"):
        assert leaked not in out
    changes = {c.path: (c.old, c.new) for c in d.changed[0].changes}
    assert changes == {"password": ("[secret]", "[secret]"), "nested.apiKey": ("[secret]", "[secret]")}
    # two `[secret]` placeholders are equal: the plan cannot know, and says nothing changed there
    assert "sshKey" not in changes


def test_replacement_propagates_along_references():
    vpc_old = res("vpc", "aws:ec2/vpc:Vpc", cidrBlock="10.0.0.0/16")
    vpc_new = res("vpc", "aws:ec2/vpc:Vpc", cidrBlock="10.1.0.0/16")
    subnet = res("sn", "aws:ec2/subnet:Subnet", vpcId="<id of vpc>", cidrBlock="10.0.0.0/17")
    node = res("node", INSTANCE, subnetId="<id of sn>")
    d = diff_plans(plan_doc(vpc_old, subnet, node, nodes=1), plan_doc(vpc_new, subnet, node, nodes=1))
    assert {c.name: c.verdict for c in d.changed} == {"vpc": "replace", "sn": "replace", "node": "replace"}
    assert d.warnings[0].startswith("DATA LOSS: replaces aws:ec2/instance:Instance `node`")
    assert any(w.startswith("DISRUPTION: replaces aws:ec2/vpc:Vpc `vpc`") for w in d.warnings)


def test_unknown_types_may_replace_and_tags_do_not():
    old = plan_doc(res("a", "gcp:compute/disk:Disk", size=10, labels={"t": "1"}), res("b", ASG, tags=[{"v": 1}]))
    new = plan_doc(res("a", "gcp:compute/disk:Disk", size=20, labels={"t": "1"}), res("b", ASG, tags=[{"v": 2}]))
    d = diff_plans(old, new)
    assert d.may_replace == [res("a", "gcp:compute/disk:Disk")["urn"]]
    assert "DATA LOSS: may replace gcp:compute/disk:Disk `a` (`size`)" in d.warnings[0]


def test_a_new_stack_is_all_created_and_a_removed_one_all_deleted():
    doc = base("aws-dev")
    created, deleted = diff_plans(None, doc), diff_plans(doc, None)
    assert len(created.created) == len(doc["resources"]) and not created.deleted
    assert len(deleted.deleted) == len(doc["resources"]) and not deleted.created
    assert deleted.warnings[0].startswith("DATA LOSS: the stack `aws-dev` is removed")
    assert any("deletes aws:autoscaling/group:Group" in w for w in deleted.warnings)
    # one side missing: the summary says new / removed, not `? -> 1`
    # est. $/h: everything the stack runs (totalHourlyUsd: the g4dn.xlarge 0.526, its gp3 disk, the NAT and its IP)
    assert created.summary["line"] == f"+{len(doc['resources'])} / ~0 / -0, GPUs 1 (new), est. $/h 0.60 (new)"
    assert deleted.summary["line"] == f"+0 / ~0 / -{len(doc['resources'])}, GPUs 1 (removed), est. $/h 0.60 (removed)"
    assert "| `aws-dev` | +0 / ~0 / -{} | 1 (removed) | 0.60 (removed) |".format(len(doc["resources"])) in (
        render_markdown([deleted])
    )


# --- real plans of the shipped AWS stacks ------------------------------------------------------


def test_one_more_node_changes_only_the_desired_capacity():
    d = diff_plans(base("aws-h100"), variant("aws-h100", nodes=5))
    assert not d.created and not d.deleted and not d.may_replace
    asg = next(c for c in d.changed if c.type == ASG)
    assert {c.path: (c.old, c.new) for c in asg.changes}["desiredCapacity"] == (4, 5)
    assert asg.verdict == "update"
    # totals with the FSx, NAT and disks: 220.16 + ~4.1 fixed -> + one p5.48xlarge and its disk
    assert d.summary["line"] == "+0 / ~2 / -0, GPUs 32 -> 40, est. $/h 224 -> 279"
    assert not [w for w in d.warnings if w.startswith(("DATA LOSS", "DISRUPTION"))]


def test_instances_mode_adds_instances():
    d = diff_plans(base("aws-a100-instances"), variant("aws-a100-instances", nodes=4))
    assert sorted(u.rsplit("::", 1)[1] for u in d.created) == ["a100-pair-aws-node-2", "a100-pair-aws-node-3"]
    assert not d.deleted and not d.may_replace


def test_instance_type_change_replaces_instances_and_warns_of_data_loss():
    d = diff_plans(base("aws-a100-instances"), variant("aws-a100-instances", instanceType=None, gpu="A100-80GB:8"))
    instances = [c for c in d.changed if c.type == INSTANCE]
    assert len(instances) == 2 and sorted(d.may_replace) == sorted(c.urn for c in instances)
    assert all(any(ch.path == "launchTemplate.version" for ch in c.changes) for c in instances)
    assert d.warnings[0].startswith("DATA LOSS: replaces aws:ec2/instance:Instance `a100-pair-aws-node-0`")
    assert any("instance type p4d.24xlarge -> p4de.24xlarge: every node is recreated" in w for w in d.warnings)


def test_instance_type_change_in_a_managed_group_rolls_out_on_refresh():
    d = diff_plans(base("aws-h100"), variant("aws-h100", gpu="H200:8"))
    assert not d.may_replace
    asg = next(c for c in d.changed if c.type == ASG)
    assert asg.verdict == "refresh"
    # the group's instance refresh rolls it out (update: rolling, the default): drained, in batches
    assert any("rolled out by the group itself" in w for w in d.warnings)
    assert not any("until an instance refresh" in w for w in d.warnings)
    assert d.warnings[0].startswith("DISRUPTION: instance type p5.48xlarge -> p5en.48xlarge")


def test_a_group_without_a_rolling_update_keeps_old_nodes_until_a_refresh():
    d = diff_plans(
        variant("aws-h100", update=(("strategy", "manual"),)),
        variant("aws-h100", gpu="H200:8", update=(("strategy", "manual"),)),
    )
    assert any("until an instance refresh" in w for w in d.warnings)


def test_node_count_decrease_warns_first():
    d = diff_plans(base("aws-h100"), variant("aws-h100", nodes=2))
    assert d.warnings[0] == "DATA LOSS: node count 4 -> 2: 2 running node(s) are terminated (local scratch is lost)"


def test_tag_change_is_not_a_replacement():
    d = diff_plans(base("aws-h100"), variant("aws-h100", tags=(("team", "ai"), ("environment", "prod"))))
    assert len(d.changed) > 5 and not d.may_replace
    assert not [w for w in d.warnings if w.startswith("DATA LOSS")]
    # nor a roll: the launch template keeps its first tags (ignoreChanges), its own tags need no new version
    assert not [w for w in d.warnings if w.startswith("DISRUPTION")], d.warnings
    assert by_name(d, "llm-train-aws-lt").changes and by_name(d, "llm-train-aws-asg").verdict == "update"


def test_a_launch_template_tag_is_no_new_version_but_its_launch_data_is():
    """TF's resourceLaunchTemplateUpdate writes a version for its updateKeys only: tags and tags_all are not one."""
    lt = "aws:ec2/launchTemplate:LaunchTemplate"
    group = res("asg", ASG, launchTemplate={"id": "<id of lt>", "version": "<latestVersion of lt>"}, instanceRefresh={})
    old = plan_doc(res("lt", lt, imageId="ami-1", tags={"team": "a"}), group)
    retagged = diff_plans(old, plan_doc(res("lt", lt, imageId="ami-1", tags={"team": "b"}), group))
    assert [c.name for c in retagged.changed] == ["lt"] and retagged.warnings == []
    bumped = diff_plans(old, plan_doc(res("lt", lt, imageId="ami-2", tags={"team": "b"}), group))
    assert by_name(bumped, "asg").verdict == "refresh"
    assert any("rolled out by the group itself" in w for w in bumped.warnings)


def test_an_eks_version_update_is_a_roll_by_the_group():
    """EKS recycles a node group for a new launch template version: new nodes first, the old ones drained."""
    group = "aws:eks/nodeGroup:NodeGroup"
    old = plan_doc(res("ng", group, launchTemplate={"id": "lt-1", "version": "1"}))
    new = plan_doc(res("ng", group, launchTemplate={"id": "lt-1", "version": "2"}))
    d = diff_plans(old, new)
    assert d.changed[0].verdict == "refresh"
    assert d.warnings and "running nodes are drained and replaced in batches" in d.warnings[0]


@pytest.mark.parametrize(
    ("path", "ignored"),
    [("disks[0].labels.team", True), ("disks[12].labels", True), ("disks[0].labelsx", False), ("disks.labels", False),
     ("bootDisk.initializeParams.labels.team", True), ("bootDisk.initializeParams.image", False)],
)  # fmt: skip
def test_ignore_changes_paths_take_a_list_wildcard_as_pulumi_does(path: str, ignored: bool):
    rule = ["disks[*].labels", "bootDisk.initializeParams.labels"]
    old = plan_doc(res("vm", "test:index:Thing"))
    new = plan_doc(res("vm", "test:index:Thing"))
    old["resources"][0]["inputs"] = _at(path, "a")
    new["resources"][0]["inputs"] = _at(path, "b")
    new["resources"][0]["ignoreChanges"] = rule
    assert (diff_plans(old, new).changed == []) is ignored


def _at(path: str, value: Any) -> dict[str, Any]:
    """A nested input with `value` at a dotted path with list indices (`disks[1].labels`)."""
    root: dict[str, Any] = {}
    node: Any = root
    parts = path.split(".")
    for n, part in enumerate(parts):
        name, _, index = part.partition("[")
        last = n == len(parts) - 1
        if index:
            items = node.setdefault(name, [{} for _ in range(int(index[:-1]) + 1)])
            if last:
                items[-1] = value
            node = items[-1]
        elif last:
            node[name] = value
        else:
            node = node.setdefault(name, {})
    return root


def test_zone_change_replaces_subnets_and_moves_nodes():
    d = diff_plans(base("aws-h100"), variant("aws-h100", zone="us-east-1b"))
    assert by_name(d, "llm-train-aws-nodes").verdict == "replace"
    assert by_name(d, "llm-train-aws-asg").verdict == "refresh"
    assert any(w.startswith("DISRUPTION: replaces aws:ec2/subnet:Subnet") for w in d.warnings)


# --- the JSON form -----------------------------------------------------------------------------


def test_json_form_is_exactly_the_documented_one():
    d = diff_plans(base("aws-h100"), variant("aws-h100", nodes=5))
    doc = json.loads(render_json([d]))
    # keys are only ever added: specChanges (issue 28) after the first seven
    stable = ["created", "deleted", "changed", "mayReplace", "unchanged", "warnings", "summary"]
    assert list(doc) == [*stable, "specChanges"]
    assert all(isinstance(doc[k], list) for k in ("created", "deleted", "changed", "mayReplace", "warnings"))
    assert [c["key"] for c in doc["specChanges"]] == ["cluster.nodes"]
    assert isinstance(doc["unchanged"], int) and isinstance(doc["summary"], dict)
    for item in doc["changed"]:
        assert list(item) == ["urn", "changes"]
        # a node bootstrap adds `decoded` (its files' diff; docs/review.md): keys are only ever added
        assert all(list(c) in (["path", "old", "new"], ["path", "old", "new", "decoded"]) for c in item["changes"])
    assert {"created", "changed", "deleted", "unchanged", "mayReplace", "line"} <= set(doc["summary"])
    many = json.loads(render_json([d], many=True))
    assert list(many) == ["stacks"] and list(many["stacks"]) == ["aws-h100"]


# --- markdown: a sticky PR comment under GitHub's limit -----------------------------------------


def big_pair(n: int, value: str = "x") -> tuple[dict[str, Any], dict[str, Any]]:
    old = plan_doc(*(res(f"r{i}", payload=value * 200, ref=f"<id of r{i - 1}>") for i in range(n)))
    new = plan_doc(*(res(f"r{i}", payload=value.upper() * 200, ref=f"<id of r{i - 1}>") for i in range(n)))
    return old, new


def test_markdown_has_marker_summary_warnings_and_details():
    d = diff_plans(base("aws-h100"), variant("aws-h100", nodes=2))
    md = render_markdown([d], "origin/main")
    assert md.startswith(MARKER + "\n### gpu-cluster offline plan diff against `origin/main`")
    assert "| `aws-h100` | +0 / ~2 / -0 | 32 -> 16 | 224 -> 114 | 0 |" in md
    assert md.index(":boom: DATA LOSS: node count 4 -> 2") < md.index("<details>") < md.index("desiredCapacity")
    assert "Truncated" not in md


def test_markdown_is_truncated_under_the_comment_limit():
    d = diff_plans(*big_pair(2048))
    md = render_markdown([d], "main")
    assert len(md) <= COMMENT_LIMIT < len(render_markdown([d], "main", limit=10**9))
    assert md.startswith(MARKER) and "**Truncated:**" in md and md.count("</details>") == 1
    assert md.index("</details>") > md.index("**Truncated:**")


def test_no_touched_stack_still_gives_a_comment():
    md = render_markdown([], "main")
    assert md.startswith(MARKER) and "No stack is touched" in md


# --- linear time -------------------------------------------------------------------------------


def test_work_grows_linearly_with_the_plan():
    small, large = diff_plans(*big_pair(1024)), diff_plans(*big_pair(2048))
    assert len(large.changed) == 2048 and len(large.may_replace) == 2048
    assert 1.9 <= large.steps / small.steps <= 2.1


# --- replacement rules -------------------------------------------------------------------------


def test_every_rule_has_a_source_and_known_holds():
    rules = load_rules()
    assert len(rules.types) >= 20
    for token, rule in rules.types.items():
        assert rule.source, token
    for path in RULES_DIR.glob("*.yaml"):
        assert yaml.safe_load(path.read_text())


@pytest.mark.parametrize(
    ("token", "path", "verdict"),
    [
        (INSTANCE, "ami", "replace"),
        (INSTANCE, "instanceType", "restart"),
        (INSTANCE, "rootBlockDevice.volumeSize", "update"),
        (INSTANCE, "networkInterfaces[2].deviceIndex", "replace"),
        (ASG, "desiredCapacity", "update"),
        (ASG, "launchTemplate.version", "refresh"),
        ("aws:ec2/subnet:Subnet", "cidrBlock", "replace"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "instanceType", "update"),
        ("gcp:compute/instanceTemplate:InstanceTemplate", "labels.team", "replace"),
        ("gcp:compute/instance:Instance", "machineType", "restart"),
        ("azure-native:compute:VirtualMachineScaleSet", "sku.capacity", "update"),
        ("azure-native:compute:VirtualMachineScaleSet", "sku.name", "may-replace"),
        ("alicloud:ecs/instance:Instance", "availabilityZone", "replace"),
        ("alicloud:ecs/instance:Instance", "vswitchId", "may-replace"),
        ("random:index/randomBytes:RandomBytes", "length", "replace"),
        ("random:index/randomBytes:RandomBytes", "keepers.rotation", "replace"),
        ("aws:ec2/natGateway:NatGateway", "tags.team", "update"),
        ("aws:ec2/natGateway:NatGateway", "subnetId", "may-replace"),
    ],
)
def test_classification(token, path, verdict):
    rules = load_rules()
    assert classify(rules.rule(token), path) == verdict


# --- the CLI -----------------------------------------------------------------------------------


def one_line_error(result, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_cli_files(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(base("aws-h100")))
    new.write_text(json.dumps(variant("aws-h100", nodes=2)))
    table = runner.invoke(app, ["diff", str(old), str(new)])
    assert table.exit_code == 0 and "DATA LOSS: node count 4 -> 2" in table.stdout
    doc = json.loads(runner.invoke(app, ["diff", str(old), str(new), "-f", "json"]).stdout)
    assert doc["summary"]["nodes"] == {"old": 4, "new": 2}


def test_cli_bad_input(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(base("aws-dev")))
    other = tmp_path / "other.json"
    other.write_text(json.dumps(base("aws-h100")))
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "list.json").write_text("[1]")
    one_line_error(runner.invoke(app, ["diff", str(tmp_path / "missing.json"), str(good)]), "file not found")
    one_line_error(runner.invoke(app, ["diff", str(tmp_path / "bad.json"), str(good)]), "is not JSON (line 1)")
    one_line_error(runner.invoke(app, ["diff", str(tmp_path / "list.json"), str(good)]), "is not a gpu-cluster plan")
    one_line_error(runner.invoke(app, ["diff", str(good), str(other)]), "diff compares two plans of the same stack")
    one_line_error(runner.invoke(app, ["diff", str(good), str(good), "-f", "xml"]), "--format: got 'xml'; allowed")
    one_line_error(runner.invoke(app, ["diff", str(good)]), "exactly two plan files")
    one_line_error(runner.invoke(app, ["diff"]), "give exactly one of")
    one_line_error(runner.invoke(app, ["diff", "--stack", "aws-dev"]), "--base REV is required")


# --- git revisions: a temporary repository ------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A minimal copy of the project, committed, then changed in the working tree."""
    path = tmp_path_factory.mktemp("repo")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, path / name)
    shutil.copytree(ROOT / "components", path / "components", ignore=shutil.ignore_patterns("__pycache__"))
    (path / "stacks").mkdir()
    for stack in ("aws-dev", "aws-h100"):
        shutil.copy(ROOT / "stacks" / f"Pulumi.{stack}.yaml", path / "stacks")
    git(path, "init", "--quiet")
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "base")
    dev = path / "stacks" / "Pulumi.aws-dev.yaml"
    dev.write_text(dev.read_text().replace("nodes: 1", "nodes: 2"))
    shutil.copy(dev, path / "stacks" / "Pulumi.aws-dev2.yaml")  # a new, untracked stack
    (path / "stacks" / "Pulumi.aws-h100.yaml").unlink()  # a removed stack
    return path


def test_all_stacks_against_a_base_revision(repo):
    result = runner.invoke(app, ["diff", "--all-stacks", "--base", "HEAD", "--project", str(repo), "-f", "json"])
    assert result.exit_code == 0, result.output
    stacks = json.loads(result.stdout)["stacks"]
    assert sorted(stacks) == ["aws-dev", "aws-dev2", "aws-h100"]  # components/ untouched: only these
    dev = stacks["aws-dev"]
    # the one-node box already has its cluster placement group (docs/day2.md "Placement at one node"): growing to two
    # nodes creates none and leaves the group's placementGroup as it is
    assert dev["created"] == [] and not dev["deleted"]
    asg = next(c for c in dev["changed"] if c["urn"].endswith("aws:autoscaling/group:Group::dev-aws-asg"))
    assert {"path": "desiredCapacity", "old": 1, "new": 2} in asg["changes"]
    assert not any(change["path"] == "placementGroup" for change in asg["changes"])
    assert stacks["aws-dev2"]["created"] and not stacks["aws-dev2"]["deleted"]
    assert stacks["aws-h100"]["deleted"] and not stacks["aws-h100"]["created"]
    assert stacks["aws-h100"]["warnings"][0].startswith("DATA LOSS: the stack `aws-h100` is removed")
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_one_stack_against_a_base_revision_as_markdown(repo):
    result = runner.invoke(
        app, ["diff", "--stack", "aws-dev", "--base", "HEAD", "--project", str(repo), "-f", "markdown"]
    )
    assert result.exit_code == 0, result.output
    # +0: the placement group exists at one node already (docs/day2.md "Placement at one node")
    assert result.stdout.startswith(MARKER) and "| `aws-dev` | +0 / ~3 / -0 | 1 -> 2 |" in result.stdout
    # T4:1 for two nodes that train together resolves to the smallest T4 type with EFA (issue 26 defect 7): said
    assert "DISRUPTION: instance type g4dn.xlarge -> g4dn.8xlarge" in result.stdout


def test_bad_base_revision(repo):
    result = runner.invoke(app, ["diff", "--stack", "aws-dev", "--base", "no-such-rev", "--project", str(repo)])
    one_line_error(result, "--base: got 'no-such-rev'; not a commit")


def test_image_change_warns_of_replacement():
    d = diff_plans(base("aws-a100-instances"), variant("aws-a100-instances", image="ami-0123456789abcdef0"))
    instances = [c for c in d.changed if c.type == INSTANCE]
    assert len(instances) == 2 and set(d.may_replace) >= {c.urn for c in instances}
    assert d.warnings[0].startswith("DATA LOSS: replaces aws:ec2/instance:Instance")
    assert any(w.startswith("DISRUPTION: image") for w in d.warnings), d.warnings


def test_replacing_nodes_with_retained_scratch_says_the_disk_is_left_behind():
    d = diff_plans(base("aws-a100-instances"), variant("aws-a100-instances", image="ami-0123456789abcdef0"))
    assert "scratch disk is kept (retainScratch): detached, still billed" in d.warnings[0]
    h100 = diff_plans(base("aws-h100"), variant("aws-h100", nodes=2))
    assert h100.warnings[0].endswith("(local scratch is lost)")


# --- less noise: per-node warnings grouped, list lengths, one line each ------------------------------


def table_text(d) -> str:
    buffer = io.StringIO()
    render_table([d], Console(file=buffer, width=1000, soft_wrap=False))
    return buffer.getvalue()


def test_per_node_data_loss_lines_are_one_line_per_cause():
    d = diff_plans(
        variant("aws-a100-instances", nodes=6), variant("aws-a100-instances", nodes=6, image="ami-0123456789abcdef0")
    )
    assert sum(w.startswith("DATA LOSS") for w in d.warnings) == 6  # the JSON keeps one per resource
    loss = [line for line in table_text(d).splitlines() if line.startswith("DATA LOSS")]
    assert len(loss) == 1
    assert loss[0].startswith("DATA LOSS: 6 nodes: replaces aws:ec2/instance:Instance `a100-pair-aws-node-{0..5}`")
    md = render_markdown([d])
    assert md.count(":boom:") == 1 and "6 nodes" in md


def test_grouping_keeps_different_causes_apart_and_says_what_is_grouped():
    nodes = [res(f"c-node-{i}", INSTANCE, ami="a") for i in (0, 1, 2, 5)]
    disks = [res(f"c-disk-{i}", "aws:ebs/volume:Volume", size=1) for i in (0, 1)]
    other = res("c-node-9", INSTANCE, ami="a", subnetId="s")
    old = plan_doc(*nodes, *disks, other, nodes=5)
    new_nodes = [res(f"c-node-{i}", INSTANCE, ami="b") for i in (0, 1, 2, 5)]
    new_other = res("c-node-9", INSTANCE, ami="a", subnetId="t")
    d = diff_plans(old, plan_doc(*new_nodes, new_other, nodes=5))
    grouped = grouped_warnings(d)
    assert len(d.warnings) == 7 and len(grouped) == 3, grouped
    assert any(
        w.startswith("DATA LOSS: 4 nodes: replaces aws:ec2/instance:Instance `c-node-{0..2,5}`") for w in grouped
    )
    assert any(w.startswith("DATA LOSS: 2 resources: deletes aws:ebs/volume:Volume `c-disk-{0..1}`") for w in grouped)
    assert any("`c-node-9`" in w and "subnetId" in w for w in grouped)  # another cause: its own line


def test_a_list_that_shrinks_or_grows_is_one_line_with_its_lengths():
    nics = [{"deviceIndex": i} for i in range(33)]
    old = plan_doc(res("lt", networkInterfaces=nics, tags=["a", "b"]))
    changed = [{"deviceIndex": 100 if i == 0 else i} for i in range(17)]
    d = diff_plans(old, plan_doc(res("lt", networkInterfaces=changed, tags=["a", "b", "c", "d", "e"])))
    lines = change_lines(by_name(d, "lt"))
    assert lines == [
        "networkInterfaces[0].deviceIndex: 0 -> 100",
        "networkInterfaces: 33 -> 17 items",
        "tags: 2 -> 5 items",
    ]
    one = diff_plans(old, plan_doc(res("lt", networkInterfaces=nics[:32], tags=["a", "b"])))
    assert change_lines(one.changed[0]) == ['networkInterfaces[32]: {"deviceIndex": 32} -> null']


def test_an_h200_swap_shows_the_interface_count_not_sixteen_lines():
    d = diff_plans(base("aws-h100"), variant("aws-h100", gpu="H200:8"))
    text = table_text(d)
    assert "networkInterfaces: 33 -> 17 items" in text
    assert "networkInterfaces[17]" not in text


def test_a_change_the_resource_ignores_is_no_change():
    """Pulumi keeps the old state value of an `ignoreChanges` path: no update, no replacement (the GKE pool's
    initialNodeCount, ForceNew, is given once and ignored after: issue 28, a pool grown in place)."""
    pool = "gcp:container/nodePool:NodePool"
    old = plan_doc(res("pool", pool, initialNodeCount=2, nodeCount=2))
    new = plan_doc(res("pool", pool, initialNodeCount=4, nodeCount=4))
    new["resources"][0]["ignoreChanges"] = ["initialNodeCount"]
    d = diff_plans(old, new)
    assert [(c.path, c.old, c.new) for c in d.changed[0].changes] == [("nodeCount", 2, 4)]
    assert d.may_replace == [] and d.changed[0].verdict == "update"
    new["resources"][0]["ignoreChanges"] = ["initialNodeCount", "nodeCount"]
    assert diff_plans(old, new).changed == []
