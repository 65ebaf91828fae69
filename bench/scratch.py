"""Does the rendered bootstrap stripe every local NVMe device? Extract it from a plan and run it.

The scratch script and its env file are found in whatever user data the cloud takes: `#cloud-config`
(`write_files`), plain or base64 (AWS `userData`, Azure `customData`, Alibaba `userData`), or a bash
startup script that writes them with heredocs (GCP `startup-script`). The script then runs against a
stubbed device layout, the technique of tests/test_scratch_script.py: by-id links in a temporary
root, and stub `mdadm`/`mkfs.xfs`/`mount`... on PATH that only log their arguments.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import gzip
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

# Where `components.layout.cloud_init` installs the two files on a node.
SCRIPT_PATH = "/usr/local/sbin/gpu-cluster-scratch"
ENV_PATH = "/etc/gpu-cluster/scratch.env"
STUBS = {
    "findmnt": 'echo "$ROOT_SOURCE"',
    "lsblk": 'case "$*" in *PKNAME*) echo "$ROOT_DISK" ;; esac',
    "mountpoint": "exit 1",
    "blkid": "exit 2",
    "mdadm": "exit 0",
    "mkfs.xfs": "exit 0",
    "mkfs.ext4": "exit 0",
    "mount": "exit 0",
    "sleep": "exit 0",
}
HEREDOC = re.compile(r"cat > '?([^'\s]+)'? <<'(\w+)'\n(.*?)\n\2\n", re.S)
B64 = re.compile(r"^[A-Za-z0-9+/=\s]{16,}$")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _decode_file(item: dict[str, Any]) -> str:
    content = item.get("content", "")
    encoding = str(item.get("encoding", "")).lower()
    raw = content.encode()
    if encoding in ("b64", "base64", "gz+b64", "gzip+base64", "gz+base64"):
        raw = base64.b64decode(raw)
    if encoding.startswith("gz"):
        raw = gzip.decompress(raw)
    return raw.decode()


def files_in(text: str, depth: int = 0) -> dict[str, str]:
    """Files a user-data string writes on the node, path -> content."""
    if text.startswith("#cloud-config"):
        body = yaml.safe_load(text) or {}
        return {f["path"]: _decode_file(f) for f in body.get("write_files") or [] if "path" in f}
    if text.startswith("#!"):
        return {path: content + "\n" for path, _, content in HEREDOC.findall(text)}
    if depth < 2 and B64.match(text):
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return {}
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        try:
            return files_in(raw.decode(), depth + 1)
        except UnicodeDecodeError:
            return {}
    return {}


def bootstrap_of(resources: list[dict[str, Any]]) -> tuple[str, dict[str, str]] | None:
    """The scratch script and its env from the first resource whose user data carries them."""
    for res in resources:
        for text in _strings(res.get("inputs", {})):
            files = files_in(text)
            if SCRIPT_PATH in files and ENV_PATH in files:
                env = {}
                for line in files[ENV_PATH].splitlines():
                    key, sep, value = line.partition("=")
                    if sep:
                        env[key.strip()] = json.loads(value) if value.startswith('"') else value
                return files[SCRIPT_PATH], env
    return None


def _instance(glob: str, index: int) -> str | None:
    """A path matching `glob`, distinct per index (only globs with `*` can name many devices)."""
    if "*" not in glob:
        return glob if index == 1 and not any(c in glob for c in "?[") else None
    path = glob.replace("*", f"bench{index:04d}", 1).replace("*", "")
    return path if fnmatch.fnmatchcase(path, glob) and not any(c in path for c in "?[") else None


def stripes_all(script: str, env: dict[str, str], devices: int) -> dict[str, Any]:
    """Run `script` with `env` against exactly `devices` stub devices; did it use every one?"""
    globs = env.get("DEVICE_GLOBS", "").split()
    with tempfile.TemporaryDirectory(prefix="gc-bench-scratch-") as tmp:
        root = Path(tmp)
        (root / "dev").mkdir()
        targets = [root / "dev" / f"nvme{i}n1" for i in range(1, devices + 1)]
        for i, target in enumerate(targets, start=1):
            target.touch()
            for glob in globs:
                name = _instance(glob, i)
                if name is None:
                    continue
                link = root / name.lstrip("/")
                link.parent.mkdir(parents=True, exist_ok=True)
                if not link.exists():
                    link.symlink_to(target)
        if not globs or not any((root / (_instance(g, 1) or "x").lstrip("/")).exists() for g in globs):
            return {"ok": False, "detail": f"cannot stub devices for DEVICE_GLOBS={env.get('DEVICE_GLOBS')!r}"}
        (root / "bin").mkdir()
        log = root / "calls.log"
        for name, body in STUBS.items():
            stub = root / "bin" / name
            stub.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
            stub.chmod(0o755)
        (root / "script.sh").write_text(script)
        run_env = {
            "PATH": f"{root / 'bin'}:{os.environ['PATH']}",
            **env,
            "SCRATCH_PATH": str(root / "scratch"),
            "DEVICE_GLOBS": " ".join(str(root) + g for g in globs),
            "WAIT_SECONDS": "2",
            "ROOT_SOURCE": str(root / "dev" / "nvme0n1p1"),
            "ROOT_DISK": "nvme0n1",
        }
        proc = subprocess.run(
            ["bash", str(root / "script.sh")], env=run_env, capture_output=True, text=True, timeout=60
        )
        calls = log.read_text().splitlines() if log.exists() else []
        want = sorted(str(t) for t in targets)
        if proc.returncode != 0:
            return {"ok": False, "detail": f"script exited {proc.returncode}: {proc.stderr.strip()[-200:]}"}
        creates = [c.split() for c in calls if c.startswith("mdadm --create")]
        mkfs = [c.split() for c in calls if c.startswith("mkfs")]
        if devices == 1:
            ok = not creates and any(c[-1] == want[0] for c in mkfs)
            return {"ok": ok, "detail": "single-device mkfs" if ok else f"calls: {calls}"}
        used = sorted(a for a in creates[0] if a.startswith(str(root / "dev"))) if len(creates) == 1 else []
        ok = used == want and f"--raid-devices={devices}" in creates[0]
        return {"ok": ok, "detail": f"mdadm RAID0 of {len(used)} of {devices} devices"}
