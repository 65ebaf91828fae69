"""GCP customer-managed keys as registered with Pulumi's mocks: the cluster's Cloud KMS key (encryption.key auto) or
the key named, its grants to the service agents, and its use on every disk and filesystem the stack creates."""

from __future__ import annotations

import copy

import pytest

from components.contract import contract
from components.diff import diff_plans
from components.errors import ConfigError, ConfigErrors
from components.layout.gcp import GcpEncryption

from .conftest import gcp_values, one, plan_json, plan_stack, plan_values, resources_of, spec_of

KEY_ID = "<id of test-gcp-key>"
GIVEN = "projects/sec-project/locations/us-central1/keyRings/gpu/cryptoKeys/disks"
ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
NUMBER = "<project number: known at deploy>"


def grants(plan):
    return {g["name"]: g["inputs"] for g in resources_of(plan, "kms/cryptoKeyIAMMember:CryptoKeyIAMMember")}


@pytest.fixture(scope="module")
def auto():
    """Every disk and filesystem: scratch on a persistent disk, Filestore, a login node, a Slurm head."""
    return plan_values(
        gcp_values(
            encryption={"key": "auto"},
            scheduler="slurm",
            storage={"shared": {"kind": "nfs", "sizeGb": 2560}, "scratch": "disk"},
            login={"publicIp": True},
            network={"cidr": "10.60.0.0/16", "sshCidrs": ["203.0.113.0/24"]},
        )
    )


def test_auto_creates_one_protected_key_ring_and_key_with_rotation(auto):
    ring = one(auto, "kms/keyRing:KeyRing")
    assert ring["inputs"] == {**ring["inputs"], "location": "us-central1", "project": "my-gpu-project"}
    key = one(auto, "kms/cryptoKey:CryptoKey")
    assert key["inputs"] == {
        **key["inputs"],
        "keyRing": "<id of test-gcp-keyring>",
        "purpose": "ENCRYPT_DECRYPT",
        "rotationPeriod": "7776000s",  # 90 days
        "destroyScheduledDuration": "2592000s",
    }
    for r in (ring, key):
        assert r["protect"] is True and r["retainOnDelete"] is True


def test_the_service_agents_may_use_the_key(auto):
    got = grants(auto)
    assert set(got) == {"test-gcp-key-compute", "test-gcp-key-filestore"}
    assert got["test-gcp-key-compute"] == {
        "cryptoKeyId": KEY_ID,
        "role": ROLE,
        "member": f"serviceAccount:service-{NUMBER}@compute-system.iam.gserviceaccount.com",
    }
    assert (
        got["test-gcp-key-filestore"]["member"]
        == f"serviceAccount:service-{NUMBER}@cloud-filer.iam.gserviceaccount.com"
    )
    assert got["test-gcp-key-filestore"]["role"] == ROLE


def test_every_disk_and_filesystem_uses_the_key(auto):
    disks = one(auto, "compute/instanceTemplate:InstanceTemplate")["inputs"]["disks"]
    assert len(disks) == 2  # boot and scratch
    assert all(d["diskEncryptionKey"] == {"kmsKeySelfLink": KEY_ID} for d in disks)
    instances = {i["name"]: i["inputs"] for i in resources_of(auto, "compute/instance:Instance")}
    assert set(instances) == {"test-gcp-login", "test-gcp-head"}
    assert all(i["bootDisk"]["kmsKeySelfLink"] == KEY_ID for i in instances.values())
    assert one(auto, "filestore/instance:Instance")["inputs"]["kmsKeyName"] == KEY_ID
    assert auto.as_json()["outputs"]["encryption"] == {
        "key": KEY_ID,
        "created": True,
        "rotationPeriod": "7776000s",
        "grantedTo": ["compute", "filestore"],
    }


def test_managed_lustre_takes_the_key_and_its_agent_is_granted():
    plan = plan_values(gcp_values(encryption={"key": "auto"}, storage={"shared": {"kind": "lustre"}}))
    assert one(plan, "lustre/instance:Instance")["inputs"]["kmsKey"] == KEY_ID
    assert grants(plan)["test-gcp-key-lustre"]["member"] == (
        f"serviceAccount:service-{NUMBER}@gcp-sa-lustre.iam.gserviceaccount.com"
    )


def test_a_key_given_is_used_as_given_and_none_is_created():
    plan = plan_values(gcp_values(encryption={"key": GIVEN}, nodeGroup="instances", nodes=2, fabric="none"))
    assert not resources_of(plan, "kms/keyRing:KeyRing") and not resources_of(plan, "kms/cryptoKey:CryptoKey")
    disks = one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["disks"]
    assert disks and all(d["diskEncryptionKey"] == {"kmsKeySelfLink": GIVEN} for d in disks)
    assert grants(plan)["test-gcp-key-compute"]["cryptoKeyId"] == GIVEN
    assert plan.as_json()["outputs"]["encryption"]["created"] is False


