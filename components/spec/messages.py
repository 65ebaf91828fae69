"""pydantic's validation errors in words: the key path, the value given and what is allowed."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any, get_args

from ..errors import CLUSTER_KEY
from .model import ClusterConfig, _Model


def describe(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# What a pattern means, in words, for the fields validated by a regular expression.
PATTERN_HINTS = {
    "name": "must be lowercase letters, digits and '-', start with a letter, at most 31 characters",
    "scratchPath": "must be an absolute path such as /scratch (letters, digits, '.', '_', '-')",
    "path": "must be an absolute path such as /shared (letters, digits, '.', '_', '-')",
    "sshPublicKey": "must be an OpenSSH public key: ssh-ed25519 AAAA..., ssh-rsa AAAA... or ecdsa-sha2-... AAAA...",
    "adminUser": "must be a Linux user name: lowercase letters, digits, '_' and '-', at most 32 characters",
    "resourceGroup": "must be an Azure resource group name: 1-90 letters, digits, '-', '_', '.', '(' or ')'",
    "version": "must be a Kubernetes MAJOR.MINOR version such as '1.33'",
    "partition": "must be a Slurm partition name: lowercase letters, digits, '_' and '-', starting with a letter",
}


def pydantic_message(err: Mapping[str, Any]) -> tuple[str, str]:
    # a list item as the rules name it: `slurm.users[0].uid`
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).removeprefix(".")
    key = f"{CLUSTER_KEY}.{path}" if path else CLUSTER_KEY
    kind, value = err["type"], err.get("input")
    if kind == "extra_forbidden":
        parent: type[_Model] = ClusterConfig
        for part in err["loc"][:-1]:
            field = next((f for f in parent.model_fields.values() if f.alias == part), None)
            # `X | None` (storage.shared, login): the model inside the optional
            annotation = None if field is None else field.annotation
            if annotation is not None and not isinstance(annotation, type):
                annotation = next((a for a in get_args(annotation) if isinstance(a, type)), None)
            if field is None or not isinstance(annotation, type) or not issubclass(annotation, _Model):
                break
            parent = annotation
        names = [f.alias or n for n, f in parent.model_fields.items()]
        near = difflib.get_close_matches(str(err["loc"][-1]), names, n=1, cutoff=0.7)
        hint = f"did you mean {near[0]}? " if near else ""
        return key, f"unknown key; {hint}allowed keys here: {', '.join(names)}"
    message = str(err["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        message = message.replace("Input should be", "allowed:")
    if kind == "string_pattern_mismatch" and err["loc"][-1] in PATTERN_HINTS:
        message = PATTERN_HINTS[err["loc"][-1]]
    if kind == "string_type" and err["loc"][-1] == "version" and isinstance(value, int | float):
        # YAML reads 1.30 as the number 1.3: the version must be quoted
        message = "must be text: quote it, as in version: '1.30' (YAML reads an unquoted 1.30 as the number 1.3)"
    if kind in ("tuple_type", "list_type"):
        message = "must be a list (YAML `[a, b]` or one `- item` per line)"
    return key, f"got {describe(value)}; {message}"
