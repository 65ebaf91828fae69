"""The node bootstrap, composed of parts: each part contributes files and boot commands.

A part is pure data (`Part`): the files it installs and the commands that run at every boot. The
parts of a node (scratch, fabric, health, metrics, mounts, scheduler agents) are rendered into one
document per cloud: `cloud_init` for clouds whose images run cloud-init from user data (AWS,
Azure, Alibaba), `startup_script` for GCP, whose guest agent runs the `startup-script` metadata
at every boot on every public image. Both render the same parts in the same order, so a part is
written and tested once (the model is Cluster Toolkit's startup-script "runners").

Parts must be idempotent: they run again at every boot (local NVMe is wiped on stop/start).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class File:
    path: str
    content: str
    permissions: str = "0644"


@dataclass(frozen=True)
class Part:
    """One concern of the bootstrap: what it installs and what it runs (argv lists, in order)."""

    name: str
    files: tuple[File, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()
    summary: str = ""  # one line for the startup script's header and the docs

    @property
    def empty(self) -> bool:
        return not self.files and not self.commands


# A hook sources a library beside it (so it runs as is from the repository, in the tests); on a node it is one file,
# the library's text in place of that line.
_SOURCE_BESIDE = re.compile(r'^# shellcheck source=(\S+)\n\. "\$\{BASH_SOURCE\[0\]%/\*\}/\1"\n', re.M)


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


@cache
def script(name: str) -> str:
    """A shell script shipped beside this module (shellcheck-clean; tested against stubs), libraries inlined (and
    theirs: a hook may source another hook, e.g. azure_db_password.sh the MUNGE key's)."""
    return _SOURCE_BESIDE.sub(lambda m: script(m.group(1)), (_HERE / name).read_text())


def env_file(values: Mapping[str, str]) -> str:
    """A systemd EnvironmentFile: one KEY="value" per line (JSON quoting, which systemd reads as shell quoting)."""
    return "".join(f"{k}={json.dumps(v)}\n" for k, v in values.items())


# The units a driver part installs the driver before: MIG, the health check, the persistence daemon and the metrics
# all open the GPUs (a driver part's `before=`)
DRIVER_USERS = (
    "gpu-cluster-mig.service",
    "gpu-cluster-health.service",
    "nvidia-persistenced.service",
    "gpu-cluster-dcgm-exporter.service",
)


def oneshot_unit(
    description: str,
    *,
    name: str,
    after: Iterable[str],
    before: Iterable[str] = (),
    wants: Iterable[str] = (),
) -> str:
    """A boot-time oneshot unit running /usr/local/sbin/gpu-cluster-NAME with /etc/gpu-cluster/NAME.env."""
    lines = ["[Unit]", f"Description={description}"]
    lines += [f"Wants={' '.join(wants)}"] if wants else []
    lines += [f"After={' '.join(after)}"]
    lines += [f"Before={' '.join(before)}"] if before else []
    lines += [
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        f"EnvironmentFile=/etc/gpu-cluster/{name}.env",
        f"ExecStart=/usr/local/sbin/gpu-cluster-{name}",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"


def service_part(
    name: str,
    *,
    script_text: str,
    env: Mapping[str, str],
    unit: str,
    summary: str,
    extra_files: Iterable[File] = (),
    no_block: bool = False,
) -> Part:
    """The usual part: the script, its settings and its unit, enabled and started at every boot.

    `no_block` for units that wait on slow things (drivers, devices): the boot goes on meanwhile.
    """
    enable = ("systemctl", "enable", "--now", *(["--no-block"] if no_block else []), f"gpu-cluster-{name}.service")
    return Part(
        name,
        files=(
            File(f"/usr/local/sbin/gpu-cluster-{name}", script_text, "0755"),
            File(f"/etc/gpu-cluster/{name}.env", env_file(env)),
            File(f"/etc/systemd/system/gpu-cluster-{name}.service", unit),
            *extra_files,
        ),
        commands=(("systemctl", "daemon-reload"), enable),
        summary=summary,
    )


def commands_part(name: str, commands: Iterable[Iterable[str]], summary: str = "") -> Part:
    return Part(name, commands=tuple(tuple(c) for c in commands), summary=summary)


def gzipped(text: str) -> bytes:
    """User data gzip-compressed, the same bytes at every plan (mtime 0): cloud-init uncompresses it ("Content found
    to be gzip compressed will be uncompressed", canonical/cloud-init doc/rtd/topics/format.rst), and the clouds'
    user-data limits (16 KB on EC2, for one; each cloud's in its capabilities file) count these bytes, not the text."""
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def gzip_b64(text: str) -> str:
    """`gzipped` in Base64, as the clouds' user-data arguments take binary content."""
    return base64.b64encode(gzipped(text)).decode()


def node_text(text: str) -> str:
    """A script without its comment-only lines (the interpreter line, shellcheck's directives and here-documents'
    bodies kept): the comments are the repository's. EC2 and Alibaba take at most 16 KB of (gzip) user data."""
    kept: list[str] = []
    until: str | None = None  # the terminator of the here-document we are in
    for line in text.splitlines():
        if until is not None:
            kept.append(line)
            until = None if line.strip() == until else until
            continue
        stripped = line.lstrip()
        if stripped.startswith("#") and not stripped.startswith(("#!", "# shellcheck")):
            continue
        match = None if "<<<" in line else _HEREDOC.search(line)
        until = match.group(1) if match and not stripped.startswith("#") else None
        kept.append(line)
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def _is_script(f: File) -> bool:
    return f.content.startswith(("#!", "# shellcheck shell="))


def without_comments(parts: Iterable[Part]) -> tuple[Part, ...]:
    """The parts with their scripts' comment lines dropped (`node_text`; other files as they are)."""
    return tuple(
        replace(p, files=tuple(replace(f, content=node_text(f.content)) if _is_script(f) else f for f in p.files))
        for p in parts
    )


def _present(parts: Iterable[Part]) -> list[Part]:
    return [p for p in parts if not p.empty]


def cloud_init(parts: Iterable[Part]) -> str:
    """The `#cloud-config` user data of the parts: every file under `write_files`, every command under `runcmd`."""
    present = _present(parts)
    files = [{"path": f.path, "permissions": f.permissions, "content": f.content} for p in present for f in p.files]
    runcmd = [list(cmd) for p in present for cmd in p.commands]
    body: dict[str, Any] = {}
    if files:
        body["write_files"] = files
    if runcmd:
        body["runcmd"] = runcmd
    return "#cloud-config\n" + yaml.safe_dump(body, sort_keys=False, width=1000)


def startup_script(parts: Iterable[Part], header: Iterable[str] = ()) -> str | None:
    """The same parts as one bash script (GCP `startup-script`); None when there is nothing to do."""
    present = _present(parts)
    if not present:
        return None
    lines = ["#!/bin/bash", *(f"# {line}" for line in header), "set -euo pipefail"]
    index = 0
    for part in present:
        for item in part.files:
            marker = f"GPU_CLUSTER_EOF_{index}"
            index += 1
            if marker in item.content:  # pragma: no cover - the files are ours; guard a silent truncation
                raise ValueError(f"{item.path} contains the heredoc marker {marker}")
            lines += [
                f"mkdir -p {shlex.quote(item.path.rsplit('/', 1)[0])}",
                f"cat > {shlex.quote(item.path)} <<'{marker}'",
                item.content.rstrip("\n"),
                marker,
                f"chmod {item.permissions} {shlex.quote(item.path)}",
            ]
    for part in present:
        lines += [shlex.join(cmd) for cmd in part.commands]
    return "\n".join(lines) + "\n"
