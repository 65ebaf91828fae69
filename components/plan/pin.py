"""`gpu-cluster image pin`: write the image release `image: auto` boots into a stack file, its comments kept.

With the release in the stack file, neither a newer image (the catalog pins releases: catalog/releases.py) nor a
newer gpu-cluster whose catalog pins a newer release moves a deployed stack's nodes: a new image is a reviewed edit
of the stack file. The file is edited in place: only the `image:` value changes (or one `image:` line is added to
the cluster block), so comments, order and formatting stay as they were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import catalog
from ..catalog import releases
from ..errors import CLUSTER_KEY, ConfigError
from ..spec import build_spec
from .stackfile import StackFile, read_stack_file

_CLUSTER_KEYS = ("gpu-cluster:cluster", "cluster")


@dataclass(frozen=True)
class Pin:
    stack: str
    path: Path
    old: str  # the image the stack file had
    new: str  # what it has now (== old: nothing to do)
    note: str  # one line for the user


def release_for(stack: StackFile) -> str:
    """The stack-file form of the release `image: auto` boots for this stack."""
    spec = build_spec(stack.values, stack.stack)
    key = f"{CLUSTER_KEY}.image"
    if spec.scheduler == "kubernetes":
        raise ConfigError(key, "scheduler kubernetes: the node pools boot the image the service picks; nothing to pin")
    entry = catalog.gpu_image(spec.cloud, spec.instance)
    ref = releases.release_ref(spec.cloud, entry)
    if ref is None:
        tracked = next((str(entry[k]) for k in catalog.IMAGE_KEYS if entry.get(k)), "its image")
        hint = catalog.load(spec.cloud).rules["imageHint"]
        raise ConfigError(
            key,
            f"catalog/{spec.cloud}.yaml pins no release of {tracked} for {spec.instance.instanceType} (none sourced), "
            f"so auto tracks the newest; to pin, set image to one you choose: {hint}",
        )
    return ref


def _node(mapping: yaml.Node, keys: tuple[str, ...]) -> tuple[yaml.Node, yaml.Node] | None:
    if not isinstance(mapping, yaml.MappingNode):
        return None
    return next(((k, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode) and k.value in keys), None)


def set_image(text: str, ref: str, where: str) -> str:
    """The stack file's text with the cluster's `image:` set to `ref`: only that scalar is rewritten (comments, order
    and quoting elsewhere stay), or one `image:` line is added as the cluster block's first key."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    config = _node(root, ("config",)) if root is not None else None
    cluster = _node(config[1], _CLUSTER_KEYS) if config else None
    if cluster is None or not isinstance(cluster[1], yaml.MappingNode) or not cluster[1].value:
        raise ConfigError(where, "has no gpu-cluster:cluster block to pin the image in")
    block = cluster[1]
    value = json.dumps(ref)  # a JSON string is a YAML double-quoted scalar: spaces, `:` and `(` need no thought
    image = _node(block, ("image",))
    if image is not None:
        node = image[1]
        if not isinstance(node, yaml.ScalarNode):
            raise ConfigError(f"{where}: image", "is not a single value")
        return text[: node.start_mark.index] + value + text[node.end_mark.index :]
    if block.flow_style:
        raise ConfigError(where, "its gpu-cluster:cluster block is written inline ({...}); add `image: auto` to it")
    first: yaml.Mark = block.value[0][0].start_mark
    line_start = text.rfind("\n", 0, first.index) + 1
    return text[:line_start] + " " * first.column + f"image: {value}\n" + text[line_start:]


def pin_stack(stack: StackFile) -> Pin:
    """Pin the stack's image when it is auto or latest; a stack that names an image already is left as it is."""
    values = stack.values.get("gpu-cluster:cluster") or {}
    old = str(values.get("image", releases.AUTO)) if isinstance(values, dict) else releases.AUTO
    ref = release_for(stack)
    if old not in (releases.AUTO, releases.LATEST):
        note = "already pinned" if old == ref else f"already names its image; auto would boot {ref}"
        return Pin(stack.stack, stack.path, old, old, f"{stack.path.name}: image is {old}: {note}; unchanged")
    text = stack.path.read_text()
    new_text = set_image(text, ref, stack.path.name)
    stack.path.write_text(new_text)
    written = read_stack_file(stack.path, stack.project, stack.stack)  # the file still reads, and says what we wrote
    got = (written.values.get("gpu-cluster:cluster") or {}).get("image")
    if got != ref:  # pragma: no cover - set_image writes exactly this scalar; guard a silent mis-edit
        stack.path.write_text(text)
        raise ConfigError(stack.path.name, f"pinning wrote image {got!r}, not {ref!r}; the file is restored")
    return Pin(stack.stack, stack.path, old, ref, f"{stack.path.name}: image {old} -> {ref}")
