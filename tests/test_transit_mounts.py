"""Encryption in transit of the shared filesystem's mount, as registered and as the plan states it (inTransit).

Azure Files NFS: every node mounts with Microsoft's AZNFS helper (`-t aznfs`, TLS through stunnel), installed from
packages.microsoft.com; EFS: every node mounts through a local stunnel TLS tunnel (bootstrap/mounts_efs_tls.sh) and
the file system's policy refuses NFS without TLS (tests/test_efs_tls.py has the rest).
"""

from __future__ import annotations

import base64

import pytest
import yaml

from components.bootstrap import node_text
from components.bootstrap.mounts import mounts_script
from components.catalog import storage
from components.policy.transit import data as transit_data

from .conftest import aws_values, one, plan_values
from .test_aws_resources import decode_user_data
from .test_azure_resources import azure_values


@pytest.fixture(scope="module")
def azure_nfs():
    return plan_values(azure_values(storage={"shared": {"kind": "nfs", "sizeGb": 1024}}))


@pytest.fixture(scope="module")
def efs():
    return plan_values(aws_values(storage={"shared": {"kind": "nfs", "retain": False}}))


def _azure_files(plan) -> dict[str, str]:
    vmss = one(plan, "compute:VirtualMachineScaleSet")["inputs"]
    data = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    return {f["path"]: f["content"] for f in yaml.safe_load(data)["write_files"]}


def test_azure_nodes_mount_the_share_with_the_aznfs_helper(azure_nfs):
    files = _azure_files(azure_nfs)
    env = files["/etc/gpu-cluster/mounts.env"]
    name = one(azure_nfs, "storage:StorageAccount")["inputs"]["accountName"]
    assert f'MOUNT_SOURCE="{name}.file.core.windows.net:/{name}/shared"' in env
    assert 'MOUNT_FSTYPE="aznfs"' in env and 'CLIENT="ms-config-apt"' in env and 'CLIENT_PACKAGES="aznfs"' in env
    assert 'CLIENT_REPO="https://packages.microsoft.com/config/{id}/{version}/packages-microsoft-prod.deb"' in env
    options = next(line for line in env.splitlines() if line.startswith("MOUNT_OPTIONS="))
    assert options.startswith('MOUNT_OPTIONS="vers=4,minorversion=1,sec=sys,nconnect=4')
    assert "tls" not in options  # TLS is the helper's default; `notls` would turn it off, `tls=` is its version
    # the script on the node is the one with the AZNFS client spliced in
    assert files["/usr/local/sbin/gpu-cluster-mounts"] == node_text(mounts_script("ms-config-apt"))


def test_the_plan_says_the_azure_share_is_encrypted_in_transit(azure_nfs):
    shared = azure_nfs.summary()["inTransit"]["sharedStorage"]
    assert (shared["kind"], shared["inTransit"], shared["fstype"]) == ("nfs", "used", "aznfs")
    assert "mount -t aznfs" in shared["note"] and "does not refuse plain NFS" in shared["note"]
    assert "encryption-in-transit-for-nfs-shares" in shared["source"]


def test_the_plan_says_efs_is_encrypted_in_transit_and_enforced(efs):
    shared = efs.summary()["inTransit"]["sharedStorage"]
    assert (shared["kind"], shared["inTransit"], shared["client"]) == ("nfs", "used", "efs-stunnel-apt")
    assert shared["enforced"] is True  # the registered file system policy denies aws:SecureTransport false
    assert "stunnel" in shared["note"] and "aws:SecureTransport is false" in shared["note"]
    assert "aws/efs-utils at def6e74" in shared["source"] and "encryption-in-transit.html" in shared["source"]
    # and the nodes really mount through the tunnel (what "used" says): the client and the script that runs it
    files = {
        f["path"]: f["content"]
        for f in yaml.safe_load(decode_user_data(one(efs, "launchTemplate:LaunchTemplate")["inputs"]["userData"]))[
            "write_files"
        ]
    }
    assert 'CLIENT="efs-stunnel-apt"' in files["/etc/gpu-cluster/mounts.env"]
    assert files["/usr/local/sbin/gpu-cluster-mounts"] == node_text(mounts_script("efs-stunnel-apt"))


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp", "alicloud"])
def test_used_in_transit_names_the_mount_type_the_catalog_mounts_with(cloud):
    # "used" is data: it must name the encrypting mount type, and the catalog must mount with exactly that
    catalog = storage.load(cloud)
    assert catalog is not None
    for kind, entry in transit_data()["sharedStorage"][cloud].items():
        service = catalog.services[kind]
        fstype, client = service.fstype, service.client["install"]
        if entry["inTransit"] == "used":
            # the encrypting mount type (AZNFS) or the encrypting client (EFS's TLS tunnel): exactly the catalog's
            assert entry.get("fstype", fstype) == fstype and entry.get("client", client) == client, (cloud, kind)
            assert "fstype" in entry or "client" in entry, (cloud, kind)
        else:
            assert fstype != "aznfs" and "tls" not in service.options.split(","), (cloud, kind)
            assert client != "efs-stunnel-apt", (cloud, kind)
