"""Reading `Pulumi.yaml` and `stacks/Pulumi.<stack>.yaml` the way the Pulumi CLI does, offline.

Secrets (`secure:` values) cannot be decrypted without the stack's secrets provider and are never
needed for a plan: they become the placeholder `[secret]` and their keys are marked secret.

Stack files are read strictly (`StrictLoader`): a key given twice in one mapping, and an unquoted
YAML 1.1 boolean other than true/false (`yes`, `no`, `on`, `off`, `y`, `n`), are refused with the key
named. `yaml.safe_load` would keep the last duplicate silently and read `spot: yes` as true, where a
YAML 1.2 reader sees the string "yes": the plan would not be what another reader of the file gets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..spec import SECRET_PLACEHOLDER

STACK_FILE_KEYS = {"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"}
# Plain scalars YAML 1.1 resolves as booleans (https://yaml.org/type/bool.html) but YAML 1.2's core
# schema reads as strings; true/false in their three spellings mean the same in both.
YAML11_BOOLEANS = frozenset(
    spelling for word in ("y", "yes", "n", "no", "on", "off") for spelling in (word, word.capitalize(), word.upper())
)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictYamlError(Exception):
    """A stack file that YAML accepts but that would be read differently elsewhere."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class StrictLoader(yaml.SafeLoader):
    """`yaml.safe_load`, refusing duplicate keys, YAML 1.1 booleans and recursive aliases (StrictYamlError).

    The check runs on the composed node tree, before any value is built, so it names the key path.
    Each node is checked once (an alias points to a node already checked at its anchor): the work is
    linear in the text even when aliases multiply the document. An explicitly tagged scalar
    (`!!str no`) says what it means and is not refused.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._tagged: set[int] = set()  # ids of scalar nodes with an explicit tag

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)
        if getattr(event, "tag", None) not in (None, "!"):
            self._tagged.add(id(node))
        return node

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        self._check(node, "", set(), set())
        return self.construct_document(node)

    def _check_scalar(self, node: yaml.ScalarNode, path: str) -> None:
        if node.style is None and node.value in YAML11_BOOLEANS and id(node) not in self._tagged:
            raise StrictYamlError(
                path,
                f"got {node.value} unquoted (line {node.start_mark.line + 1}): YAML 1.1 readers take it as a "
                f"boolean, YAML 1.2 readers as the string {node.value!r}; write true or false, or quote it "
                f"('{node.value}') for text",
            )

    def _check(self, node: yaml.Node, path: str, done: set[int], open_: set[int]) -> None:
        if id(node) in open_:  # met again while checking it: an alias inside its own anchor
            raise StrictYamlError(path, "refers to itself (a YAML alias inside its own anchor); write the value out")
        if id(node) in done:
            return
        open_.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first_line: dict[str, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    self._check(value_node, path, done, open_)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    self._check(value_node, f"{path}.?" if path else "?", done, open_)
                    continue
                name = _printable(key_node.value)
                child = f"{path}.{name}" if path else name
                self._check_scalar(key_node, child)
                line = key_node.start_mark.line + 1
                if key_node.value in first_line:
                    raise StrictYamlError(
                        child,
                        f"duplicate key (lines {first_line[key_node.value]} and {line}): "
                        "a YAML reader silently keeps only one of them; give each key once",
                    )
                first_line[key_node.value] = line
                self._check(value_node, child, done, open_)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._check(item, f"{path}[{index}]", done, open_)
        elif isinstance(node, yaml.ScalarNode):
            self._check_scalar(node, path)
        open_.discard(id(node))
        done.add(id(node))


def _config_path(path: str) -> str:
    """`config.gpu-cluster:cluster.nodes` -> `gpu-cluster:cluster.nodes`, the name `pulumi config` uses."""
    return path.removeprefix("config.")


@dataclass(frozen=True)
class StackFile:
    project: str
    stack: str
    path: Path
    values: dict[str, Any]  # flat `namespace:key` -> native value
    secret_keys: tuple[str, ...]

    def engine_config(self) -> dict[str, str]:
        """Config as the engine hands it to a program: strings, objects as JSON."""

        def text(value: Any) -> str:
            if isinstance(value, str):
                return value
            return json.dumps(value)

        return {k: text(v) for k, v in self.values.items()}


def find_project(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / "Pulumi.yaml").exists():
            return folder
    raise ConfigError("Pulumi.yaml", f"no Pulumi.yaml in {start} or its parents; run from the project")


def project_info(project_dir: Path) -> tuple[str, Path]:
    data = yaml.safe_load((project_dir / "Pulumi.yaml").read_text()) or {}
    return str(data.get("name", "gpu-cluster")), project_dir / str(data.get("stackConfigDir", "."))


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(str(path), "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"cannot be read ({exc.__class__.__name__})") from None
    if not text.strip():
        raise ConfigError(str(path), "is empty; a stack file needs a `config:` block with gpu-cluster:cloud")
    try:
        data = yaml.load(text, Loader=StrictLoader)
    except StrictYamlError as exc:
        raise ConfigError(f"{path.name}: {_config_path(exc.path)}", exc.message) from None
    except RecursionError:
        raise ConfigError(str(path), "is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(str(path), f"is not valid YAML{where}: {problem}") from None
    if data is None:
        raise ConfigError(str(path), "holds no settings; a stack file needs a `config:` block with gpu-cluster:cloud")
    return data


def _mask_secrets(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER, True
        items = {k: _mask_secrets(v) for k, v in value.items()}
        return {k: v for k, (v, _) in items.items()}, any(s for _, s in items.values())
    if isinstance(value, list):
        masked = [_mask_secrets(v) for v in value]
        return [v for v, _ in masked], any(s for _, s in masked)
    return value, False


def read_stack_file(path: Path, project: str, stack: str | None = None) -> StackFile:
    data = _load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(str(path), "must be a mapping with a `config:` block")
    unknown = sorted(set(map(str, data)) - STACK_FILE_KEYS)
    if unknown:
        raise ConfigError(
            f"{path.name}: {unknown[0]}", f"unknown top-level key; allowed: {', '.join(sorted(STACK_FILE_KEYS))}"
        )
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{path.name}: config", "must be a mapping of namespace:key settings")
    values: dict[str, Any] = {}
    secrets: list[str] = []
    for raw_key, raw_value in config.items():
        key = str(raw_key) if ":" in str(raw_key) else f"{project}:{raw_key}"
        value, secret = _mask_secrets(raw_value)
        values[key] = value
        if secret:
            secrets.append(key)
    name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    return StackFile(project, name, path, values, tuple(secrets))
