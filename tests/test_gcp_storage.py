"""GCP storage.shared as registered with Pulumi's mocks: Managed Lustre on the host VPC, private services access."""

from __future__ import annotations

import copy
import shutil
import subprocess
from dataclasses import replace

import pytest

from components.bootstrap.mounts import SOURCE_PLACEHOLDER
from components.catalog import storage
from components.diff import diff_plans
from components.errors import ConfigErrors

from .conftest import gcp_values, one, plan_json, plan_values, spec_of

KEY = "gpu-cluster:cluster.storage.shared"
LUSTRE = "gcp:lustre/instance:Instance"


@pytest.fixture(scope="module")
def a3mega(stack_plan):
    return stack_plan("gcp-a3mega")


def test_managed_lustre_on_the_host_vpc_in_the_nodes_zone(a3mega):
    fs = one(a3mega, "lustre/instance:Instance")
    inputs = fs["inputs"]
    assert inputs == {
        **inputs,
        "capacityGib": "18000",
        "perUnitStorageThroughput": "1000",
        "filesystem": "shared",
        "location": "us-central1-a",
        "network": "<id of a3mega-gcp-host>",
        "instanceId": "a3mega-shared",
    }
    assert fs["protect"] is True and fs["retainOnDelete"] is True


def test_private_services_access_on_the_host_vpc(a3mega):
    psa = one(a3mega, "compute/globalAddress:GlobalAddress")["inputs"]
    assert psa == {**psa, "purpose": "VPC_PEERING", "addressType": "INTERNAL", "prefixLength": 24}
    assert psa["network"] == "<id of a3mega-gcp-host>"
    conn = one(a3mega, "servicenetworking/connection:Connection")["inputs"]
    assert conn["service"] == "servicenetworking.googleapis.com" and conn["reservedPeeringRanges"] == [psa["name"]]


def test_no_firewall_rule_is_opened_for_it():
    def firewalls(values):
        return sorted(r.name for r in plan_values(values).resources if r.type == "gcp:compute/firewall:Firewall")

    assert firewalls(gcp_values(storage={"shared": {}})) == firewalls(gcp_values())


def test_startup_script_mounts_it_and_is_shellcheck_clean(a3mega, tmp_path):
    template = one(a3mega, "compute/instanceTemplate:InstanceTemplate")["inputs"]
    script = template["metadata"]["startup-script"]
    assert 'MOUNT_SOURCE="<ip address of a3mega-gcp-shared>@tcp:/shared"' in script
    assert 'CLIENT="gcp-lustre-apt"' in script and "lustre-client-ubuntu-{codename}" in script
    assert 'EXPECTED_MOUNTS="/shared"' in script and SOURCE_PLACEHOLDER not in script
    if shutil.which("shellcheck"):
        path = tmp_path / "startup.sh"
        path.write_text(script)
        proc = subprocess.run(["shellcheck", "-S", "warning", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def test_summary_and_outputs(a3mega):
    s = a3mega.summary()["sharedStorage"]
    assert (s["kind"], s["sizeGb"], s["throughput"], s["resource"]) == ("lustre", 18000, 1000, "a3mega-gcp-shared")
    assert a3mega.run.outputs["sharedFilesystem"]["mount"] == "<ip address of a3mega-gcp-shared>@tcp:/shared"


@pytest.mark.parametrize(
    ("cfg", "fragment"),
    [
        ({"sizeGb": 10000}, "multiples of 9000 up to 954000 GiB (nearest: 9000 or 18000)"),
        ({"sizeGb": 18000, "throughput": 125}, "multiples of 72000 up to 7632000 GiB"),
        ({"sizeGb": 2000000, "throughput": 1000}, "up to 954000 GiB"),
    ],
)
def test_a_size_off_the_tier_is_refused_with_the_allowed_sizes(cfg, fragment):
    with pytest.raises(ConfigErrors) as info:
        spec_of(gcp_values(storage={"shared": cfg}))
    assert fragment in {e.key: e.message for e in info.value.errors}[f"{KEY}.sizeGb"]


def test_lustre_where_the_region_has_none_is_refused(monkeypatch):
    data = storage.load("gcp")
    assert data is not None
    complete = replace(data.services["lustre"], regions=("europe-west4",), regions_complete=True)
    monkeypatch.setattr(storage, "load", lambda cloud: replace(data, services={"lustre": complete}))
    with pytest.raises(ConfigErrors) as info:
        spec_of(gcp_values(storage={"shared": {"kind": "lustre"}}))
    message = {e.key: e.message for e in info.value.errors}[f"{KEY}.kind"]
    assert "not offered in us-central1" in message and "europe-west4" in message


def test_a_region_the_partial_list_misses_is_not_refused():
    assert spec_of(gcp_values(storage={"shared": {}})).storage.shared is not None  # us-central1: not listed


def test_a_tier_change_replaces_the_instance_first_as_data_loss():
    old = plan_json(plan_values(gcp_values(storage={"shared": {}})))
    new = copy.deepcopy(old)
    fs = next(r for r in new["resources"] if r["type"] == LUSTRE)
    fs["inputs"]["perUnitStorageThroughput"] = "500"
    first = diff_plans(old, new).warnings[0]
    assert first.startswith(f"DATA LOSS: replaces {LUSTRE} `test-gcp-shared`, the shared filesystem (9,000 GiB")


def test_nfs_is_filestore_zonal_peered_to_the_host_vpc():
    plan = plan_values(gcp_values(storage={"shared": {"kind": "nfs", "sizeGb": 2560}}))
    fs = one(plan, "filestore/instance:Instance")
    inputs = fs["inputs"]
    assert inputs["tier"] == "ZONAL" and inputs["fileShares"] == {"capacityGb": 2560, "name": "shared"}
    assert inputs["networks"] == [
        {"connectMode": "DIRECT_PEERING", "network": "<autoname:test-gcp-host>", "modes": ["MODE_IPV4"]}
    ]
    assert fs["protect"] is True and inputs["location"] == "us-central1-a"
    script = one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["metadata"]["startup-script"]
    assert 'MOUNT_SOURCE="<ip address of test-gcp-shared>:/shared"' in script and 'MOUNT_FSTYPE="nfs"' in script


@pytest.mark.parametrize(("size", "ok"), [(1024, True), (1280, True), (9984, True), (10000, False), (12800, True)])
def test_filestore_sizes_follow_the_zonal_ranges(size, ok):
    values = gcp_values(storage={"shared": {"kind": "nfs", "sizeGb": size}})
    if ok:
        assert spec_of(values).storage.shared is not None
        return
    with pytest.raises(ConfigErrors) as info:
        spec_of(values)
    message = {e.key: e.message for e in info.value.errors}[f"{KEY}.sizeGb"]
    assert "1024 to 9984 in steps of 256, 10240 to 102400 in steps of 2560" in message and "9984 or 10240" in message
