"""The shared filesystem mount (bootstrap/mounts.sh), run for real against a stubbed mount, apt and systemd."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components import bootstrap
from components.bootstrap.health import health_script
from components.bootstrap.mounts import SOURCE_PLACEHOLDER, Mount, mounts_part, mounts_script

SCRIPT = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "mounts.sh"
HEALTH = SCRIPT.with_name("health.sh")


def test_health_script_is_unchanged_without_mounts():
    # nodes without storage.shared keep the health.sh they had: their user data (and nodes) do not change
    assert health_script() == HEALTH.read_text() and "check_mounts" not in health_script()
    assert health_script(mounts=True).count("check_mounts") == 2


def test_the_health_script_with_the_mount_check_is_shellcheck_clean(tmp_path):
    path = tmp_path / "health.sh"
    path.write_text(health_script(mounts=True))
    proc = subprocess.run(
        ["shellcheck", str(path), str(SCRIPT.with_name("health_mounts.sh"))], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout


def run(
    tmp_path: Path,
    fail_mounts: int = 0,
    mounted: bool = False,
    installed: bool = True,
    script: str = "",
    without: tuple[str, ...] = (),
    **env: str,
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    count = tmp_path / "mount.count"
    stubs = {
        # fails FAIL_MOUNTS times ("not answering yet"), then succeeds
        "mount": f'n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"; [ "$n" -ge {fail_mounts} ]',
        "mountpoint": "exit 0" if mounted else "exit 1",
        "systemctl": "exit 0",
        "systemd-escape": 'echo "shared.mount"',
        # records the variable AZNFS's package reads to skip its auto-update question
        "apt-get": f'echo "${{AZNFS_NONINTERACTIVE_INSTALL:-unset}}" >> "{tmp_path}/apt.env"',
        "modprobe": "exit 0",
        "modinfo": "exit 0" if installed else "exit 1",
        "mount.lustre": "exit 0",
        "mount.nfs": "exit 0",
        "mount.aznfs": "exit 0",
        "stunnel4": "exit 0",
        "dpkg": "exit 0",
        "curl": "echo KEY",
        "gpg": "cat > /dev/null",
        "uname": "echo 6.8.0-1024-aws",
        "apt-cache": "printf 'amlfs-lustre-client-2.15.4-42-gd6d405d\\namlfs-lustre-client-2.16.1-14-gbc76088\\n'",
        "sleep": "exit 0",
    }
    # not installed: none of the clients' commands; `without`: these only
    missing = set(without) | (set() if installed else {"mount.lustre", "mount.nfs", "mount.aznfs", "stunnel4"})
    for name, body in stubs.items():
        if name in missing:
            continue
        path = bin_dir / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    if missing:  # a PATH without the system's mount helpers: only the stubs and the tools the script uses
        for tool in ("dirname", "mkdir", "cat", "sed", "tr", "sort", "tail", "mktemp", "rm"):
            found = shutil.which(tool)
            assert found is not None
            (bin_dir / tool).symlink_to(found)
    (tmp_path / "os-release").write_text('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n')
    for folder in ("units", "keyrings", "sources"):
        (tmp_path / folder).mkdir(exist_ok=True)
    full_env = {
        # without the client installed, the system's own mount helpers must not be found either
        "PATH": str(bin_dir) if missing else f"{bin_dir}:{os.environ['PATH']}",
        "MOUNT_PATH": str(tmp_path / "shared"),
        "MOUNT_SOURCE": "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdef",
        "MOUNT_FSTYPE": "lustre",
        "MOUNT_OPTIONS": "relatime,flock",
        "CLIENT": "fsx-lustre-apt",
        "CLIENT_PACKAGES": "lustre-client-modules-$(uname -r)",
        "CLIENT_REPO": "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu",
        "CLIENT_KEY": "https://example.invalid/key.asc",
        "WAIT_SECONDS": "30",
        "UNIT_DIR": str(tmp_path / "units"),
        "KEYRING_DIR": str(tmp_path / "keyrings"),
        "APT_SOURCES": str(tmp_path / "sources"),
        "OS_RELEASE": str(tmp_path / "os-release"),
        "RESULT": str(tmp_path / "mounts.json"),
        **env,
    }
    bash = "/bin/bash"
    path = SCRIPT
    if script:  # a spliced variant (mounts_script(client))
        path = tmp_path / "mounts.sh"
        path.write_text(script)
    proc = subprocess.run([bash, str(path)], env=full_env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def test_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_script_is_the_one_shipped():
    assert mounts_script() == SCRIPT.read_text()


def test_mounts_with_the_documented_options_and_writes_a_mount_unit(tmp_path):
    proc, calls = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    mounts = [c for c in calls if c.startswith("mount ")]
    assert mounts == [
        f"mount -t lustre -o relatime,flock fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdef {tmp_path}/shared"
    ]
    unit = (tmp_path / "units" / "shared.mount").read_text()
    assert "What=fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdef" in unit and f"Where={tmp_path}/shared" in unit
    assert "Type=lustre" in unit and "Options=relatime,flock,_netdev" in unit and "After=network-online.target" in unit
    assert "WantedBy=remote-fs.target" in unit
    assert "systemctl enable shared.mount" in calls  # survives reboots
    assert json.loads((tmp_path / "mounts.json").read_text())["mounted"] is True


def test_retries_until_the_filesystem_answers(tmp_path):
    proc, calls = run(tmp_path, fail_mounts=3)
    assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls if c.startswith("mount ")]) == 4
    assert proc.stderr.count("not answering yet") == 3


def test_gives_up_after_the_wait_and_reports_not_mounted(tmp_path):
    proc, _calls = run(tmp_path, fail_mounts=10_000, WAIT_SECONDS="0")
    assert proc.returncode == 1 and "did not answer" in proc.stderr
    assert json.loads((tmp_path / "mounts.json").read_text())["mounted"] is False


def test_an_existing_mount_is_left_alone(tmp_path):
    proc, calls = run(tmp_path, mounted=True)
    assert proc.returncode == 0 and not [c for c in calls if c.startswith(("mount ", "apt-get"))]


def test_installs_the_lustre_client_for_the_running_kernel(tmp_path):
    proc, calls = run(tmp_path, installed=False)
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q lustre-client-modules-6.8.0-1024-aws" in calls
    assert "modprobe lustre" in calls
    source = (tmp_path / "sources" / "fsxlustreclientrepo.list").read_text()
    assert "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu jammy main" in source and "signed-by=" in source


def test_installs_nfs_utils_for_nfs(tmp_path):
    proc, calls = run(
        tmp_path, installed=False, MOUNT_FSTYPE="nfs4", CLIENT="apt", CLIENT_PACKAGES="nfs-common",
        MOUNT_SOURCE="fs-1.efs.us-east-1.amazonaws.com:/", MOUNT_OPTIONS="nfsvers=4.1,hard",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (
        "apt-get install -y -q nfs-common" in calls and not (tmp_path / "sources" / "fsxlustreclientrepo.list").exists()
    )
    assert f"mount -t nfs4 -o nfsvers=4.1,hard fs-1.efs.us-east-1.amazonaws.com:/ {tmp_path}/shared" in calls


def test_the_part_is_valid_cloud_init_with_the_unit_before_the_health_check():
    mount = Mount("/shared", SOURCE_PLACEHOLDER, "lustre", "relatime,flock", "fsx-lustre-apt", "p", "r", "k")
    part = mounts_part(mount)
    files = {f.path: f for f in part.files}
    unit = files["/etc/systemd/system/gpu-cluster-mounts.service"].content
    assert "Before=gpu-cluster-health.service" in unit and "After=network-online.target" in unit
    assert f'MOUNT_SOURCE="{SOURCE_PLACEHOLDER}"' in files["/etc/gpu-cluster/mounts.env"].content
    assert ("systemctl", "enable", "--now", "--no-block", "gpu-cluster-mounts.service") in part.commands
    assert mounts_part(None).empty
    assert bootstrap.cloud_init([part]).startswith("#cloud-config\n")


@pytest.mark.parametrize(("mounted", "ok"), [(True, True), (False, False)])
def test_health_check_reports_the_mount(tmp_path, mounted, ok):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"mountpoint": "exit 0" if mounted else "exit 1", "sleep": "exit 0"}.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    result = tmp_path / "health.json"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "EXPECTED_GPUS": "0",
        "DCGM_LEVEL": "0",
        "EXPECTED_MOUNTS": "/shared",
        "WAIT_SECONDS": "2",
        "HEALTH_RESULT": str(result),
        "UNHEALTHY_HOOK": str(tmp_path / "missing"),
    }
    script = tmp_path / "health.sh"
    script.write_text(health_script(mounts=True))  # the mount check is spliced in only for nodes with mounts
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    report = json.loads(result.read_text())
    assert [c["name"] for c in report["checks"]] == ["mount"]
    assert report["checks"][0]["ok"] is ok and report["healthy"] is ok and (proc.returncode == 0) is ok


def test_installs_the_newest_amlfs_client_for_the_running_kernel(tmp_path):
    proc, calls = run(
        tmp_path, installed=False, CLIENT="amlfs-apt", CLIENT_PACKAGES="",
        CLIENT_REPO="https://packages.microsoft.com/repos/amlfs-{codename}/",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q amlfs-lustre-client-2.16.1-14-gbc76088=6.8.0-1024-aws" in calls
    source = (tmp_path / "sources" / "amlfs.list").read_text()
    assert "https://packages.microsoft.com/repos/amlfs-jammy/ jammy main" in source


def test_a_repository_naming_its_own_suite(tmp_path):
    proc, calls = run(
        tmp_path, installed=False, CLIENT="gcp-lustre-apt",
        CLIENT_PACKAGES="lustre-client-modules-$(uname -r) lustre-client-utils",
        CLIENT_REPO="https://us-apt.pkg.dev/projects/lustre-client-binaries lustre-client-ubuntu-{codename}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q lustre-client-modules-6.8.0-1024-aws lustre-client-utils" in calls
    source = (tmp_path / "sources" / "gcp-lustre-client.list").read_text()
    assert source.endswith("https://us-apt.pkg.dev/projects/lustre-client-binaries lustre-client-ubuntu-jammy main\n")


# --- Azure Files NFS with encryption in transit: the AZNFS mount helper (mounts_aznfs.sh, spliced in) ---

AZNFS = {
    "MOUNT_FSTYPE": "aznfs",
    "MOUNT_SOURCE": "acct.file.core.windows.net:/acct/shared",
    "MOUNT_OPTIONS": "vers=4,minorversion=1,sec=sys,nconnect=4",
    "CLIENT": "ms-config-apt",
    "CLIENT_PACKAGES": "aznfs",
    "CLIENT_REPO": "https://packages.microsoft.com/config/{id}/{version}/packages-microsoft-prod.deb",
    "CLIENT_KEY": "",
}


def test_other_clients_keep_the_script_byte_for_byte():
    # nodes that do not mount with AZNFS or EFS over TLS keep the mounts.sh they had: their user data (and nodes) do
    # not change
    for client in ("fsx-lustre-apt", "amlfs-apt", "gcp-lustre-apt", "apt", "none", ""):
        assert mounts_script(client) == SCRIPT.read_text()
    spliced = mounts_script("ms-config-apt")
    assert spliced != SCRIPT.read_text() and spliced.count("add_ms_config_repo") == 2
    assert "# shellcheck shell=bash" not in spliced  # the fragment's own directive goes: one script, one shebang
    efs = mounts_script("efs-stunnel-apt")
    assert efs != SCRIPT.read_text() and "# shellcheck shell=bash" not in efs
    assert efs.count("start_tunnel") == 2 and "add_ms_config_repo" not in efs  # one fragment each, never both
    assert "start_tunnel" not in spliced and "stunnel4" not in SCRIPT.read_text()


@pytest.mark.parametrize(
    ("client", "fragment"), [("ms-config-apt", "mounts_aznfs.sh"), ("efs-stunnel-apt", "mounts_efs_tls.sh")]
)
def test_a_spliced_script_and_its_fragment_are_shellcheck_clean(tmp_path, client, fragment):
    path = tmp_path / "mounts.sh"
    path.write_text(mounts_script(client))
    proc = subprocess.run(["shellcheck", str(path), str(SCRIPT.with_name(fragment))], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_installs_aznfs_from_packages_microsoft_com_and_mounts_with_tls(tmp_path):
    proc, calls = run(tmp_path, installed=False, script=mounts_script("ms-config-apt"), **AZNFS)
    assert proc.returncode == 0, proc.stderr
    # Microsoft's documented install: the release's config package, then apt
    fetch = [c for c in calls if c.startswith("curl ")]
    assert len(fetch) == 1 and fetch[0].endswith(
        "https://packages.microsoft.com/config/ubuntu/22.04/packages-microsoft-prod.deb"
    )
    assert [c for c in calls if c.startswith("dpkg ")] == [f"dpkg -i {fetch[0].split(' -o ')[1].split()[0]}"]
    order = [c.split()[0] for c in calls if c.split()[0] in ("dpkg", "apt-get")]
    assert order == ["dpkg", "apt-get", "apt-get"]  # the repository before the update and the install
    assert "apt-get install -y -q aznfs" in calls
    assert not list((tmp_path / "sources").iterdir())  # the config package writes its own list, not the script
    # -t aznfs without `notls`: the mount helper's TLS tunnel
    assert [c for c in calls if c.startswith("mount ")] == [
        f"mount -t aznfs -o vers=4,minorversion=1,sec=sys,nconnect=4 acct.file.core.windows.net:/acct/shared "
        f"{tmp_path}/shared"
    ]
    unit = (tmp_path / "units" / "shared.mount").read_text()
    assert "Type=aznfs" in unit and "What=acct.file.core.windows.net:/acct/shared" in unit
    assert "Options=vers=4,minorversion=1,sec=sys,nconnect=4,_netdev" in unit and "notls" not in unit


def test_the_aznfs_install_is_noninteractive(tmp_path):
    proc, _calls = run(tmp_path, installed=False, script=mounts_script("ms-config-apt"), **AZNFS)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "apt.env").read_text().split() == ["1", "1"]  # the update and the install
    other = tmp_path / "other"
    other.mkdir()
    proc, _calls = run(other, installed=False, MOUNT_FSTYPE="nfs4", CLIENT="apt", CLIENT_PACKAGES="nfs-common")
    assert proc.returncode == 0 and (other / "apt.env").read_text().split() == ["unset", "unset"]


def test_an_installed_aznfs_is_not_installed_again(tmp_path):
    proc, calls = run(tmp_path, script=mounts_script("ms-config-apt"), **AZNFS)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith(("curl ", "dpkg ", "apt-get "))]
    assert any(c.startswith("mount -t aznfs ") for c in calls)


def test_the_part_carries_the_aznfs_script_only_for_that_client():
    azure = Mount("/shared", SOURCE_PLACEHOLDER, "aznfs", "vers=4,minorversion=1", "ms-config-apt", "aznfs", "u")
    path = "/usr/local/sbin/gpu-cluster-mounts"
    files = {f.path: f.content for f in mounts_part(azure).files}
    assert files[path] == mounts_script("ms-config-apt")
    assert 'MOUNT_FSTYPE="aznfs"' in files["/etc/gpu-cluster/mounts.env"]
    efs = Mount("/shared", SOURCE_PLACEHOLDER, "nfs4", "nfsvers=4.1", "apt", "nfs-common")
    assert {f.path: f.content for f in mounts_part(efs).files}[path] == SCRIPT.read_text()


# --- EFS over TLS: a local stunnel client tunnel (mounts_efs_tls.sh, spliced in) ---

EFS_TLS = {
    "MOUNT_FSTYPE": "nfs4",
    "MOUNT_SOURCE": "fs-0123456789abcdef0.efs.us-east-1.amazonaws.com:/",
    "MOUNT_OPTIONS": "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,port=20049",
    "CLIENT": "efs-stunnel-apt",
    "CLIENT_PACKAGES": "stunnel4 nfs-common",
    "CLIENT_REPO": "",
    "CLIENT_KEY": "",
}


def run_efs_tls(tmp_path: Path, **env: str):
    settings = {**EFS_TLS, "TLS_CONF": str(tmp_path / "efs-tls.conf"), **env}
    return run(tmp_path, script=mounts_script("efs-stunnel-apt"), **settings)


def stunnel_conf(text: str) -> dict[str, list[str]]:
    """`key = value` lines of a stunnel configuration, by key (a key may repeat: socket)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_efs_tls_writes_the_stunnel_config_efs_expects(tmp_path):
    proc, calls = run_efs_tls(tmp_path, installed=False)
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q stunnel4 nfs-common" in calls
    text = (tmp_path / "efs-tls.conf").read_text()
    host = "fs-0123456789abcdef0.efs.us-east-1.amazonaws.com"
    conf = stunnel_conf(text)
    # the options of efs-utils' stunnel mode (metadata.py STUNNEL_EFS_CONFIG, proxy.py write_stunnel_config_file)
    assert conf == {
        "foreground": ["yes"],
        "pid": [""],
        "socket": ["l:SO_REUSEADDR=yes", "a:SO_BINDTODEVICE=lo"],
        "client": ["yes"],
        "accept": ["127.0.0.1:20049"],
        "connect": [f"{host}:2049"],
        "sslVersion": ["TLSv1.2"],
        "renegotiation": ["no"],
        "TIMEOUTbusy": ["20"],
        "TIMEOUTclose": ["0"],
        "TIMEOUTidle": ["70"],
        "delay": ["yes"],
        "verifyChain": ["yes"],
        "CAfile": ["/etc/ssl/certs/ca-certificates.crt"],
        "checkHost": [host],
        "libwrap": ["no"],
    }
    assert text.index("[efs]") < text.index("client = yes")  # the service section after the global options


