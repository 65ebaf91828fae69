"""Images are pinned (issue 28): `image: auto` boots a release the catalog pins with its source, `image: latest` keeps
tracking with a plan warning, a catalog bump is a visible change in the offline diff, and `gpu-cluster image pin`
writes the release into a stack file without touching its comments. Asserted on inputs registered with the mocks."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from components import catalog
from components.catalog import releases
from components.cli import app
from components.diff import diff_plans, render_markdown
from components.diff.render import change_lines
from components.plan import load_stack, make_plan
from components.plan.pin import set_image
from components.plan.stackfile import read_stack_file

from .conftest import ROOT, one, plan_json, plan_stack, plan_stack_with, resources_text

runner = CliRunner()
DLAMI = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20260619"
DLAMI_OWNER = "898082745236"
CANONICAL_OWNER = "099720109477"  # Canonical (catalog/aws.yaml images.families.g6f owner, with its source)
PINNED_AMI = f"<resolved at deploy: ami {DLAMI} of {DLAMI_OWNER}>"


def pinned_entries() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for cloud in catalog.CLOUDS:
        images = catalog.load(cloud).images
        named = [("default", images["default"])]
        named += [
            (f"{group}.{k}", v)
            for group in ("families", "arch", "vendors")
            for k, v in (images.get(group) or {}).items()
        ]
        out += [(cloud, path, entry) for path, entry in named if isinstance(entry, dict) and entry.get("release")]
    return out


@pytest.mark.parametrize(("cloud", "path", "entry"), pinned_entries(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_pinned_release_has_a_source_and_the_stack_file_form_round_trips(cloud, path, entry):
    assert entry.get("releaseSource"), f"catalog/{cloud}.yaml images.{path}: releaseSource"
    ref = releases.release_ref(cloud, entry)
    assert ref is not None and re.fullmatch(catalog.load(cloud).rules["imagePattern"], ref), ref
    assert releases.release_in(cloud, entry, ref) == entry["release"]
    assert releases.is_catalog_image(cloud, ref)
    if cloud == "aws":
        # the DLAMI, or Canonical's Ubuntu where a slice installs its GRID driver at boot (images.families.g6f)
        assert entry["owner"] == (CANONICAL_OWNER if entry.get("gridDriver") else DLAMI_OWNER)


def test_the_clouds_with_a_sourced_release_pin_their_default():
    assert {c for c, path, _ in pinned_entries() if path == "default"} == {"aws", "gcp", "azure", "alicloud"}


def test_aws_auto_boots_the_pinned_dlami_by_exact_name_and_owner():
    plan = plan_stack("aws-h100")
    assert one(plan, "launchTemplate:LaunchTemplate")["inputs"]["imageId"] == PINNED_AMI
    assert plan.summary()["image"] == PINNED_AMI
    assert not [w for w in plan.warnings() if ".image:" in w]


def test_aws_latest_tracks_the_ssm_parameter_and_warns():
    plan = plan_stack_with("aws-dev", image="latest")
    image = one(plan, "launchTemplate:LaunchTemplate")["inputs"]["imageId"]
    assert image == (
        "<resolved at deploy: ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/"
        "ami-id>"
    )
    warning = next(w for w in plan.warnings() if "cluster.image:" in w)
    assert "latest tracks the newest image" in warning and "a later `pulumi up` may replace the nodes" in warning


def test_gcp_azure_alicloud_auto_boot_their_pinned_releases_and_latest_tracks():
    gcp = one(plan_stack("gcp-dev"), "InstanceTemplate")["inputs"]["disks"][0]["sourceImage"]
    assert gcp == "projects/deeplearning-platform-release/global/images/common-cu128-ubuntu-2204-nvidia-570-v20260320"
    azure = plan_stack("azure-dev").summary()["image"]
    assert azure == "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"
    ali = [
        r["inputs"]["imageId"]
        for r in map(lambda r: r.as_json(), plan_stack("alicloud-a100").resources)
        if r["type"] == "alicloud:ecs/instance:Instance"
    ]
    assert set(ali) == {"ubuntu_22_04_x64_20G_alibase_20260916.vhd"}
    latest = plan_stack_with("azure-dev", image="latest")
    assert latest.summary()["image"] == "microsoft-dsvm:ubuntu-hpc:2204:latest"
    assert any("latest tracks the newest image" in w for w in latest.warnings())


def test_a_cloud_without_a_sourced_release_keeps_tracking_and_says_so():
    plan = plan_stack("tencentcloud-dev")
    warning = next(w for w in plan.warnings() if "cluster.image: auto tracks" in w)
    assert "catalog/tencentcloud.yaml pins no release" in warning


def test_a_pinned_stack_file_plans_exactly_what_auto_plans(tmp_path):
    for stack in ("aws-h100", "gcp-a3mega", "azure-h100", "alicloud-a100"):
        values = load_stack(ROOT, stack).values
        entry = catalog.gpu_image(values["gpu-cluster:cloud"], plan_stack(stack).spec.instance)
        ref = releases.release_ref(values["gpu-cluster:cloud"], entry)
        pinned = plan_stack_with(stack, image=ref)
        assert resources_text(pinned) == resources_text(plan_stack(stack)), stack
        assert pinned.warnings() == plan_stack(stack).warnings(), stack


def test_a_catalog_bump_is_a_visible_change_in_the_offline_diff():
    older = f"ami-name:{DLAMI_OWNER}/Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20260417"
    d = diff_plans(plan_json(plan_stack_with("aws-h100", image=older)), plan_json(plan_stack("aws-h100")))
    lt = next(c for c in d.changed if c.type == "aws:ec2/launchTemplate:LaunchTemplate")
    assert [(c.path, c.new) for c in lt.changes] == [("imageId", PINNED_AMI)]
    # the resource detail cuts the shared beginning, not the dates that differ
    assert change_lines(lt) == [
        "imageId: ...ntu 22.04) 20260417 of 898082745236> -> ...ntu 22.04) 20260619 of 898082745236>"
    ]
    assert any(w.startswith("DISRUPTION: image") and "20260417" in w and "20260619" in w for w in d.warnings)


# --- gpu-cluster image pin -------------------------------------------------------------------------------------------


def project_with(tmp_path: Path, stack: str, text: str | None = None) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    target = tmp_path / "stacks" / f"Pulumi.{stack}.yaml"
    target.write_text(text if text is not None else (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    return target


def test_pin_writes_the_release_keeping_every_comment_and_plans_the_same(tmp_path):
    target = project_with(tmp_path, "aws-h100")
    before = target.read_text()
    result = runner.invoke(app, ["image", "pin", "--stack", "aws-h100", "--project", str(tmp_path)])
    assert result.exit_code == 0, result.output
    after = target.read_text()
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert added == [f'    image: "ami-name:{DLAMI_OWNER}/{DLAMI}"']
    assert [line for line in before.splitlines() if line.lstrip().startswith("#")] == [
        line for line in after.splitlines() if line.lstrip().startswith("#")
    ]
    assert len(after.splitlines()) == len(before.splitlines()) + 1
    pinned = make_plan(ROOT, read_stack_file(target, "gpu-cluster", "aws-h100"))  # the program of this checkout
    assert resources_text(pinned) == resources_text(plan_stack("aws-h100"))
    again = runner.invoke(app, ["image", "pin", "--stack", "aws-h100", "--project", str(tmp_path)])
    assert again.exit_code == 0 and "already pinned; unchanged" in again.output and target.read_text() == after


def test_pin_replaces_only_the_value_of_an_existing_image_line():
    text = (
        "# a stack\nconfig:\n  gpu-cluster:cloud: gcp\n  gpu-cluster:cluster:\n"
        "    name: x   # the name\n    image: latest   # moves!\n    nodes: 1\n"
    )
    ref = "projects/deeplearning-platform-release/global/images/common-cu128-ubuntu-2204-nvidia-570-v20260320"
    out = set_image(text, ref, "Pulumi.x.yaml")
    assert out == text.replace("image: latest", f'image: "{ref}"')
    assert yaml.safe_load(out)["config"]["gpu-cluster:cluster"]["image"] == ref


@pytest.mark.parametrize(
    ("stack", "fragment"),
    [
        ("tencentcloud-dev", "catalog/tencentcloud.yaml pins no release of Ubuntu Server 22.04 LTS 64bit"),
        ("aws-eks-h100", "scheduler kubernetes: the node pools boot the image the service picks"),
    ],
)
def test_pin_refuses_what_it_cannot_pin_in_one_line(tmp_path, stack, fragment):
    target = project_with(tmp_path, stack)
    before = target.read_text()
    result = runner.invoke(app, ["image", "pin", "--stack", stack, "--project", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert fragment in " ".join(result.output.split()), result.output
    assert target.read_text() == before


def test_latest_is_allowed_and_a_bad_image_names_both_words():
    from .conftest import aws_values
    from .test_image_choice import errors_of

    message = errors_of(aws_values(image="newest"))["gpu-cluster:cluster.image"]
    assert "allowed: auto (a pinned release), latest (the newest image at each deploy) or an AMI id" in message


def test_the_readme_review_of_an_image_bump_is_what_the_diff_writes():
    """README's "Reviewing a change": a pinned DLAMI moved to the next release on aws-slurm-h100, as rendered."""
    ref = f"ami-name:{DLAMI_OWNER}/Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) {{}}"
    old = plan_json(plan_stack_with("aws-slurm-h100", image=ref.format("20260417")))
    new = plan_json(plan_stack_with("aws-slurm-h100", image=ref.format("20260619")))
    comment = render_markdown([diff_plans(old, new)]).split("<details>")[0]
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Reviewing a change") :]
    shown = section[section.index("```markdown\n") + len("```markdown\n") : section.index("\n```\n")]
    lines = [line for line in shown.splitlines() if line]
    assert lines == [line for line in comment.splitlines() if line and not line.startswith(("<!--", "### "))]
    assert any("(rolling)" in line for line in lines) and any("drained and replaced in batches" in x for x in lines)
