"""The review decodes node bootstraps: every encoding we render round-trips to its files, shipped plans decode, and
no output format (table, markdown, JSON) ever shows the encoded value."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from components.bootstrap import File, Part, cloud_init, startup_script
from components.diff import diff_plans, render_json, render_markdown
from components.diff.render import render_table
from components.diff.userdata import decode, diff_bootstrap, split_files, unified
from components.layout.alicloud.kubernetes import ack_user_data
from components.layout.aws.kubernetes import mime_user_data

from .conftest import plan_stack, shipped_stacks
from .test_diff import base, plan_doc, res, variant

# An encoded user data value as it shows in a plan: gzip+base64 starts H4sI, a base64 cloud-config starts I2Nsb3Vk.
ENCODED = re.compile(r"H4sI[A-Za-z0-9+/]{16}|I2Nsb3Vk[A-Za-z0-9+/]{8}|IyEv[A-Za-z0-9+/]{16}|TUlNRS1W[A-Za-z0-9+/]{8}")

_line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\x85"), max_size=30)
_content = st.lists(_line, min_size=1, max_size=6).map(lambda lines: "\n".join(lines) + "\n")
_path = st.from_regex(r"/etc/[a-z]{1,8}(/[a-z0-9._-]{1,8}){0,2}", fullmatch=True)
_command = st.lists(st.from_regex(r"[a-z0-9._=-]{1,10}", fullmatch=True), min_size=1, max_size=4)


@st.composite
def parts(draw: Any) -> list[Part]:
    paths = draw(st.lists(_path, min_size=1, max_size=5, unique=True))
    files = [File(p, draw(_content), draw(st.sampled_from(["0644", "0755", "0600"]))) for p in paths]
    commands = draw(st.lists(_command, max_size=4))
    cut = draw(st.integers(0, len(files)))
    return [
        Part("one", files=tuple(files[:cut]), commands=tuple(tuple(c) for c in commands)),
        Part("two", files=tuple(files[cut:])),
    ]


def gzip_b64(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def expected_files(ps: list[Part]) -> dict[str, str]:
    return {f.path: f.content for p in ps for f in p.files}


@settings(max_examples=60, deadline=None)
@given(parts())
def test_cloud_config_round_trip_in_every_encoding(ps):
    text = cloud_init(ps)
    commands = [c for p in ps for c in p.commands]
    for value in (text, base64.b64encode(text.encode()).decode(), gzip_b64(text), mime_user_data(text)):
        found = decode(value)
        assert found is not None and found.text.startswith(("#cloud-config", "MIME"))
        modes: dict[str, str] = {}
        files = split_files(found.text, modes)
        prefix = "part 1 (application/gzip): " if value.startswith("MIME") else ""
        want = {prefix + path: content for path, content in expected_files(ps).items()}
        if commands:
            want[prefix + "runcmd"] = "".join(" ".join(c) + "\n" for c in commands)
        assert files == want
        assert modes == {prefix + f.path: f.permissions for p in ps for f in p.files}


@settings(max_examples=60, deadline=None)
@given(parts())
def test_startup_script_and_ack_wrapper_round_trip(ps):
    script = startup_script(ps, header=["a header line"])
    assert script is not None
    for value, prefix in ((script, ""), (ack_user_data(script), "/var/lib/gpu-cluster/ack-bootstrap.sh: ")):
        encoded = value if value is script else base64.b64encode(value.encode()).decode()
        found = decode(encoded)
        assert found is not None and found.kind == "shell script"
        files = split_files(found.text)
        # a heredoc writes the content with one final newline (startup_script strips the content's own)
        assert {k: v for k, v in files.items() if not k.endswith("script")} == {
            prefix + path: content.rstrip("\n") + "\n" for path, content in expected_files(ps).items()
        }
        # the commands stay in the script, which keeps no file body
        rest = files[prefix + "script"]
        assert all(" ".join(c) in rest for p in ps for c in p.commands)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcdefg"), max_size=40), st.lists(st.sampled_from("abcdxyz"), max_size=40))
def test_unified_diff_rebuilds_both_sides(a, b):
    whole = unified(a, b, context=10**6)  # one hunk spanning everything
    if a == b:
        assert whole == []
        return
    body = whole[1:]
    assert [x[1:] for x in body if x[0] in " -"] == a
    assert [x[1:] for x in body if x[0] in " +"] == b
    # with 3 lines of context every hunk header counts its lines
    for hunk in "\n".join(unified(a, b)).split("\n@@")[0:]:
        lines = hunk.split("\n")
        m = re.match(r"@?@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", lines[0])
        assert m, lines[0]
        old_n = int(m.group(1) if m.group(1) is not None else 1)
        new_n = int(m.group(2) if m.group(2) is not None else 1)
        assert old_n == sum(1 for x in lines[1:] if x[0] in " -")
        assert new_n == sum(1 for x in lines[1:] if x[0] in " +")


def test_the_line_diff_is_linear_on_the_input_that_makes_lcs_quadratic():
    n = 50_000
    a = [f"line {i}" for i in range(n)]
    started = time.perf_counter()
    out = unified(a, a[::-1])
    assert out[0].startswith("@@") and len(out) >= n
    assert time.perf_counter() - started < 10  # linear: about a second on a loaded 2-core box; an LCS: hours


def test_undecodable_values_fall_back_to_a_hash_never_a_traceback():
    old = plan_doc(res("lt", userData="H4sIAAAAnot-gzip"), res("vm", customData="plain words"))
    new = plan_doc(res("lt", userData="H4sIAAAAstill-not"), res("vm", customData="other words"))
    d = diff_plans(old, new)
    for text in (render_markdown([d]), render_json([d]), table(d)):
        assert "H4sI" not in text and "plain words" not in text, text
        assert "undecodable, sha256:" in text
    assert diff_bootstrap(gzip_b64("#cloud-config\n{}\n")[:-4] + "@@@@", None) is None


def table(d: Any) -> str:
    buffer = io.StringIO()
    render_table([d], Console(file=buffer, width=1000, soft_wrap=False))
    return buffer.getvalue()


def test_growing_a_slurm_cluster_shows_the_compute_conf_line_and_leaves_the_head_alone():
    d = diff_plans(base("aws-slurm-h100"), variant("aws-slurm-h100", nodes=4))
    assert not [c.name for c in d.changed if c.name.endswith(("-head", "-login"))]  # issue 28: no controller restart
    conf = next(c for c in d.changed if c.name == "slurm-h100-aws-slurm-compute-conf")
    assert [ch.path for ch in conf.changes] == ["insecureValue"] and conf.verdict == "update"
    markdown, as_json, text = render_markdown([d]), json.loads(render_json([d])), table(d)
    for out in (markdown, json.dumps(as_json), text):
        assert not ENCODED.search(out), ENCODED.search(out)
        assert "-MaxNodeCount=4" in out and "+MaxNodeCount=8" in out
    assert "```diff\n--- /etc/slurm/nodes.conf\n+++ /etc/slurm/nodes.conf\n@@ " in markdown
    change = next(c for c in as_json["changed"] if c["urn"] == conf.urn)["changes"][0]
    assert change["old"].startswith("Slurm compute configuration, plain, ") and "sha256:" in change["new"]
    assert [f["file"] for f in change["decoded"]] == ["/etc/slurm/nodes.conf"]
    assert change["decoded"][0]["status"] == "changed"


@pytest.mark.parametrize("stack", shipped_stacks())
def test_every_shipped_bootstrap_decodes_into_files(stack):
    doc = json.loads(json.dumps(plan_stack(stack).as_json(), default=str))
    seen = 0
    for r in doc["resources"]:
        names: list[str] = []  # every file of the resource's bootstraps (GCP: a startup- and a shutdown-script)
        for value in _strings(r["inputs"]):
            if not ENCODED.match(value) and not value.startswith(("#!", "#cloud-config")):
                continue
            found = decode(value)
            assert found is not None, (r["name"], value[:40])
            names += split_files(found.text)
            seen += 1
        assert not names or any(name.endswith(".service") for name in names), (r["name"], names)
    # a removed bootstrap (null on the new side) still shows its files as removed
    if seen:
        value = next(v for r in doc["resources"] for v in _strings(r["inputs"]) if decode(v))
        removed = diff_bootstrap(value, None)
        assert removed and {f.status for f in removed} == {"removed"}


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) and len(value) > 100 else []