def test_efs_tls_mounts_127_0_0_1_through_the_tunnel_that_systemd_restarts(tmp_path):
    proc, calls = run_efs_tls(tmp_path, installed=False)
    assert proc.returncode == 0, proc.stderr
    options = EFS_TLS["MOUNT_OPTIONS"]
    assert [c for c in calls if c.startswith("mount ")] == [f"mount -t nfs4 -o {options} 127.0.0.1:/ {tmp_path}/shared"]
    service = (tmp_path / "units" / "gpu-cluster-efs-tls.service").read_text()
    assert f"ExecStart=/usr/bin/stunnel4 {tmp_path}/efs-tls.conf" in service  # Ubuntu's stunnel4 package
    assert "Restart=always" in service and "After=network-online.target" in service
    assert "WantedBy=multi-user.target" in service
    unit = (tmp_path / "units" / "shared.mount").read_text()
    assert "What=127.0.0.1:/" in unit and "Type=nfs4" in unit and f"Options={options},_netdev" in unit
    # the mount needs the tunnel at every boot, after it; a restart of the tunnel does not unmount (not BindsTo)
    assert "Requires=gpu-cluster-efs-tls.service" in unit
    assert "After=network-online.target gpu-cluster-efs-tls.service" in unit and "BindsTo" not in unit
    # the packages, then the tunnel (enabled: it comes back at boot), then the mount
    order = [c for c in calls if c.startswith(("apt-get install", "systemctl enable --now", "mount "))]
    assert order == [
        "apt-get install -y -q stunnel4 nfs-common",
        "systemctl enable --now gpu-cluster-efs-tls.service",
        f"mount -t nfs4 -o {options} 127.0.0.1:/ {tmp_path}/shared",
    ]
    assert "systemctl enable shared.mount" in calls
    assert json.loads((tmp_path / "mounts.json").read_text())["mounted"] is True


