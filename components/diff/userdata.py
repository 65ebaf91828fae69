"""Node bootstrap values decoded for review: what the nodes will run, as files, never base64.

User data reaches a plan encoded: gzip+base64 (AWS `userDataBase64`, Alibaba `userData`), base64 (Azure
`customData`, Tencent `userData`), a MIME multi-part document with a gzip part (EKS), a bash script carrying a
gzip+base64 heredoc (ACK), or plain text (GCP `startup-script`); and the Slurm head's compute-side files as their
channel carries them (an SSM parameter, a metadata item, a VM's userData, an OOS parameter: `compute_config_text`).
`decode` undoes the encodings; `split_files` splits the document into the files the nodes get (the shapes
components/bootstrap renders: a cloud-config's `write_files` by path plus `runcmd`, a MIME document's parts, a
startup script's `cat > PATH <<'EOF'` heredocs); `diff_bootstrap` gives a unified diff per file.

Pure (no Pulumi, no I/O) and linear in the size of the two documents: the line diff anchors on lines that occur
once on each side (the idea of patience diff, taken greedily so it stays linear) and never backtracks. A value
that does not decode falls back to a short hash; nothing here raises on bad input.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.message
import gzip
import hashlib
import re
import shlex
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from ..bootstrap.slurm_conf import CONF_DIR, FILE_HEADER, compute_config_files

# The last key of an input path that holds a node bootstrap (the providers' names for user data).
BOOTSTRAP_KEYS = frozenset({"userData", "userDataBase64", "customData", "startup-script", "user-data", "user_data"})
CONTEXT = 3  # unified diff context lines
_STARTS = ("#cloud-config", "#!", "MIME-Version:", "Content-Type:", "#cloud-boothook", "#include")
_B64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_HEREDOC = re.compile(r"^(?P<cmd>.*?)<<-?\s*(?P<q>['\"]?)(?P<marker>[A-Za-z_][A-Za-z0-9_]*)(?P=q)(?P<rest>.*)$")
_TARGET = re.compile(r">\s*(?P<path>'[^']+'|\"[^\"]+\"|[^\s|;&]+)")
_GZIP_MAGIC = b"\x1f\x8b"
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster, same result
_MAX_DEPTH = 4  # nested encodings (MIME part -> gzip -> cloud-config) never go deeper in our shapes


@dataclass(frozen=True)
class Decoded:
    encoding: str  # "gzip+base64", "base64", "plain"
    kind: str  # "cloud-config", "MIME multi-part", "shell script", "text"
    text: str


@dataclass(frozen=True)
class FileDiff:
    name: str  # a file's path, "runcmd", "part 2 (text/x-shellscript)", "script"
    status: str  # "changed", "added", "removed"
    lines: tuple[str, ...]  # unified diff lines (`@@`, ` `, `-`, `+`), without the ---/+++ header

    def as_json(self) -> dict[str, Any]:
        return {"file": self.name, "status": self.status, "diff": list(self.lines)}


def digest(value: Any) -> str:
    """A short stable fingerprint of a value that cannot be shown decoded."""
    raw = value if isinstance(value, str) else repr(value)
    return "sha256:" + hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:12]


def _text(raw: bytes) -> str | None:
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error):
            return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _b64(text: str) -> bytes | None:
    if not text or not _B64.fullmatch(text):
        return None
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


SLURM_FILES = "Slurm compute configuration"


def _kind(text: str) -> str | None:
    if text.startswith(FILE_HEADER):
        return SLURM_FILES
    head = text.lstrip()[:40]
    if head.startswith("#cloud-config"):
        return "cloud-config"
    if head.startswith(("MIME-Version:", "Content-Type:")):
        return "MIME multi-part"
    if head.startswith(("#!", "#cloud-boothook")):
        return "shell script"
    return None


def decode(value: Any) -> Decoded | None:
    """The bootstrap document in `value`, or None when it is not one (or does not decode)."""
    if not isinstance(value, str) or not value.strip():
        return None
    kind = _kind(value)
    if kind is not None:
        return Decoded("plain", kind, value)
    raw = _b64(value.strip())
    if raw is None:
        return None
    text = _text(raw)
    if text is None:
        return None
    kind = _kind(text)
    if kind is None:
        return None
    return Decoded("gzip+base64" if raw[:2] == _GZIP_MAGIC else "base64", kind, text)


def is_bootstrap(path: str, old: Any, new: Any) -> bool:
    """Whether a changed input is a node bootstrap: by its key, or by what either side decodes to."""
    key = re.sub(r"\[\d+\]$", "", path.rsplit(".", 1)[-1])
    return key in BOOTSTRAP_KEYS or decode(old) is not None or decode(new) is not None


def describe(value: Any) -> str:
    """One short line for a bootstrap value: its shape, size and fingerprint, never its encoded text."""
    if value is None:
        return "(none)"
    found = decode(value)
    if found is None:
        return f"undecodable, {digest(value)}"
    return f"{found.kind}, {found.encoding}, {len(found.text):,} chars, {digest(found.text)}"


# --- splitting a document into files -------------------------------------------------------------------------------


def _add(files: dict[str, str], name: str, content: str) -> None:
    key, n = name, 2
    while key in files:  # the same path written twice (two parts): keep both, in order
        key, n = f"{name} (#{n})", n + 1
    files[key] = content


def _write_file_content(entry: dict[str, Any]) -> str:
    content = entry.get("content", "")
    content = content if isinstance(content, str) else str(content)
    encoding = str(entry.get("encoding", "")).lower()
    if encoding in {"b64", "base64", "gz+b64", "gzip+base64", "gz+base64", "gzip+b64"}:
        raw = _b64(content)
        decoded = _text(raw) if raw is not None else None
        return decoded if decoded is not None else f"<undecodable {encoding}: {digest(content)}>\n"
    if encoding in {"gz", "gzip"}:
        return f"<gzip bytes: {digest(content)}>\n"
    return content


def _command(cmd: Any) -> str:
    if isinstance(cmd, list):
        return shlex.join(str(c) for c in cmd)
    return str(cmd)


def _cloud_config(text: str, files: dict[str, str], prefix: str, modes: dict[str, str] | None) -> None:
    try:
        doc = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        _add(files, prefix + "cloud-config", text)
        return
    if not isinstance(doc, dict):
        _add(files, prefix + "cloud-config", text)
        return
    rest: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "write_files" and isinstance(value, list):
            for entry in value:
                if not isinstance(entry, dict):
                    continue
                _add(files, f"{prefix}{entry.get('path', '?')}", _write_file_content(entry))
                if "permissions" in entry and modes is not None:
                    modes[f"{prefix}{entry.get('path', '?')}"] = str(entry["permissions"])
        elif key in {"runcmd", "bootcmd"} and isinstance(value, list):
            _add(files, prefix + str(key), "".join(_command(c) + "\n" for c in value))
        else:
            rest[str(key)] = value
    if rest:
        _add(files, prefix + "cloud-config (other keys)", yaml.safe_dump(rest, sort_keys=False, width=1000))


def _mime(text: str, files: dict[str, str], prefix: str, depth: int, modes: dict[str, str] | None) -> None:
    message = email.message_from_string(text)
    parts = [p for p in message.walk() if not p.is_multipart()] if message.is_multipart() else [message]
    for n, part in enumerate(parts, 1):
        label = f"{prefix}part {n} ({part.get_content_type()})"
        payload = part.get_payload(decode=True)
        body = _text(payload) if isinstance(payload, bytes) else None
        if body is None:
            _add(files, label, f"<undecodable: {digest(str(part.get_payload()))}>\n")
            continue
        _split(body, files, label + ": ", depth + 1, modes)


def _script(text: str, files: dict[str, str], prefix: str, depth: int, modes: dict[str, str] | None) -> None:
    """A script's heredoc files come out as files; its other lines stay together as the script."""
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _HEREDOC.match(line)
        if match is None:
            kept.append(line)
            i += 1
            continue
        marker = match.group("marker")
        dash = line[match.end("cmd") :].startswith("<<-")  # `<<-` strips leading tabs; `<<` ends only at the exact line
        end = i + 1
        while end < len(lines) and (lines[end].lstrip("\t") if dash else lines[end]) != marker:
            end += 1
        body = "\n".join(lines[i + 1 : end]) + "\n"
        command = match.group("cmd") + match.group("rest")
        target = _TARGET.search(match.group("rest")) or _TARGET.search(match.group("cmd"))
        path = target.group("path").strip("'\"") if target else f"heredoc {marker}"
        if "base64" in command and re.search(r"base64\s+(-d|--decode)", command):
            raw = _b64(body)
            inner = _text(raw) if raw is not None else None
            if inner is None:
                _add(files, prefix + path, f"<undecodable: {digest(body)}>\n")
            else:
                _split(inner, files, f"{prefix}{path}: ", depth + 1, modes)
        else:
            _add(files, prefix + path, body)
        kept.append(f"{line}  # -> {path}, shown as its own file")
        i = end + 1
    _add(files, prefix + "script", "\n".join(kept))


