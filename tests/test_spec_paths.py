"""Mount points (issue 26, defect 2): `storage.scratchPath` and `storage.shared.path` never land on a system or
reserved directory, never carry `.`/`..`, and never hide what the image or the bootstrap keeps (catalog/paths.yaml)."""

from __future__ import annotations

import posixpath
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import paths
from components.errors import ConfigError

from .conftest import ROOT, aws_values, spec_of
from .test_spec_rules import errors_of

SCRATCH = "gpu-cluster:cluster.storage.scratchPath"
SHARED = "gpu-cluster:cluster.storage.shared.path"

# aws/aws-parallelcluster@451cc5320d5d8a9318075990ead7f76f74372f85 cli/src/pcluster/validators/cluster_validators.py
# SharedStorageMountDirValidator.reserved_directories, copied here so the data is held to the upstream list.
PARALLELCLUSTER_RESERVED = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/media", "/mnt", "/opt", "/opt/parallelcluster",
    "/opt/parallelcluster/shared", "/opt/parallelcluster/shared_login_nodes", "/opt/slurm", "/opt/intel", "/proc",
    "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
)  # fmt: skip


def keyed(values) -> dict[str, str]:
    return {e.key: e.message for e in errors_of(values)}


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/etc", "it is /etc"),
        ("/usr", "it is /usr"),
        ("/home", "it is /home"),
        ("/opt", "it is /opt"),
        ("/scratch/../etc", "it means '/etc'"),
        ("/scratch/./x", "it means '/scratch/x'"),
        ("/scratch/..", "it means '/'"),
        ("/usr/local/data", "inside /usr"),
        ("/var/lib/scratch", "inside /var"),
        ("/opt/amazon", "it is /opt/amazon"),
        ("/opt/amazon/efa", "inside /opt/amazon"),
        ("/opt/aws-ofi-nccl", "aws-ofi-nccl"),
        ("/opt/dlami/nvme", "Deep Learning AMI"),
        ("/opt/microsoft", "NCCL topology"),
        ("/home/ubuntu", "the admin user's home"),
        ("/boot/x", "inside /boot"),
        ("/proc", "it is /proc"),
        ("/root/data", "inside /root"),
    ],
)
def test_a_scratch_path_over_system_content_is_refused(path, fragment):
    errors = keyed(aws_values(storage={"scratchPath": path}))
    assert SCRATCH in errors and fragment in errors[SCRATCH], errors


@pytest.mark.parametrize("path", ["/opt", "/etc", "/usr/share", "/home"])
def test_a_shared_mount_over_system_content_is_refused(path):
    errors = keyed(aws_values(storage={"shared": {"path": path}}))
    assert SHARED in errors and "a mount there would hide" in errors[SHARED], errors


@pytest.mark.parametrize(
    "path", ["/scratch", "/data", "/mnt/scratch", "/opt/data", "/lustre/x", "/home/data", "/tmp/x"]
)
def test_directories_of_their_own_are_kept(path):
    assert spec_of(aws_values(storage={"scratchPath": path})).storage.scratch_path == path


def test_the_admin_users_home_follows_admin_user():
    assert SCRATCH in keyed(aws_values(adminUser="alice", storage={"scratchPath": "/home/alice"}))
    assert spec_of(aws_values(adminUser="alice", storage={"scratchPath": "/home/ubuntu"}))


def test_below_home_is_refused_with_slurm_which_mounts_home_over_it():
    assert spec_of(aws_values(storage={"scratchPath": "/home/data"}))
    errors = keyed(aws_values(scheduler="slurm", storage={"scratchPath": "/home/data"}))
    assert "scheduler slurm mounts /home over it" in errors[SCRATCH]


def test_an_unused_scratch_path_is_not_judged():
    assert spec_of(aws_values(storage={"scratch": "none", "scratchPath": "/etc"}))


def test_every_parallelcluster_reserved_directory_is_refused():
    for path in PARALLELCLUSTER_RESERVED:
        assert paths.problems(path, admin_user="ubuntu", slurm=False), path


def test_every_directory_the_product_uses_is_refused_as_a_mount_point():
    """The bootstrap scripts, their Python and the catalog name the directories the nodes write or read; a mount at
    any of them (or above them) would hide it."""
    pattern = re.compile(r"(?<![\w.$}:/-])/(?:opt|usr|var|etc|home|run|root|srv|boot|lib)(?:/[A-Za-z0-9._-]+)*")
    files = [*(ROOT / "components" / "bootstrap").glob("*.sh"), *(ROOT / "components" / "bootstrap").glob("*.py")]
    files += [f for f in (ROOT / "components" / "catalog").rglob("*.yaml") if f.name != "paths.yaml"]
    found = {m.group(0).rstrip(".") for f in files for m in pattern.finditer(f.read_text())}
    assert len(found) > 40  # the scan sees the bootstrap's paths (/etc/gpu-cluster, /opt/amazon/efa, ...)
    for path in sorted(found):
        for mount in {path, posixpath.dirname(path)} - {"/"}:
            assert paths.problems(mount, admin_user="ubuntu", slurm=True), f"{mount} (from {path}) is mountable"


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "scratch"]), min_size=1, max_size=5))
def test_dot_components_are_always_refused(parts):
    path = "/" + "/".join(parts)
    found = paths.problems(path, admin_user="ubuntu", slurm=False)
    if "." in parts or ".." in parts:
        assert found and "'.' and '..' components are refused" in found[0]
        assert posixpath.normpath(path) in found[0]


def test_every_entry_names_a_known_source():
    data = paths.load()
    assert data.reserved and all(e.why and e.source for e in data.reserved)
    assert {"PCLUSTER", "FHS"} <= set(data.sources)


def test_a_refusal_is_a_config_error_with_the_key_before_any_resource():
    with pytest.raises(ConfigError) as info:
        spec_of(aws_values(storage={"scratchPath": "/etc"}))
    assert info.value.key == SCRATCH
