"""The spec's rules, pinned where mutation testing found them loose (README "Mutation testing").

Pure: `build_spec` on in-memory values, no plan. Messages are matched against the parts a user needs
(what was given, what is allowed, the consequence), anchored at both ends, not copied whole.
"""

from __future__ import annotations

import base64
import re

import pytest

from components.errors import ConfigError, Finding
from components.spec import build_spec, rsa_bits

from .conftest import aws_values, spec_of

C = "gpu-cluster:cluster"
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@example"


def wire(*fields: bytes) -> str:
    return base64.b64encode(b"".join(len(f).to_bytes(4, "big") + f for f in fields)).decode()


def rsa_key(bits: int) -> str:
    modulus = (1 << (bits - 1)) | 1
    return "ssh-rsa " + wire(b"ssh-rsa", b"\x01\x00\x01", b"\x00" + modulus.to_bytes(bits // 8, "big")) + " x@y"


def azure_values(**cluster):
    base = {"gpu": "H100:8", "nodes": 2, "sshPublicKey": ED25519, **cluster}
    return {"gpu-cluster:cloud": "azure", "azure-native:location": "eastus", C: base}


def gcp_values(**cluster):
    base = {"gpu": "H100:8", "instanceType": "a3-megagpu-8g", "nodes": 2, "zone": "us-central1-a", **cluster}
    return {"gpu-cluster:cloud": "gcp", "gcp:project": "my-project", "gcp:region": "us-central1", C: base}


def error_of(values) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build_spec(values, "test")
    errors = list(getattr(info.value, "errors", [info.value]))
    assert len(errors) == 1, errors
    return errors[0]


def findings(values, key: str) -> list[Finding]:
    return [f for f in spec_of(values).findings if f.key == f"{C}.{key}"]


def one_finding(values, key: str, level: str, pattern: str) -> None:
    """Exactly one finding under `key` says `pattern`, at `level` (other findings may share the key)."""
    found = [f for f in findings(values, key) if re.fullmatch(pattern, f.message)]
    assert len(found) == 1, findings(values, key)
    assert found[0].level == level


# rsa_bits -----------------------------------------------------------------------------------------


def test_a_key_with_characters_outside_base64_is_unreadable():
    good = rsa_key(2048)
    kind, blob, comment = good.split()
    assert rsa_bits(good) == 2048
    assert rsa_bits(f"{kind} {blob[:40]}*{blob[40:]} {comment}") is None


def test_a_blob_of_another_key_type_is_not_an_rsa_key():
    dss = "ssh-dss " + wire(b"ssh-dss", b"\x00\xcb" * 64, b"\x00\xe1" * 10, b"\x02" * 64, b"\x03" * 64)
    assert rsa_bits(dss) is None
    assert rsa_bits("ssh-rsa " + wire(b"ssh-rsa", b"\x01\x00\x01", b"")) is None


# login keys and admin names (_check_login_user) --------------------------------------------------


def test_azure_refuses_a_short_rsa_key_and_takes_one_of_the_minimum_size():
    error = error_of(azure_values(sshPublicKey=rsa_key(1024)))
    assert error.key == f"{C}.sshPublicKey"
    assert re.fullmatch(r"a 1024-bit RSA key; azure needs at least 2048 bits \(.+\)", error.message), error.message
    assert spec_of(azure_values(sshPublicKey=rsa_key(2048))).ssh_public_key == rsa_key(2048)
    assert spec_of(azure_values(sshPublicKey=ED25519)).ssh_public_key == ED25519


def test_aws_sets_no_rsa_minimum_but_refuses_an_unreadable_rsa_key():
    assert spec_of(aws_values(sshPublicKey=rsa_key(1024))).ssh_public_key == rsa_key(1024)
    error = error_of(aws_values(sshPublicKey="ssh-rsa AAAA x@y"))
    assert error.key == f"{C}.sshPublicKey"
    assert re.fullmatch(r"an unreadable RSA key; aws needs at least 1024 bits \(.+\)", error.message), error.message


def test_a_refused_key_type_names_the_type_and_the_clouds_list():
    ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9 x"
    error = error_of(azure_values(sshPublicKey=ecdsa))
    assert error.key == f"{C}.sshPublicKey"
    assert re.fullmatch(r"a ecdsa-sha2-nistp256 key, but azure accepts only ssh-rsa, ssh-ed25519 \(.+\)", error.message)


@pytest.mark.parametrize("name", ["admin", "administrator"])  # the schema already refuses capitals
def test_azure_refuses_its_reserved_admin_names_in_any_case(name):
    error = error_of(azure_values(adminUser=name))
    assert error.key == f"{C}.adminUser"
    assert re.fullmatch(rf"'{name}' is an admin name azure refuses; pick another \(.+\)", error.message)


# access, identity and login (_check_access) ------------------------------------------------------


def test_an_unknown_access_method_lists_what_the_cloud_offers():
    error = error_of(aws_values(access="iap"))  # a method of another cloud
    assert error.key == f"{C}.access"
    assert error.message == "got 'iap'; aws offers: auto (ssm), ssm, ssh, none"


def test_identity_errors_show_the_value_given():
    error = error_of(aws_values(identity={"policies": ["AmazonS3ReadOnlyAccess"]}))
    assert re.fullmatch(r"got 'AmazonS3ReadOnlyAccess'; expected an IAM managed policy ARN .+", error.message)
    error = error_of(aws_values(identity={"existing": "a b"}))
    assert re.fullmatch(r"got 'a b'; expected the name of an existing IAM instance profile", error.message)


def test_ssh_with_no_allowed_source_warns_that_port_22_is_closed():
    one_finding(
        aws_values(access="ssh", sshPublicKey=ED25519),
        "access",
        "warning",
        r"ssh, but network\.sshCidrs is empty: no address may reach port 22",
    )


def test_ssh_from_allowed_sources_needs_a_public_ip_somewhere():
    cidrs = {"sshCidrs": ["203.0.113.0/24"]}
    one_finding(
        aws_values(access="ssh", sshPublicKey=ED25519, network=cidrs),
        "access",
        "warning",
        r"ssh from network\.sshCidrs, but neither the nodes nor a login node have a public IP: "
        r"no working login path \(use access: auto, or login: \{publicIp: true\}\)",
    )
    assert findings(aws_values(access="ssh", sshPublicKey=ED25519, network={**cidrs, "publicIp": True}), "access") == []
    with_login = aws_values(access="ssh", sshPublicKey=ED25519, network=cidrs, login={"publicIp": True})
    assert findings(with_login, "access") == [] and findings(with_login, "login.publicIp") == []


def test_ssh_without_a_key_warns_except_on_gcp():
    cidrs = {"sshCidrs": ["203.0.113.0/24"], "publicIp": True}
    one_finding(aws_values(access="ssh", network=cidrs), "sshPublicKey", "warning", r"not set, but access is ssh: .+")
    assert findings(aws_values(access="ssh", network=cidrs, sshPublicKey=ED25519), "sshPublicKey") == []
    assert findings(gcp_values(access="ssh", network=cidrs), "sshPublicKey") == []  # OS Login


def test_access_none_without_a_login_node_says_nobody_can_log_in():
    one_finding(aws_values(access="none"), "access", "info", r"none: the plan builds no way to log in to the nodes")
    assert findings(aws_values(access="none", login={}), "access") == []
    assert findings(aws_values(), "access") == []  # ssm


def test_a_public_login_node_without_allowed_sources_is_closed():
    one_finding(
        aws_values(login={"publicIp": True}),
        "login.publicIp",
        "warning",
        r"true, but network\.sshCidrs is empty: the login node is closed",
    )
    assert findings(aws_values(), "login.publicIp") == []
    assert (
        findings(aws_values(login={"publicIp": True}, network={"sshCidrs": ["203.0.113.0/24"]}), "login.publicIp") == []
    )


# placement (_placement) -------------------------------------------------------------------------


def test_auto_placement_with_a_reservation_resolves_to_none_and_says_why():
    values = aws_values(reservation="cr-0123456789abcdef0")
    assert spec_of(values).placement == "none"
    one_finding(
        values, "placement", "info", r"auto resolves to none with a reservation: .+ \(aws-parallelcluster#4215\)"
    )


def test_auto_placement_on_one_node_with_the_fabric_wired_is_cluster_because_of_the_fabric():
    values = aws_values(nodes=1)
    assert spec_of(values).placement == "cluster"
    one_finding(values, "placement", "info", r"auto resolves to cluster \(the fabric is wired\)")
    one_finding(aws_values(nodes=2), "placement", "info", r"auto resolves to cluster \(maxNodes > 1\)")


def test_auto_placement_on_one_node_without_a_fabric_is_cluster_so_the_cluster_shrinks_and_grows_in_place():
    # docs/day2.md "Placement at one node": every cloud's group takes one member, so the count does not decide
    for values in (aws_values(gpu="T4:1", nodes=1), aws_values(nodes=1, fabric="none")):
        assert spec_of(values).placement == "cluster"
        one_finding(
            values,
            "placement",
            "info",
            r"auto resolves to cluster \(also at one node: the group keeps the node when the cluster shrinks to one "
            r"and grows back\)",
        )


def ali_values(**cluster):
    base = {"instanceType": "ecs.gn7e-c16g1.32xlarge", "nodes": 2, "nodeGroup": "instances", "zone": "cn-beijing-l"}
    return {
        "gpu-cluster:cloud": "alicloud",
        "alicloud:region": "cn-beijing",
        "gpu-cluster:cluster": {**base, **cluster},
    }


def tencent_values(**cluster):
    base = {"instanceType": "GN7.2XLARGE32", "nodes": 2, "nodeGroup": "instances", "zone": "ap-shanghai-2"}
    return {
        "gpu-cluster:cloud": "tencentcloud",
        "tencentcloud:region": "ap-shanghai",
        "gpu-cluster:cluster": {**base, **cluster},
    }


@pytest.mark.parametrize(("values", "cloud"), [(ali_values, "alicloud"), (tencent_values, "tencentcloud")])
@pytest.mark.parametrize("nodes", [1, 2])
def test_auto_placement_for_spot_where_the_cloud_places_no_spot_nodes_is_none_and_says_why(values, cloud, nodes):
    spot = values(spot=True, nodes=nodes)
    assert spec_of(spot).placement == "none"
    one_finding(
        spot,
        "placement",
        "info",
        rf"auto resolves to none for spot nodes: {cloud} places no spot nodes in a placement group "
        r"\(catalog/capabilities spotWithPlacement\)",
    )
    assert spec_of(values(nodes=nodes)).placement == "cluster"  # on demand: placed, at one node too


def gcp_one(**cluster):
    base = {"gpu": None, "instanceType": "a3-megagpu-8g", "nodes": 1, "zone": "us-central1-a"}
    return {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "my-project",
        "gcp:region": "us-central1",
        "gpu-cluster:cluster": {**base, **cluster},
    }


def test_auto_placement_on_one_gcp_vm_is_none_only_where_it_would_be_a_compact_policy():
    # a compact (COLLOCATED) policy fixes its vmCount: a count change recreates it anyway (updates.yaml)
    for values in (gcp_one(nodeGroup="instances"), gcp_one(instanceType="g2-standard-4", gpu="L4:1", fabric="none")):
        assert spec_of(values).placement == "none"
        one_finding(
            values,
            "placement",
            "info",
            r"auto resolves to none at one node: \S+ would get a compact placement policy, which fixes its VM count "
            r"\(vmCount\), so a count change recreates it and the nodes anyway; one VM has no neighbour",
        )
    # a MIG's workload policy and a GKE pool's COMPACT placement take no count: kept at one node
    assert spec_of(gcp_one(nodeGroup="managed")).placement == "cluster"
    assert spec_of(gcp_one(scheduler="kubernetes")).placement == "cluster"
    assert spec_of(gcp_one(instanceType="g2-standard-4", gpu="L4:1", fabric="none", nodes=2)).placement == "cluster"


def test_a_cluster_placement_with_a_reservation_warns():
    one_finding(
        aws_values(placement="cluster", reservation="cr-0123456789abcdef0"),
        "placement",
        "warning",
        r"a reservation with a cluster placement group may fail for capacity; prefer placement: auto",
    )
    assert findings(aws_values(placement="spread", nodes=1, reservation="cr-0123456789abcdef0"), "placement") == []


def test_a_wired_fabric_without_cluster_placement_warns_on_several_nodes_only():
    one_finding(
        aws_values(placement="spread"),
        "placement",
        "warning",
        r"efa is wired but placement is spread: fabric latency and bandwidth between nodes are not guaranteed",
    )
    assert findings(aws_values(placement="spread", nodes=1), "placement") == []
    assert findings(aws_values(placement="cluster"), "placement") == []


# the cross-field rules (CROSS_RULES) ---------------------------------------------------------------


def test_fabric_none_on_several_nodes_warns_of_the_unused_fabric():
    one_finding(
        aws_values(fabric="none"),
        "fabric",
        "warning",
        r"none: p5\.48xlarge has 3200 Gb/s of efa that multi-node training will not use",
    )
    assert findings(aws_values(fabric="none", nodes=1), "fabric") == []
    assert findings(aws_values(fabric="none", nodes=1, maxNodes=2), "fabric") != []
    assert findings(aws_values(), "fabric") == []


def test_node_count_rules_for_fixed_instances():
    error = error_of(aws_values(nodeGroup="instances", nodes=0))
    assert error.key == f"{C}.nodes"
    assert re.fullmatch(r"0 with nodeGroup: instances creates nothing; .+ nodeGroup: managed", error.message)
    error = error_of(aws_values(nodeGroup="instances", nodes=2, maxNodes=3))
    assert error.key == f"{C}.maxNodes"
    assert re.fullmatch(r"only applies to nodeGroup: managed \(instances are a fixed count\)", error.message)
    assert spec_of(aws_values(nodeGroup="instances", nodes=2, maxNodes=2)).max_nodes == 2
    assert spec_of(aws_values(nodeGroup="instances", nodes=2)).max_nodes == 2


def test_capacity_rules():
    error = error_of(aws_values(spot=True, reservation="cr-0123456789abcdef0"))
    assert error.key == f"{C}.reservation"
    assert re.fullmatch(r"a reservation and spot are exclusive; set one of them", error.message)
    block = aws_values(reservationType="capacity-block", reservation="cr-0123456789abcdef0")
    assert spec_of(block).reservation_type == "capacity-block"
    error = error_of(aws_values(reservationType="capacity-block"))
    assert error.key == f"{C}.reservationType"
    assert re.fullmatch(r"capacity-block needs cloud aws and a reservation id", error.message)
    one_finding(
        aws_values(spot=True),
        "spot",
        "info",
        r"spot nodes can be reclaimed at any time; cost shows the on-demand price as an upper bound",
    )
    assert findings(aws_values(), "spot") == []  # no spot, no spot notes


def test_network_warnings():
    one_finding(
        aws_values(network={"sshCidrs": ["0.0.0.0/0", "10.1.0.0/16", "8.0.0.0/7"]}),
        "network.sshCidrs",
        "warning",
        r"0\.0\.0\.0/0, 8\.0\.0\.0/7 opens SSH to much of the internet",
    )
    assert findings(aws_values(network={"sshCidrs": ["203.0.113.0/24"]}), "network.sshCidrs") == []
    one_finding(
        aws_values(network={"egress": "none"}),
        "network.egress",
        "warning",
        r"none: nodes cannot reach package mirrors or container registries",
    )
    assert findings(aws_values(), "network.egress") == []
    assert findings(aws_values(network={"egress": "none", "publicIp": True}), "network.egress") == []
    assert findings(aws_values(network={"egress": "none"}, image="ami-0123456789abcdef0"), "network.egress") == []


def test_a_cidr_prefix_error_names_the_cloud():
    error = error_of(aws_values(network={"cidr": "10.0.0.0/8"}))
    assert error.key == f"{C}.network.cidr"
    assert re.fullmatch(r"got 10\.0\.0\.0/8; aws needs a prefix between /\d+ and /\d+", error.message)


def test_tag_limits_are_inclusive():
    # EC2's Tag.Key takes at most 127 characters, the services' values 256 (catalog/tags.yaml)
    assert spec_of(aws_values(tags={"k" * 127: "v" * 256})).tags["k" * 127] == "v" * 256
    allowed = (
        r"aws takes keys of 1-127 and values of at most 256 characters: letters, spaces, digits and "
        r"_ \. : / = \+ - @; keys not starting with 'aws:' \(catalog/tags\.yaml\)"
    )
    cases = {
        "k" * 128: ({"k" * 128: "v"}, r"the key has 128 characters \(at most 127\)"),
        "k": ({"k": "v" * 257}, r"the value has 257 characters \(at most 256\)"),
        "": ({"": "v"}, "the key is empty"),
        "AWS:team": ({"AWS:team": "x"}, "the key starts with 'aws:', reserved by aws"),
    }
    for key, (tags, why) in cases.items():
        error = error_of(aws_values(tags=tags))
        assert error.key == f"{C}.tags.{key}"
        assert re.fullmatch(f"{why}; {allowed}", error.message), error.message


def test_gpu_partition_needs_a_mig_gpu_and_one_of_its_profiles():
    assert spec_of(aws_values(gpuPartition="3g.40gb")).gpu_partition == ("3g.40gb", 2)
    error = error_of(aws_values(gpu=None, instanceType="g4dn.xlarge", nodes=1, gpuPartition="1g.10gb"))
    assert error.key == f"{C}.gpuPartition"
    assert error.message == "T4 GPUs of g4dn.xlarge have no MIG partitioning"
    error = error_of(aws_values(gpuPartition="8g.90gb"))
    assert error.key == f"{C}.gpuPartition"
    assert re.fullmatch(
        r"got '8g\.90gb'; H100 takes 1g\.10gb, 1g\.20gb, .*7g\.80gb \(NVIDIA MIG User Guide\)", error.message
    ), error.message