def _split(text: str, files: dict[str, str], prefix: str, depth: int, modes: dict[str, str] | None) -> None:
    kind = _kind(text)
    if depth > _MAX_DEPTH or kind is None:
        _add(files, prefix.removesuffix(": ") or "content", text)
    elif kind == "cloud-config":
        _cloud_config(text, files, prefix, modes)
    elif kind == "MIME multi-part":
        _mime(text, files, prefix, depth, modes)
    elif kind == SLURM_FILES:
        for name, content in compute_config_files(text).items():
            _add(files, f"{prefix}{CONF_DIR}/{name}", content)
    else:
        _script(text, files, prefix, depth, modes)


def split_files(text: str, modes: dict[str, str] | None = None) -> dict[str, str]:
    """The files a bootstrap document installs (name -> content), in document order; `modes` gets the
    permissions a cloud-config gives (a script's `chmod` stays in its script)."""
    files: dict[str, str] = {}
    _split(text, files, "", 0, modes)
    return files


# --- a linear line diff --------------------------------------------------------------------------------------------


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """("equal"|"change", a_start, a_end, b_start, b_end) covering both sides, in O(len(a) + len(b)).

    Common head and tail are matched first; in between, lines that occur exactly once on each side anchor the
    match, taken in order and kept only while they also increase on the new side (greedy: linear, not always the
    shortest diff, never a wrong one).
    """
    out: list[tuple[str, int, int, int, int]] = []
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    if head:
        out.append(("equal", 0, head, 0, head))
    a_end, b_end = len(a) - tail, len(b) - tail
    count_a = Counter(a[head:a_end])
    count_b = Counter(b[head:b_end])
    where_b = {line: j for j, line in enumerate(b[head:b_end], head) if count_b[line] == 1}
    i, j = head, head
    for k in range(head, a_end):
        line = a[k]
        if count_a[line] != 1 or line not in where_b or where_b[line] < j or k < i:
            continue
        m = where_b[line]
        if k > i or m > j:
            out.append(("change", i, k, j, m))
        n = 1  # extend the anchor forward while the lines agree
        while k + n < a_end and m + n < b_end and a[k + n] == b[m + n]:
            n += 1
        out.append(("equal", k, k + n, m, m + n))
        i, j = k + n, m + n
    if i < a_end or j < b_end:
        out.append(("change", i, a_end, j, b_end))
    if tail:
        out.append(("equal", a_end, len(a), b_end, len(b)))
    return out


