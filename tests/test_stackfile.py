"""The stack-file reader: duplicate keys and YAML 1.1 booleans are refused with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.cli import app
from components.errors import ConfigError
from components.plan.stackfile import read_stack_file

runner = CliRunner()
HEAD = "config:\n  aws:region: us-east-1\n  gpu-cluster:cloud: aws\n  gpu-cluster:cluster:\n    gpu: H100:8\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.strict.yaml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        read_stack_file(write(tmp_path, text), "gpu-cluster")
    return info.value


def cli_error(tmp_path: Path, text: str) -> str:
    result = runner.invoke(app, ["plan", "--config", str(write(tmp_path, text))])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# --- duplicate keys --------------------------------------------------------------------------------


def test_a_duplicate_cluster_key_is_refused_not_last_wins(tmp_path):
    line = cli_error(tmp_path, HEAD + "    nodes: 2\n    nodes: 3\n")
    assert "Pulumi.strict.yaml: gpu-cluster:cluster.nodes: duplicate key (lines 6 and 7)" in line


def test_a_duplicate_top_level_config_key_is_refused(tmp_path):
    error = refused(tmp_path, HEAD + "  gpu-cluster:cloud: gcp\n")
    assert error.key == "Pulumi.strict.yaml: gpu-cluster:cloud"
    assert "duplicate key (lines 3 and 6)" in error.message


def test_a_duplicate_in_a_flow_mapping_is_refused(tmp_path):
    error = refused(tmp_path, HEAD + "    tags: {team: a, environment: dev, team: b}\n")
    assert error.key == "Pulumi.strict.yaml: gpu-cluster:cluster.tags.team"


def test_a_duplicate_outside_config_is_named_by_its_own_key(tmp_path):
    error = refused(tmp_path, "secretsprovider: passphrase\n" + HEAD + "secretsprovider: awskms://x\n")
    assert error.key == "Pulumi.strict.yaml: secretsprovider"


def test_the_same_key_in_different_mappings_and_merge_keys_are_fine(tmp_path):
    text = (
        HEAD + "    name: one\n    tags: &t {name: two, environment: dev}\n"
        "    gcp: ~\n  gpu-cluster:other: {<<: *t, name: three}\n"
    )
    stack = read_stack_file(write(tmp_path, text), "gpu-cluster")
    assert stack.values["gpu-cluster:cluster"]["name"] == "one"
    assert stack.values["gpu-cluster:cluster"]["tags"] == {"name": "two", "environment": "dev"}
    assert stack.values["gpu-cluster:other"] == {"name": "three", "environment": "dev"}


# --- YAML 1.1 booleans -----------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "On", "OFF", "Y", "N"])
def test_a_yaml_1_1_boolean_is_refused_with_the_key_named(tmp_path, word):
    line = cli_error(tmp_path, HEAD + f"    spot: {word}\n")
    assert f"gpu-cluster:cluster.spot: got {word} unquoted (line 6)" in line
    assert "true or false" in line


def test_yaml_1_1_booleans_in_lists_and_keys_are_refused_too(tmp_path):
    in_list = refused(tmp_path, HEAD + "    network:\n      sshCidrs: [10.0.0.0/8, off]\n")
    assert in_list.key == "Pulumi.strict.yaml: gpu-cluster:cluster.network.sshCidrs[1]"
    as_key = refused(tmp_path, HEAD + "    tags:\n      on: x\n")
    assert as_key.key == "Pulumi.strict.yaml: gpu-cluster:cluster.tags.on"


def test_true_false_and_quoted_words_are_read_as_written(tmp_path):
    text = HEAD + "    spot: true\n    tags: {a: 'yes', b: \"off\", c: True, d: FALSE, e: !!str no}\n"
    cluster = read_stack_file(write(tmp_path, text), "gpu-cluster").values["gpu-cluster:cluster"]
    assert cluster["spot"] is True
    assert cluster["tags"] == {"a": "yes", "b": "off", "c": True, "d": False, "e": "no"}


def test_a_key_with_a_newline_still_gives_a_one_line_error(tmp_path):
    error = refused(tmp_path, HEAD + '    "a\\nb": 1\n    "a\\nb": 2\n')
    assert "\n" not in str(error) and "a\\nb" in error.key


def test_an_alias_inside_its_own_anchor_is_refused_not_a_traceback(tmp_path):
    line = cli_error(tmp_path, HEAD + "    tags: &t {environment: dev, again: *t}\n")
    assert "gpu-cluster:cluster.tags.again: refers to itself" in line


def test_aliases_to_one_anchor_are_fine(tmp_path):
    text = HEAD + "    network:\n      sshCidrs: &c [10.1.0.0/16]\n  gpu-cluster:other: {a: *c, b: *c}\n"
    stack = read_stack_file(write(tmp_path, text), "gpu-cluster")
    assert stack.values["gpu-cluster:other"] == {"a": ["10.1.0.0/16"], "b": ["10.1.0.0/16"]}


def test_absurd_nesting_is_an_error_not_a_traceback(tmp_path):
    line = cli_error(tmp_path, "config:\n  gpu-cluster:x: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in line
