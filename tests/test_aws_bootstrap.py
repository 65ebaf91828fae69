"""The AWS node bootstrap per fabric kind (rendered user data), fabric usability, self-removal and metrics rules."""

import base64
import gzip
import json
import shlex
import subprocess

import pytest
import yaml

from components import bootstrap, catalog
from components.bootstrap.fabric import FabricUsability
from components.errors import ConfigError, ConfigErrors
from components.layout import aws as aws_layout

from .conftest import aws_values, one, plan_values, resources_of, spec_of

EFA_TYPES = [r.instanceType for r in catalog.load("aws").types if r.fabric == "efa"]
METRIC_PORTS = (9400, 9100)


def user_data(layout: aws_layout.AwsLayout) -> dict:
    """The cloud-config the node reads: Base64 of gzip, under EC2's 16 KB of raw user data."""
    raw = gzip.decompress(base64.b64decode(layout.user_data_b64))
    text = raw.decode()
    assert text == layout.user_data and text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


def files(doc: dict) -> dict[str, str]:
    return {f["path"]: f["content"] for f in doc.get("write_files", [])}


def env_of(content: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in content.splitlines() if line and not line.startswith("#"))
    return {k: json.loads(v) if v.startswith('"') else v for k, v in pairs}


def layout_for(instance_type: str, region: str = "us-east-1", **cluster) -> aws_layout.AwsLayout:
    values = aws_values(**cluster)
    del values["gpu-cluster:cluster"]["gpu"]
    values["gpu-cluster:cluster"]["instanceType"] = instance_type
    if region != "us-east-1":
        values["aws:region"] = region
        del values["gpu-cluster:cluster"]["zone"]
    return aws_layout.plan(spec_of(values))


def sold_layout(instance_type: str) -> aws_layout.AwsLayout:
    """The layout in the first region that sells the type (the catalog's availability data)."""
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        try:
            return layout_for(instance_type, region)
        except ConfigErrors:
            continue
    raise AssertionError(f"{instance_type} is sold in none of the regions tried")