def unified(a: list[str], b: list[str], context: int = CONTEXT) -> list[str]:
    """Unified diff hunks of two line lists (no ---/+++ header); [] when equal."""
    # every line of the edit script once: (mark, text, old line number, new line number)
    script: list[tuple[str, str, int, int]] = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            script += [(" ", a[i1 + n], i1 + n, j1 + n) for n in range(i2 - i1)]
        else:
            script += [("-", a[i], i, j1) for i in range(i1, i2)]
            script += [("+", b[j], i2, j) for j in range(j1, j2)]
    changes = [k for k, (mark, *_) in enumerate(script) if mark != " "]
    if not changes:
        return []
    out: list[str] = []
    start = 0
    while start < len(changes):
        end = start  # one hunk: changes closer than 2 * context lines apart
        while end + 1 < len(changes) and changes[end + 1] - changes[end] <= 2 * context:
            end += 1
        lo, hi = max(0, changes[start] - context), min(len(script), changes[end] + context + 1)
        part = script[lo:hi]
        old_n = sum(1 for mark, *_ in part if mark != "+")
        new_n = sum(1 for mark, *_ in part if mark != "-")
        old_at = next((i for mark, _, i, _ in part if mark != "+"), part[0][2])
        new_at = next((j for mark, _, _, j in part if mark != "-"), part[0][3])
        out.append(f"@@ -{_range(old_at, old_n)} +{_range(new_at, new_n)} @@")
        out += [mark + text for mark, text, _, _ in part]
        start = end + 1
    return out


def _range(start: int, length: int) -> str:
    """`start,length` as unified diff writes it: 1-based, and the line before when the range is empty."""
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _lines(text: str) -> list[str]:
    return text.splitlines()


def diff_bootstrap(old: Any, new: Any) -> list[FileDiff] | None:
    """Per file, the unified diff of two bootstrap values; None when neither side decodes."""
    if isinstance(old, (str, type(None))) and isinstance(new, (str, type(None))):
        found = _diff_cached(old, new)  # the renderers ask for one change's diff several times
        return None if found is None else list(found)
    return _diff(old, new)


@lru_cache(maxsize=64)
def _diff_cached(old: str | None, new: str | None) -> tuple[FileDiff, ...] | None:
    found = _diff(old, new)
    return None if found is None else tuple(found)


def _diff(old: Any, new: Any) -> list[FileDiff] | None:
    before, after = decode(old), decode(new)
    if before is None and after is None:
        return None
    old_modes: dict[str, str] = {}
    new_modes: dict[str, str] = {}
    old_files = split_files(before.text, old_modes) if before else {}
    new_files = split_files(after.text, new_modes) if after else {}
    if before is None and old is not None:
        old_files = {"content": f"<undecodable: {digest(old)}>\n"}
    if after is None and new is not None:
        new_files = {"content": f"<undecodable: {digest(new)}>\n"}
    out: list[FileDiff] = []
    for name in list(old_files) + [n for n in new_files if n not in old_files]:
        a, b = old_files.get(name), new_files.get(name)
        mode_a, mode_b = old_modes.get(name), new_modes.get(name)
        if a == b and (a is None or b is None or mode_a == mode_b):
            continue
        status = "added" if a is None else "removed" if b is None else "changed"
        lines = unified(_lines(a or ""), _lines(b or ""))
        if status == "changed" and mode_a != mode_b:
            lines.insert(0, f"mode {mode_a} -> {mode_b}")
        out.append(FileDiff(name, status, tuple(lines)))
    return out
