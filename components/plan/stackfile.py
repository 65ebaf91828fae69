"""Reading `Pulumi.yaml` and `stacks/Pulumi.<stack>.yaml` the way the Pulumi CLI does, offline.

Secrets (`secure:` values) cannot be decrypted without the stack's secrets provider and are never
needed for a plan: they become the placeholder `[secret]` and their keys are marked secret.
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
        data = yaml.safe_load(text)
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