def test_local_ssd_scratch_cannot_take_the_key_and_the_plan_says_so():
    plan = plan_stack("gcp-h100-cmk")
    assert any(w.startswith("encryption.key: local SSD scratch") for w in plan.warnings())
    disks = one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["disks"]
    assert [d["diskEncryptionKey"] for d in disks] == [{"kmsKeySelfLink": "<id of h100cmk-gcp-key>"}]


def test_gke_uses_the_one_key_for_secrets_and_node_boot_disks():
    plan = plan_values(
        gcp_values(
            gpu="H100:8",
            instanceType="a3-megagpu-8g",
            nodes=2,
            scheduler="kubernetes",
            encryption={"key": "auto"},
            network={"cidr": "10.61.0.0/16"},
        )
    )
    assert len(resources_of(plan, "kms/cryptoKey:CryptoKey")) == 1  # not the GKE engineer's second key
    cluster = one(plan, "container/cluster:Cluster")["inputs"]
    assert cluster["databaseEncryption"] == {"state": "ENCRYPTED", "keyName": KEY_ID}
    pools = resources_of(plan, "container/nodePool:NodePool")
    assert pools and all(p["inputs"]["nodeConfig"]["bootDiskKmsKey"] == KEY_ID for p in pools)
    got = grants(plan)
    assert got["test-gcp-key-gke"]["member"] == (
        f"serviceAccount:service-{NUMBER}@container-engine-robot.iam.gserviceaccount.com"
    )
    assert "test-gcp-key-compute" in got


def test_deleting_the_key_is_data_loss_first():
    old = plan_json(plan_stack("gcp-h100-cmk"))
    new = copy.deepcopy(old)
    new["resources"] = [r for r in new["resources"] if r["type"] != "gcp:kms/cryptoKey:CryptoKey"]
    first = diff_plans(old, new).warnings[0]
    assert first.startswith("DATA LOSS: deletes gcp:kms/cryptoKey:CryptoKey `h100cmk-gcp-key`")


def test_replacing_the_key_is_data_loss():
    old = plan_json(plan_stack("gcp-h100-cmk"))
    new = copy.deepcopy(old)
    key = next(r for r in new["resources"] if r["type"] == "gcp:kms/cryptoKey:CryptoKey")
    key["inputs"]["destroyScheduledDuration"] = "86400s"
    warnings = diff_plans(old, new).warnings
    # the key and what it encrypts (Filestore names the key's id) are both reported as lost, before anything else
    assert any(w.startswith("DATA LOSS: replaces gcp:kms/cryptoKey:CryptoKey `h100cmk-gcp-key`") for w in warnings)
    assert warnings[0].startswith("DATA LOSS: replaces gcp:filestore/instance:Instance `h100cmk-gcp-shared`")


def test_provider_registers_no_key_and_names_none():
    plan = plan_values(gcp_values(encryption={"key": "provider"}, storage={"shared": {"kind": "nfs"}}))
    assert not resources_of(plan, "kms/")
    disks = one(plan, "compute/instanceTemplate:InstanceTemplate")["inputs"]["disks"]
    assert all("diskEncryptionKey" not in d for d in disks)
    assert "kmsKeyName" not in one(plan, "filestore/instance:Instance")["inputs"]
    assert "encryption" not in plan.as_json()["outputs"]


def test_a_malformed_key_name_is_refused_by_key():
    with pytest.raises(ConfigErrors) as info:
        spec_of(gcp_values(encryption={"key": "projects/p/keyRings/r/cryptoKeys/k"}))
    assert "gpu-cluster:cluster.encryption.key" in {e.key for e in info.value.errors}


def test_the_key_is_planned_in_the_layout():
    # plan() decides the key (a field of the layout); components/gcp only reads it, it no longer calls key_plan
    spec = spec_of(gcp_values(encryption={"key": GIVEN}, storage={"shared": {"kind": "nfs"}}))
    enc = contract("gcp").plan(spec).encryption
    assert isinstance(enc, GcpEncryption)
    assert (enc.auto, enc.key_name, enc.location) == (False, GIVEN, spec.region)
    assert [who for who, _ in enc.agents] == ["compute", "filestore"]
    assert contract("gcp").plan(spec_of(gcp_values(encryption={"key": "provider"}))).encryption is None


def test_a_refused_config_with_a_key_registers_nothing(constructed):
    """A config the GCP layout refuses (storage.shared with scheduler kubernetes), key given: no resource of the
    program (not even the GpuCluster component) is constructed, the runtime's Stack root aside. Counted at
    pulumi.Resource construction under the plan's mocks."""
    values = {"encryption": {"key": "auto"}, "gpu": "H100:8", "network": {"cidr": "10.61.0.0/16"}}
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        plan_values(gcp_values(**values, scheduler="kubernetes", storage={"shared": {"kind": "nfs"}}))
    assert "gpu-cluster:cluster.storage.shared" in str(info.value)
    assert constructed == []
    # the count sees what a plan registers: the same cluster without the refused key registers the key and more
    plan_values(gcp_values(**values, scheduler="kubernetes"))
    assert any(c.startswith("gcp:kms/cryptoKey:CryptoKey ") for c in constructed)
