"""What mutation testing of components/layout/aws/ (plan, proof, fabric) found unpinned (README "Mutation testing").

Pure layout calls only (no Pulumi): the NIC wiring counted from launch-template inputs, the decisions `plan`
takes (public IP with several interfaces, image, market, placement, metrics, what the bootstrap gets) and
the EFA enablement (NCCL environment, the boot check's settings and unit, whether NCCL can use the fabric).
Expected values come from the capabilities and catalog files, the sources the layout reads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components import bootstrap, catalog
from components.bootstrap.fabric import FabricUsability
from components.errors import ConfigError
from components.layout import aws as aws_layout
from components.layout.aws import access as aws_access
from components.layout.aws import fabric as aws_fabric
from components.layout.aws import identity as aws_identity

from .conftest import ROOT, aws_values, spec_of

LT = "aws:ec2/launchTemplate:LaunchTemplate"
EFA = yaml.safe_load((ROOT / "components/catalog/capabilities/aws.yaml").read_text())["efa"]
DEFAULT_IMAGE = catalog.load("aws").images["default"]
BASE_ENV = {"FI_PROVIDER": "efa", "FI_EFA_USE_HUGE_PAGE": "0", "NCCL_SOCKET_IFNAME": "^docker,lo,veth"}


def layout_of(**cluster: Any) -> aws_layout.AwsLayout:
    return aws_layout.plan(spec_of(aws_values(**cluster)))


def typed(instance_type: str, **cluster: Any) -> aws_layout.AwsLayout:
    values = aws_values(**cluster)
    del values["gpu-cluster:cluster"]["gpu"]
    values["gpu-cluster:cluster"]["instanceType"] = instance_type
    return aws_layout.plan(spec_of(values))


def files(layout: aws_layout.AwsLayout) -> dict[str, str]:
    doc = yaml.safe_load(layout.user_data.removeprefix("#cloud-config\n"))
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def env_of(content: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in content.splitlines() if line and not line.startswith("#"))
    return {k: json.loads(v) if v.startswith('"') else v for k, v in pairs}


def nics(*kinds: str) -> dict[str, Any]:
    return {"type": LT, "inputs": {"networkInterfaces": [{"interfaceType": k} for k in kinds]}}


# count_wired_gbps: the plan's proof of the wiring, read from launch-template inputs


def test_wired_gbps_counts_efa_interfaces_of_the_widest_launch_template_only():
    resources = [
        nics("interface", "efa-only"),
        {"type": "aws:ec2/instance:Instance", "inputs": {"networkInterfaces": [{"interfaceType": "efa"}] * 9}},
        nics("interface", "efa-only", "efa-only", "efa"),  # the widest: 3 EFA
        nics("efa-only", "interface"),
        {"type": LT, "inputs": {}},
        {"type": LT, "inputs": {"networkInterfaces": None}},
        {"type": LT, "inputs": {"networkInterfaces": [{}]}},
    ]
    assert aws_layout.count_wired_gbps(resources, 100.0) == 300.0
    assert aws_layout.count_wired_gbps(resources[4:], 100.0) == 0
    assert aws_layout.count_wired_gbps([], 400.0) == 0
    assert aws_layout.count_wired_gbps([nics("efa")], 400.0) == 400.0
    assert aws_layout.count_wired_gbps([nics("interface")], 400.0) == 0


def test_wired_gbps_of_a_planned_template_is_the_layouts_own():
    layout = typed("p4d.24xlarge")
    recorded = [
        nics(*(n.interface_type for n in layout.interfaces)),
        {"type": "aws:ec2/securityGroup:SecurityGroup", "inputs": {}},
    ]
    assert aws_layout.count_wired_gbps(recorded, 100.0) == 400.0 == layout.fabric_gbps_wired


def test_no_card_wires_only_the_primary_interface():
    assert aws_layout.efa_interfaces(0, 4) == (aws_layout.NetworkInterface(0, 0, "interface"),)
    assert aws_layout.efa_interfaces(2, 2) == (
        aws_layout.NetworkInterface(0, 0, "interface"),
        aws_layout.NetworkInterface(0, 1, "efa-only"),
        aws_layout.NetworkInterface(1, 0, "efa-only"),
    )


# plan: the public IP rule


def test_a_public_ip_is_refused_with_one_efa_too_and_the_message_names_every_way_in():
    with pytest.raises(ConfigError) as info:
        typed("g5.48xlarge", network={"publicIp": True})  # one EFA: two interfaces
    message = info.value.message
    assert message.startswith("true, but g5.48xlarge with EFA has 2 network interfaces")
    for words in (
        "AWS assigns public IPs only to single-interface instances",
        "reach the nodes through SSM (access: auto, the default)",
        "a login node with a public IP (login: {publicIp: true})",
        "or set fabric: none",
    ):
        assert words in message


def test_a_single_interface_node_may_have_a_public_ip():
    layout = typed("g4dn.xlarge", network={"publicIp": True})
    assert layout.interfaces == (aws_layout.NetworkInterface(0, 0, "interface"),)
    assert layout.spec.network.public_ip is True
    assert layout_of(fabric="none", network={"publicIp": True}).efa_count == 0


# plan: image, market, placement and the rest of the layout


def test_the_image_description_names_the_image_it_uses():
    # auto: the catalog's pinned release, by exact name and owner (issue 28); latest: the SSM parameter, tracking
    auto = layout_of()
    pinned = aws_layout.Image(
        None, None, DEFAULT_IMAGE["description"], DEFAULT_IMAGE["release"], str(DEFAULT_IMAGE["owner"])
    )
    assert auto.image == pinned
    latest = layout_of(image="latest").image
    assert latest == aws_layout.Image(DEFAULT_IMAGE["ssmParameter"], None, DEFAULT_IMAGE["description"])
    via_ssm = layout_of(image="ssm:/my/ami").image
    assert via_ssm.description.endswith(" /my/ami") and "ssm:" not in via_ssm.description
    explicit = layout_of(image="ami-0123456789abcdef0").image
    assert "ami-0123456789abcdef0" in explicit.description and explicit.description != DEFAULT_IMAGE["description"]


def test_on_demand_without_spot_or_a_block_and_a_plain_reservation_stays_on_demand():
    assert layout_of().market == "on-demand"
    reserved = layout_of(reservation="cr-0123456789abcdef0")
    assert (reserved.market, reserved.capacity_reservation_id) == ("on-demand", "cr-0123456789abcdef0")
    assert layout_of().capacity_reservation_id is None


@pytest.mark.parametrize("placement", ["cluster", "spread", "none"])
def test_placement_asked_is_placement_applied(placement):
    layout = layout_of(placement=placement)
    assert layout.placement_applied == placement
    assert layout.placement_strategy == (None if placement == "none" else placement)


def test_the_layout_carries_the_network_disks_tags_identity_and_access_of_the_spec():
    layout = layout_of(name="train", network={"cidr": "10.8.0.0/20"}, storage={"rootGb": 321})
    spec = layout.spec
    assert layout.vpc_cidr == "10.8.0.0/20"
    assert layout.root_gb == 321
    assert layout.tags == {**spec.base_tags, "Name": "train"} and "Name" not in spec.base_tags
    assert layout.identity == aws_identity.node_identity(spec) and layout.identity.policies
    assert layout.access == aws_access.access_plan(spec) and layout.access.method == "ssm"
    assert layout.fabric_usability.usable is True
    assert layout.shared is None and layout.shared_note is None


def test_metrics_endpoints_only_with_the_exporter_and_the_login_node_scrapes_only_then():
    plain = layout_of()
    assert plain.metrics.endpoints and all(isinstance(port, int) for _, port, _ in plain.metrics.endpoints)
    assert 9400 in {port for _, port, _ in plain.metrics.endpoints}
    assert plain.metrics.from_login is False
    assert layout_of(login={}).metrics.from_login is True
    off = layout_of(login={}, monitoring={"dcgmExporter": False})
    assert (off.metrics.endpoints, off.metrics.from_login) == ((), False)


def test_health_check_gets_the_efa_count_and_nvme_globs_only_with_nvme_scratch():
    health = env_of(files(typed("p4d.24xlarge"))["/etc/gpu-cluster/health.env"])
    assert health["EXPECTED_FABRIC_DEVICES"] == "4"
    assert "Amazon_EC2_NVMe_Instance_Storage" in health["NVME_GLOBS"]
    disk = env_of(files(layout_of(storage={"scratch": "disk", "scratchGb": 500}))["/etc/gpu-cluster/health.env"])
    assert "Amazon_EC2_NVMe_Instance_Storage" not in disk.get("NVME_GLOBS", "")
    assert disk.get("EXPECTED_NVME", "0") == "0"


def test_the_unhealthy_hook_only_on_a_managed_group_that_replaces():
    managed = layout_of()
    assert managed.health_hook is True
    # a GPU node gets its scripts without comment lines (bootstrap.node_text: EC2's 16 KB of user data)
    assert files(managed)["/usr/local/sbin/gpu-cluster-unhealthy"] == bootstrap.node_text(
        bootstrap.script("aws_unhealthy.sh")
    )
    instances = layout_of(nodeGroup="instances")
    assert instances.health_hook is False
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in files(instances)


def test_shared_storage_is_mounted_and_efa_enabled_only_on_an_efa_node():
    efa = layout_of(storage={"shared": {"sizeGb": 4800, "throughput": 1000}})
    assert efa.shared is not None and efa.shared.efa is True and efa.shared_note is None
    assert env_of(files(efa)["/etc/gpu-cluster/mounts.env"])["MOUNT_PATH"] == "/shared"
    one_efa = typed("g5.48xlarge", storage={"shared": {"sizeGb": 4800, "throughput": 1000}})
    assert one_efa.shared is not None and one_efa.shared.efa is True
    for tcp in (
        typed("g4dn.xlarge", storage={"shared": {"sizeGb": 4800, "throughput": 1000}}),
        layout_of(fabric="none", storage={"shared": {"sizeGb": 4800, "throughput": 1000}}),  # an EFA type, unwired
    ):
        assert tcp.shared is not None and tcp.shared.efa is False and tcp.shared_note is None
    note = layout_of(storage={"shared": {"sizeGb": 4800, "throughput": 250}})
    assert note.shared is not None and note.shared.efa is False and note.shared_note


# the EFA environment and enablement


def test_instance_family_is_the_type_before_its_first_dot():
    assert aws_fabric.instance_family("p6-b200.48xlarge") == "p6-b200"
    assert aws_fabric.instance_family("p5en.48xlarge") == "p5en"
    assert aws_fabric.instance_family("x.y.z") == "x"


def test_nccl_env_is_the_base_plus_the_familys_with_both_sources():
    env, source = aws_fabric.nccl_env("p5.48xlarge")
    assert env == {**BASE_ENV, "FI_EFA_USE_DEVICE_RDMA": "1"}
    assert source == f"{EFA['envSource']}; {EFA['families']['p5']['source']}"
    env, source = aws_fabric.nccl_env("g6e.48xlarge")  # a family without extra variables
    assert (env, source) == (BASE_ENV, EFA["envSource"])


def test_the_nccl_env_file_says_where_it_comes_from():
    content = files(typed("g5.48xlarge"))["/etc/gpu-cluster/nccl.env"]
    assert EFA["envSource"] in content and EFA["families"]["g5"]["source"] in content
    assert env_of(content) == {**BASE_ENV, "NCCL_SHM_USE_CUDA_MEMCPY": "1"}


def test_the_efa_check_gets_the_capabilities_paths_and_minimums_and_runs_before_health():
    got = files(layout_of())
    assert env_of(got["/etc/gpu-cluster/efa.env"]) == {
        "EFA_DIR": EFA["efaDir"],
        "INSTALLED_PACKAGES": EFA["installedPackages"],
        "PLUGIN_DIRS": " ".join(EFA["pluginDirs"]),
        "PLUGIN_LIBRARIES": " ".join(EFA["pluginLibraries"]),
        "MIN_LIBFABRIC": EFA["minimum"]["libfabric"],
        "MIN_OFI_NCCL": EFA["minimum"]["awsOfiNccl"],
        "RESULT": "/var/lib/gpu-cluster/efa.json",
    }
    assert got["/usr/local/sbin/gpu-cluster-efa"] == bootstrap.node_text(bootstrap.script("aws_efa.sh"))
    unit = got["/etc/systemd/system/gpu-cluster-efa.service"].splitlines()
    assert unit[1].startswith("Description=gpu-cluster EFA check (libfabric efa provider, aws-ofi-nccl")
    assert {"Wants=network-online.target", "After=network-online.target"} <= set(unit)
    assert "Before=gpu-cluster-health.service" in unit
    assert "ExecStart=/usr/local/sbin/gpu-cluster-efa" in unit


def test_efa_enablement_parts_and_usability():
    spec = layout_of().spec
    parts, usability = aws_fabric.efa_enablement(spec, 32)
    assert [p.name for p in parts][1] == "efa"
    assert "/var/lib/gpu-cluster/efa.json" in parts[1].summary
    assert usability == aws_fabric.efa_usability(spec, 32) and usability.usable
    assert aws_fabric.efa_enablement(spec, 0) == ((), FabricUsability(False, ("no fabric wired",)))


def test_usable_on_the_default_image_names_what_it_provides():
    usable = aws_fabric.efa_usability(layout_of().spec, 32)
    assert usable.usable is True and usable.missing == ()
    for item in DEFAULT_IMAGE["efa"]["provides"]:
        assert f"{item} from the image, verified at boot" in usable.provides
    assert "NCCL environment in /etc/gpu-cluster/nccl.env" in usable.provides  # the file the bootstrap writes
    assert "/etc/gpu-cluster/nccl.env" in files(layout_of())


def test_a_custom_image_is_not_usable_and_says_what_is_needed():
    custom = aws_fabric.efa_usability(layout_of(image="ami-0123456789abcdef0").spec, 32)
    assert custom.usable is False and custom.provides == () and len(custom.missing) == 1
    assert custom.missing[0].startswith("EFA software on ami-0123456789abcdef0: the catalog cannot vouch")
    assert custom.missing[0].endswith(
        "(libfabric with the efa provider and aws-ofi-nccl are needed; "
        "the boot check gpu-cluster-efa reports what it finds)"
    )


def test_a_family_the_image_does_not_support_is_not_usable():
    values = aws_values(gpu=None, instanceType="p3dn.24xlarge")
    values["aws:region"] = "us-west-2"
    del values["gpu-cluster:cluster"]["zone"]
    spec = spec_of(values)
    got = aws_fabric.efa_usability(spec, 1)
    assert got.usable is False and got.provides == ()
    image = DEFAULT_IMAGE["description"]
    assert got.missing == (f"p3dn is not among the instance types {image} supports (its release notes)",)


def test_the_default_image_is_vouched_for_by_parameter_with_or_without_the_ssm_prefix():
    param = DEFAULT_IMAGE["ssmParameter"]
    vouches = aws_fabric._default_image_vouches
    assert vouches(layout_of().spec) == (True, DEFAULT_IMAGE["description"])
    assert vouches(layout_of(image=f"ssm:{param}").spec) == (True, DEFAULT_IMAGE["description"])
    assert vouches(layout_of(image="ssm:/my/ami").spec) == (False, "ssm:/my/ami")
    assert vouches(layout_of(image="ami-0123456789abcdef0").spec) == (False, "ami-0123456789abcdef0")
