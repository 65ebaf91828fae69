"""slurm.containers: pyxis. The part on the GPU and login nodes (a oneshot the daemon pulls in before it starts), the
channel's plugstack.conf, and slurm_containers.sh run against stubbed apt, curl, git and make (the Box of
tests/test_slurm_scripts.py)."""

from __future__ import annotations

from components.bootstrap.slurm import compute_parts, login_parts
from components.bootstrap.slurm_conf import compute_config_files
from components.layout.slurm import slurm_layout

from .conftest import aws_values, plan_json, plan_stack, spec_of
from .test_slurm_scripts import Box, part_env


def pyxis_layout():
    out = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=2, slurm={"containers": "pyxis"})))
    assert out is not None
    return out


def test_the_gpu_and_login_nodes_get_the_oneshot_before_their_daemon_and_the_channel_includes_plugstack():
    lay = pyxis_layout()
    gpu = compute_parts(lay, head_address="10.42.0.7", key_hook="")
    login = login_parts(lay, head_address="10.42.0.7", key_hook="")
    for parts, daemon, enroot in ((gpu, "slurmd", "true"), (login, "sackd", "false")):
        part = next(p for p in parts if p.name == "slurm-containers")
        unit = next(f.content for f in part.files if f.path.endswith(".service"))
        assert f"Before={daemon}.service\n" in unit and f"WantedBy={daemon}.service\n" in unit
        # enabled, never started by itself: the daemon's start runs it after the role's packages
        assert part.commands == (
            ("systemctl", "daemon-reload"),
            ("systemctl", "enable", "gpu-cluster-slurm-containers.service"),
        )
        env = part_env(parts, "slurm-containers")
        assert env["ENROOT"] == enroot and env["PYXIS_VERSION"] == "v0.24.0" and env["SLURM_VERSION"] == "25.11.5"
    assert compute_config_files(lay.compute_config)["plugstack.conf"] == "include /etc/slurm/plugstack.conf.d/*\n"
    # without it nothing changes: no part, no plugstack.conf
    plain = slurm_layout(spec_of(aws_values(scheduler="slurm", nodes=2)))
    assert plain is not None and "plugstack.conf" not in plain.compute_files()
    assert all(p.name != "slurm-containers" for p in compute_parts(plain, head_address="x", key_hook=""))


def _run(tmp_path, enroot: str, installed: str = ""):
    box = Box(tmp_path)
    (box.bin / "dpkg-query").write_text(f"#!/bin/bash\necho -n '{installed}'\n")
    (box.bin / "dpkg").write_text("#!/bin/bash\necho amd64\n")
    for name in ("git", "make", "curl"):
        (box.bin / name).write_text(f'#!/bin/bash\necho "{name} $*" >>"{box.calls}"\n')
    # a clone makes its directory, as git does
    (box.bin / "git").write_text(f'#!/bin/bash\necho "git $*" >>"{box.calls}"\nmkdir -p "${{@: -1}}"\n')
    for name in ("dpkg-query", "dpkg", "git", "make", "curl"):
        (box.bin / name).chmod(0o755)
    parts = compute_parts(pyxis_layout(), head_address="10.42.0.7", key_hook="")
    env = {
        **box.role_env(part_env(parts, "slurm-containers")),
        "ENROOT": enroot,
        "PLUGSTACK_DIR": str(tmp_path / "plugstack.conf.d"),
        "BUILD_DIR": str(tmp_path / "pyxis"),
        "PYXIS_PREFIX": str(tmp_path / "prefix"),
    }
    return box, box.run("slurm_containers.sh", env=env), env


def test_a_gpu_node_installs_enroot_and_builds_pyxis_against_its_slurm(tmp_path):
    box, proc, _ = _run(tmp_path, "true")
    assert proc.returncode == 0, proc.stderr
    calls = box.called()
    downloads = [c for c in calls if c.startswith("curl -fsSL -o")]
    assert [c.rsplit(" ", 1)[1] for c in downloads] == [
        "https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb",
        "https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot+caps_4.1.2-1_amd64.deb",
    ]
    # pyxis against exactly the nodes' Slurm: the dev package of the version the repository lists
    assert "apt-get install -y -q build-essential git slurm-smd-dev=25.11.5-1" in calls
    assert f"git clone --quiet --depth 1 --branch v0.24.0 https://github.com/NVIDIA/pyxis {tmp_path}/pyxis" in calls
    assert f"make -C {tmp_path}/pyxis prefix={tmp_path}/prefix install" in calls
    link = tmp_path / "plugstack.conf.d" / "pyxis.conf"
    assert link.is_symlink() and str(link.readlink()) == f"{tmp_path}/prefix/share/pyxis/pyxis.conf"


def test_a_login_node_builds_pyxis_only_and_a_second_boot_does_nothing(tmp_path):
    box, proc, env = _run(tmp_path, "false", installed="4.1.2-1")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in box.called() if c.startswith("curl -fsSL -o")]
    first = len(box.called())
    proc = box.run("slurm_containers.sh", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(box.called()) == first  # built for this pyxis and this Slurm: nothing again


def test_the_shipped_elastic_stack_runs_containers():
    plan = plan_json(plan_stack("aws-slurm-elastic"))
    assert plan["config"]["cluster"]["slurm"]["containers"] == "pyxis"