@pytest.mark.parametrize("itype", ["p5.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "g4dn.xlarge"])
def test_user_data_is_compressed_under_16_kb_and_valid_yaml(itype):
    layout = layout_for(itype, gpuPartition="1g.10gb") if itype == "p4d.24xlarge" else layout_for(itype)
    assert len(gzip.decompress(base64.b64decode(layout.user_data_b64))) == len(layout.user_data.encode())
    assert len(base64.b64decode(layout.user_data_b64)) < 16 * 1024
    doc = user_data(layout)
    assert set(doc) == {"write_files", "runcmd"}
    assert all(isinstance(c, list) and all(isinstance(a, str) for a in c) for c in doc["runcmd"])


def test_efa_nodes_get_every_part_in_order_and_the_environment_nccl_needs():
    layout = layout_for("p5.48xlarge")
    doc = user_data(layout)
    got = files(doc)
    units = [c[-1] for c in doc["runcmd"] if c[:2] == ["systemctl", "enable"]]
    assert units == [
        "gpu-cluster-scratch.service",
        "gpu-cluster-efa.service",
        "gpu-cluster-health.service",
        "gpu-cluster-dcgm-exporter.service",
        "gpu-cluster-drain.service",  # with gpu-cluster-interruption.service
    ]
    nccl = env_of(got["/etc/gpu-cluster/nccl.env"])
    assert nccl == {
        "FI_PROVIDER": "efa",
        "FI_EFA_USE_HUGE_PAGE": "0",
        "FI_EFA_USE_DEVICE_RDMA": "1",  # p5: a source sets it for the family
        "NCCL_SOCKET_IFNAME": "^docker,lo,veth",
    }
    efa = env_of(got["/etc/gpu-cluster/efa.env"])
    assert (efa["MIN_LIBFABRIC"], efa["MIN_OFI_NCCL"]) == ("1.18.0", "1.7.0")
    assert "/opt/amazon/ofi-nccl/lib" in efa["PLUGIN_DIRS"].split()
    # GPU nodes that drain get their scripts without comment lines (layout.node.node_parts)
    assert got["/usr/local/sbin/gpu-cluster-efa"] == bootstrap.node_text(bootstrap.script("aws_efa.sh"))
    assert "Before=gpu-cluster-health.service" in got["/etc/systemd/system/gpu-cluster-efa.service"]
    health = env_of(got["/etc/gpu-cluster/health.env"])
    assert (health["FABRIC_KIND"], health["EXPECTED_FABRIC_DEVICES"], health["EXPECTED_GPUS"]) == ("efa", "32", "8")
    assert health["EXPECTED_NVME"] == "8" and "Amazon_EC2_NVMe_Instance_Storage" in health["NVME_GLOBS"]
    assert health["ACTION"] == "replace"
    assert got["/usr/local/sbin/gpu-cluster-unhealthy"] == bootstrap.node_text(bootstrap.script("aws_unhealthy.sh"))


@pytest.mark.parametrize(
    ("itype", "extra"),
    [
        ("p4d.24xlarge", {"FI_EFA_USE_DEVICE_RDMA": "1"}),
        ("p6-b200.48xlarge", {"FI_EFA_USE_DEVICE_RDMA": "1"}),
        ("p5en.48xlarge", {}),  # no source for the family: libfabric >= 1.18 decides itself
        ("g5.48xlarge", {"NCCL_SHM_USE_CUDA_MEMCPY": "1"}),
        ("g6e.48xlarge", {}),
    ],
)
def test_the_nccl_environment_is_per_family(itype, extra):
    nccl = env_of(files(user_data(layout_for(itype)))["/etc/gpu-cluster/nccl.env"])
    base = {"FI_PROVIDER": "efa", "FI_EFA_USE_HUGE_PAGE": "0", "NCCL_SOCKET_IFNAME": "^docker,lo,veth"}
    assert nccl == {**base, **extra}


@pytest.mark.parametrize(("itype", "cluster"), [("g4dn.xlarge", {}), ("p5.48xlarge", {"fabric": "none"})])
def test_without_a_fabric_there_is_no_nccl_environment_and_no_efa_check(itype, cluster):
    layout = layout_for(itype, **cluster)
    got = files(user_data(layout))
    assert "/etc/gpu-cluster/nccl.env" not in got and "/etc/gpu-cluster/efa.env" not in got
    assert env_of(got["/etc/gpu-cluster/health.env"])["FABRIC_KIND"] == "none"
    assert layout.fabric_usability == FabricUsability(False, ("no fabric wired",))


@pytest.mark.parametrize("itype", EFA_TYPES)
def test_every_efa_type_is_usable_on_the_default_image_or_says_why_not(itype):
    usability = sold_layout(itype).fabric_usability
    if itype.startswith("p3dn."):
        # the Base OSS DLAMI's release notes do not list P3dn among its supported instances
        assert not usability.usable and "p3dn is not among the instance types" in usability.missing[0]
    else:
        assert usability.usable, usability.describe()
        assert any("aws-ofi-nccl" in p for p in usability.provides)


def test_a_custom_image_is_not_vouched_for_but_the_default_parameter_is():
    custom = layout_for("p5.48xlarge", image="ami-0123456789abcdef0").fabric_usability
    assert not custom.usable and "cannot vouch for a custom image" in custom.missing[0]
    assert "ami-0123456789abcdef0" in custom.missing[0]
    ssm = "ssm:" + catalog.load("aws").images["default"]["ssmParameter"]
    assert layout_for("p5.48xlarge", image=ssm).fabric_usability.usable
    # the check still runs on a custom image: it reports what it finds
    assert "/etc/gpu-cluster/efa.env" in files(user_data(layout_for("p5.48xlarge", image="ami-0123456789abcdef0")))


@pytest.mark.parametrize(
    ("cluster", "applied"),
    [({}, "cluster"), ({"placement": "spread"}, "spread"), ({"placement": "none"}, "none")],
)
def test_placement_applied_is_what_the_resources_get(cluster, applied):
    layout = layout_for("p5.48xlarge", **cluster)
    assert layout.placement_applied == applied
    assert layout.placement_strategy == (None if applied == "none" else applied)


def test_instances_report_without_a_hook_and_refuse_replace():
    layout = layout_for("p4d.24xlarge", nodeGroup="instances")
    got = files(user_data(layout))
    assert env_of(got["/etc/gpu-cluster/health.env"])["ACTION"] == "report"
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in got and not layout.health_hook
    with pytest.raises(ConfigError) as err:
        layout_for("p4d.24xlarge", nodeGroup="instances", health={"action": "replace"})
    assert err.value.key == "gpu-cluster:cluster.health.action"


def test_health_and_metrics_can_be_switched_off():
    layout = layout_for("p5.48xlarge", health={"enabled": False}, monitoring={"dcgmExporter": False})
    got = files(user_data(layout))
    assert not any("health" in p or "dcgm" in p for p in got)
    assert not layout.health_hook and layout.metrics.endpoints == ()


def test_the_commands_are_valid_shell_words(tmp_path):
    doc = user_data(layout_for("p5.48xlarge"))
    script = "#!/bin/bash\n" + "\n".join(shlex.join(c) for c in doc["runcmd"]) + "\n"
    path = tmp_path / "runcmd.sh"
    path.write_text(script)
    proc = subprocess.run(["shellcheck", "-S", "warning", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# ---- resources ------------------------------------------------------------------------------


def policy_of(plan):
    # the self-removal grant only (the drain hook's grant beside it: tests/test_aws_update.py)
    found = [r for r in resources_of(plan, "iam/rolePolicy:RolePolicy") if r["name"].endswith("-self-removal")]
    return [json.loads(r["inputs"]["policy"]) | {"role": r["inputs"]["role"]} for r in found]


def test_the_node_role_may_mark_unhealthy_only_in_its_own_group(stack_plan):
    h100 = stack_plan("aws-h100")
    (policy,) = policy_of(h100)
    assert policy["role"] == "<autoname:llm-train-aws-node-role>"
    assert policy["Statement"] == [
        {
            "Sid": "SelfRemovalFromOwnGroup",
            "Effect": "Allow",
            "Action": "autoscaling:SetInstanceHealth",
            "Resource": "<arn of llm-train-aws-asg>",
        }
    ]


@pytest.mark.parametrize(
    "cluster",
    [
        {"nodeGroup": "instances"},
        {"health": {"action": "report"}},
        {"health": {"enabled": False}},
        {"identity": {"existing": "ml-nodes"}},
    ],
)
def test_no_self_removal_grant_without_a_group_to_leave_or_a_role_of_ours(cluster):
    plan = plan_values(aws_values(**cluster))
    assert policy_of(plan) == []
    inline = plan.run.outputs["identity"].get("inline", [])
    assert not any(grant["action"] == "autoscaling:SetInstanceHealth" for grant in inline)


def ingress_admits_from_outside(rule: dict, port: int, own_groups: set[str]) -> bool:
    if rule.get("referencedSecurityGroupId") in own_groups:
        return False
    if rule["ipProtocol"] == "-1":
        return True
    return rule["fromPort"] <= port <= rule["toPort"]


@pytest.mark.parametrize(
    "cluster",
    [
        {},
        {"network": {"sshCidrs": ["203.0.113.0/24"], "publicIp": True}, "fabric": "none"},
        {"login": {"publicIp": True}, "network": {"sshCidrs": ["0.0.0.0/0"]}},
        {"network": {"egress": "none"}},
    ],
)
def test_metrics_ports_are_closed_to_the_outside(cluster):
    plan = plan_values(aws_values(**cluster))
    groups = {r["name"]: f"<id of {r['name']}>" for r in resources_of(plan, "ec2/securityGroup:SecurityGroup")}
    node_sg = "<id of test-aws-sg>"
    own = {node_sg, groups.get("test-aws-login-sg", node_sg)}
    for rule in resources_of(plan, "SecurityGroupIngressRule"):
        inputs = rule["inputs"]
        if inputs["securityGroupId"] != node_sg:
            continue
        for port in METRIC_PORTS:
            assert not ingress_admits_from_outside(inputs, port, own), (rule["name"], port)


def test_a_login_node_may_scrape_the_exporters_and_the_plan_says_how():
    plan = plan_values(aws_values(login={}))
    rules = {r["name"]: r["inputs"] for r in resources_of(plan, "SecurityGroupIngressRule")}
    for name, port in (("dcgm-exporter", 9400), ("node-exporter", 9100)):
        rule = rules[f"test-aws-sg-{name}-from-login"]
        assert rule["referencedSecurityGroupId"] == "<id of test-aws-login-sg>"
        assert (rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == ("tcp", port, port)
    metrics = plan.run.outputs["metrics"]
    assert metrics["endpoints"] == [
        {"name": "dcgm-exporter", "port": 9400, "path": "/metrics"},
        {"name": "node-exporter", "port": 9100, "path": "/metrics"},
    ]
    assert "login node" in metrics["scrape"] and "aws ec2 describe-instances" in metrics["scrape"]
    # without a login node no rule names the exporters: the group's self rule already covers node to node
    bare = plan_values(aws_values())
    assert not [r for r in resources_of(bare, "SecurityGroupIngressRule") if "exporter" in r["name"]]
    assert plan_values(aws_values(monitoring={"dcgmExporter": False})).run.outputs["metrics"] == {
        "endpoints": [],
        "scrape": None,
    }


def test_outputs_say_what_placement_the_nodes_get(stack_plan):
    assert stack_plan("aws-h100").run.outputs["placementApplied"] == "cluster"
    # one node keeps a cluster placement group (docs/day2.md "Placement at one node"); the fleet asks for none
    assert stack_plan("aws-dev").run.outputs["placementApplied"] == "cluster"
    assert stack_plan("aws-inference-fleet").run.outputs["placementApplied"] == "none"


def test_the_login_node_gets_none_of_the_node_bootstrap():
    plan = plan_values(aws_values(login={}))
    login = one(plan, "ec2/instance:Instance")
    assert login["name"] == "test-aws-login" and "userData" not in login["inputs"]
