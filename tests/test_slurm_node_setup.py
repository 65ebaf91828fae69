"""bootstrap/slurm_node_setup.sh: the steps every Slurm role takes first (SlurmUser, packages, MUNGE key and daemon,
/home), sourced beside the role scripts and inlined in their place on a node, so a node's script reads as it would
with the steps written out (its user data does not change with the library)."""

from __future__ import annotations

import subprocess

import pytest

from components.bootstrap import script

from .hook_helpers import BOOTSTRAP

STEPS = (BOOTSTRAP / "slurm_node_setup.sh").read_text()
SOURCE = '# shellcheck source=slurm_node_setup.sh\n. "${BASH_SOURCE[0]%/*}/slurm_node_setup.sh"\n'


@pytest.mark.parametrize("role", ["head", "compute", "login"])
def test_a_node_gets_the_steps_in_place_of_the_library(tmp_path, role):
    name = f"slurm_{role}.sh"
    beside = (BOOTSTRAP / name).read_text()
    assert beside.count(SOURCE) == 1
    rendered = script(name)
    assert rendered == beside.replace(SOURCE, STEPS) and "slurm_node_setup.sh" not in rendered
    # after the common library (it defines the steps), before the role's own work
    assert rendered.index("slurm_common.sh}") < rendered.index(STEPS)
    # shellcheck-clean as it is, next to the common library it sources at run time (installed as a file)
    (tmp_path / "slurm_common.sh").write_text(script("slurm_common.sh"))
    (tmp_path / name).write_text(rendered)
    proc = subprocess.run(["shellcheck", "-x", name], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_the_steps_stop_the_role_at_the_first_failure():
    assert [line.split(" || ")[0] for line in STEPS.splitlines()] == [
        "ensure_slurm_user",
        "install_packages",
        "install_munge_key",
        "start_munge",
        "mount_home",
    ]
    assert all(line.endswith(" || exit 1") for line in STEPS.splitlines())


def test_the_library_is_shellcheck_clean_as_bash():
    proc = subprocess.run(["shellcheck", "--shell=bash", str(BOOTSTRAP / "slurm_node_setup.sh")], capture_output=True)
    assert proc.returncode == 0, proc.stdout