def test_efs_tls_installs_stunnel_even_where_the_nfs_client_is_there(tmp_path):
    # the image may ship nfs-common: the client counts as installed only with stunnel4 too
    proc, calls = run_efs_tls(tmp_path, without=("stunnel4",))
    assert proc.returncode == 0, proc.stderr
    assert "apt-get install -y -q stunnel4 nfs-common" in calls
    both = tmp_path / "both"
    both.mkdir()
    proc, calls = run_efs_tls(both, without=("mount.lustre",))
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("apt-get ")]  # both there: nothing to install
    assert any(c.startswith("systemctl enable --now gpu-cluster-efs-tls.service") for c in calls)


def test_efs_tls_refuses_options_without_the_tunnel_port(tmp_path):
    proc, calls = run_efs_tls(tmp_path, MOUNT_OPTIONS="nfsvers=4.1,hard")
    assert proc.returncode == 1 and "no port=" in proc.stderr
    assert not [c for c in calls if c.startswith("mount ")] and not (tmp_path / "efs-tls.conf").exists()


def test_efs_tls_leaves_an_existing_mount_alone(tmp_path):
    proc, calls = run_efs_tls(tmp_path, mounted=True)
    assert proc.returncode == 0 and not [c for c in calls if c.startswith(("mount ", "systemctl", "apt-get"))]
    assert not (tmp_path / "efs-tls.conf").exists()
