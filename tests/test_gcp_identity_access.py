"""GCP node identity, access (IAP, login node), consumption (reservation-bound, flex-start) and placement kinds:
the pure layout rules, then the inputs registered with the mocks."""

import re

import pytest

from components.errors import ConfigError
from components.layout import gcp as gcp_layout
from components.layout.gcp import identity as gcp_identity

from .conftest import one, plan_values, resources_of
from .test_gcp_resources import firewalls, template
from .test_layout_gcp import gcp_values, layout_of

BASE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/artifactregistry.reader")
A4 = {"instanceType": "a4-highgpu-8g", "gpu": "B200:8"}


# --- consumption (issue 13 item 6) ------------------------------------------------------------


@pytest.mark.parametrize("itype", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_types_not_sold_on_demand_need_reservation_spot_or_flex_start(itype):
    gpu = "H200:8" if itype.startswith("a3") else "B200:8"
    with pytest.raises(ConfigError) as info:
        layout_of(instanceType=itype, gpu=gpu)
    assert info.value.key == "gpu-cluster:cluster.instanceType"
    assert "not sold on demand" in info.value.message and "gcp.flexStart" in info.value.message
    reserved = layout_of(instanceType=itype, gpu=gpu, reservation="block-1")
    assert reserved.scheduling.provisioning_model == "RESERVATION_BOUND"
    assert layout_of(instanceType=itype, gpu=gpu, spot=True).scheduling.provisioning_model == "SPOT"


def test_other_types_keep_standard_with_a_reservation():
    assert layout_of(reservation="block-1").scheduling.provisioning_model == "STANDARD"


def test_flex_start_scheduling():
    sched = layout_of(**A4, nodeGroup="instances", gcp={"flexStart": True}).scheduling
    assert sched == gcp_layout.Scheduling("FLEX_START", False, False, "TERMINATE", "DELETE", 7 * 24 * 3600)


@pytest.mark.parametrize(
    ("cluster", "words"),
    [
        ({"nodeGroup": "instances", "spot": True}, "exclusive"),
        ({"nodeGroup": "instances", "reservation": "block-1"}, "exclusive"),
        ({"nodeGroup": "managed"}, "resize requests"),
        ({"nodeGroup": "instances", "instanceType": None, "gpu": "T4:1", "nodes": 1}, "a2, a3, a4, g2 only"),
        ({"nodeGroup": "instances", "instanceType": "a4x-highgpu-4g", "gpu": "GB200:4"}, "a2, a3, a4, g2 only"),
    ],
)
def test_flex_start_refused_where_it_cannot_apply(cluster, words):
    values = {**A4, **cluster, "gcp": {"flexStart": True}}
    with pytest.raises(ConfigError) as info:
        layout_of(**values)
    assert info.value.key == "gpu-cluster:cluster.gcp.flexStart" and words in info.value.message


# --- identity -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "dev", "a3mega", "a" * 24, "a" * 25, "x" + "-y" * 15])
def test_account_id_is_within_googles_rule(name):
    account = gcp_identity.account_id(name)
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])", account) and 6 <= len(account) <= 30


def test_long_names_keep_distinct_account_ids():
    assert gcp_identity.account_id("a" * 30 + "b") != gcp_identity.account_id("a" * 30 + "c")


def test_identity_roles_read_storage_policies_and_existing():
    assert layout_of().identity.roles == BASE_ROLES
    extra = layout_of(identity={"readStorage": True, "policies": ["roles/pubsub.subscriber"]}).identity
    assert extra.roles == (*BASE_ROLES, "roles/storage.objectViewer", "roles/pubsub.subscriber")
    existing = layout_of(identity={"existing": "trainer@my-project.iam.gserviceaccount.com"}).identity
    assert (existing.account_id, existing.existing) == (None, "trainer@my-project.iam.gserviceaccount.com")


# --- registered resources -----------------------------------------------------------------


@pytest.fixture(scope="module")
def login_plan():
    return plan_values(
        gcp_values(
            nodeGroup="instances",
            login={"publicIp": True},
            network={"sshCidrs": ["203.0.113.0/24"], "publicIp": True},
            identity={"readStorage": True},
        )
    )


def test_service_account_roles_and_template_attachment(stack_plan):
    plan = stack_plan("gcp-a3mega")
    account = one(plan, "serviceaccount/account:Account")
    assert account["inputs"]["accountId"] == "a3mega-nodes"
    members = resources_of(plan, "projects/iAMMember:IAMMember")
    assert sorted(m["inputs"]["role"] for m in members) == sorted(BASE_ROLES)
    assert {m["inputs"]["member"] for m in members} == {"serviceAccount:<email of a3mega-gcp-sa>"}
    assert {m["inputs"]["project"] for m in members} == {"my-gpu-project"}
    assert template(plan)["serviceAccount"] == {"email": "<email of a3mega-gcp-sa>", "scopes": ["cloud-platform"]}
    assert plan.run.outputs["identity"] == {
        "kind": "service-account",
        "name": "<email of a3mega-gcp-sa>",
        "grants": list(BASE_ROLES),
    }


def test_existing_service_account_creates_nothing():
    email = "trainer@my-project.iam.gserviceaccount.com"
    plan = plan_values(gcp_values(identity={"existing": email}))
    assert not resources_of(plan, "Account") and not resources_of(plan, "IAMMember")
    assert template(plan)["serviceAccount"]["email"] == email
    assert plan.run.outputs["identity"]["name"] == email


def test_iap_default_admits_only_iaps_range_and_says_how_to_log_in(stack_plan):
    plan = stack_plan("gcp-a3mega")  # access: auto -> iap
    fw = firewalls(plan)
    ingress_from_outside = {name: rule["sourceRanges"] for name, rule in fw.items() if not name.endswith("-internal")}
    assert ingress_from_outside == {
        "a3mega-gcp-ssh": ["35.235.240.0/20"],
        # Google's health-check probers, to the health endpoint's port only (MIG autohealing)
        "a3mega-gcp-health-check": ["130.211.0.0/22", "35.191.0.0/16"],
    }
    assert fw["a3mega-gcp-health-check"]["allows"] == [{"protocol": "tcp", "ports": ["9500"]}]
    access = plan.run.outputs["access"]
    assert access["method"] == "iap"
    assert access["command"] == (
        "gcloud compute ssh <node name> --zone us-central1-a --project my-gpu-project --tunnel-through-iap"
    )
    assert (
        "labels.gpu-cluster_cluster=a3mega" in access["nodes"] and "networkInterfaces[0].networkIP" in access["nodes"]
    )
    assert access["group"].startswith("gcloud compute instance-groups managed list-instances <autoname:a3mega-gcp-mig>")
    assert access["userRoles"] == ["roles/iap.tunnelResourceAccessor", "roles/compute.osLogin"]


def test_h100_instances_export_private_ips_and_the_first_node_as_target(stack_plan):
    plan = stack_plan("gcp-h100")
    assert plan.run.outputs["privateIps"] == ["<private IP: known after deploy>"] * 2
    assert plan.run.outputs["access"]["command"].startswith("gcloud compute ssh <autoname:h100-gcp-node-0> ")
    # sshCidrs stay on the nodes without a login node; access iap adds IAP's range
    assert firewalls(plan)["h100-gcp-ssh"]["sourceRanges"] == ["203.0.113.0/24", "35.235.240.0/20"]


def test_login_node_takes_the_public_ip_and_the_ssh_cidrs(login_plan):
    login = one(login_plan, "compute/instance:Instance")["inputs"]
    assert login["machineType"] == "e2-standard-2"
    assert login["networkInterfaces"] == [{"subnetwork": "<id of test-gcp-nodes>", "accessConfigs": [{}]}]
    assert login["serviceAccount"] == {"email": "<email of test-gcp-sa>", "scopes": ["cloud-platform"]}
    assert (
        login["bootDisk"]["initializeParams"]["image"]
        == "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"
    )
    metadata = dict(login["metadata"])
    # monitoring.prometheus auto is selfHosted with a login node: its only part (docs/monitoring.md)
    assert "gpu-cluster-monitoring.service" in metadata.pop("startup-script")
    assert metadata == {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
    assert login["tags"] == ["test-login"] and login["labels"]["gpu-cluster_role"] == "login"
    fw = firewalls(login_plan)
    assert fw["test-gcp-login-ssh"]["sourceRanges"] == ["203.0.113.0/24"]
    assert fw["test-gcp-login-ssh"]["targetTags"] == ["test-login"]
    assert fw["test-gcp-ssh"]["sourceRanges"] == ["35.235.240.0/20"]  # the nodes: IAP only
    # the nodes lose their public IP to the login node
    assert all("accessConfigs" not in n for n in template(login_plan)["networkInterfaces"])
    assert any("login node exists" in w for w in login_plan.run.warnings)
    access = login_plan.run.outputs["access"]
    assert access["command"].startswith("gcloud compute ssh <autoname:test-gcp-login> ")
    assert "NOT labels.gpu-cluster_role:login" in access["nodes"]
    roles = {m["inputs"]["role"] for m in resources_of(login_plan, "IAMMember")}
    assert "roles/storage.objectViewer" in roles


def test_a4_reservation_is_reservation_bound_in_the_template():
    plan = plan_values(gcp_values(**A4, reservation="a4-block", zone="us-central1-b"))
    tpl = template(plan)
    assert tpl["scheduling"]["provisioningModel"] == "RESERVATION_BOUND"
    assert tpl["reservationAffinity"]["type"] == "SPECIFIC_RESERVATION"


def test_flex_start_template():
    plan = plan_values(gcp_values(**A4, nodeGroup="instances", gcp={"flexStart": True}, zone="us-central1-b"))
    sched = template(plan)["scheduling"]
    assert sched["provisioningModel"] == "FLEX_START" and sched["instanceTerminationAction"] == "DELETE"
    assert sched["maxRunDuration"] == {"seconds": 604800} and sched["automaticRestart"] is False


def test_mig_workload_policy_on_the_group_not_the_template(stack_plan):
    plan = stack_plan("gcp-a3mega")
    policy = one(plan, "compute/resourcePolicy:ResourcePolicy")["inputs"]
    assert policy["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"} and "groupPlacementPolicy" not in policy
    mig = one(plan, "InstanceGroupManager")["inputs"]
    assert mig["resourcePolicies"] == {"workloadPolicy": "<self link of a3mega-gcp-placement>"}
    assert "resourcePolicies" not in template(plan)
    assert template(plan)["scheduling"]["automaticRestart"] is True  # no COLLOCATED policy on a MIG


def test_instances_keep_a_compact_policy_with_automatic_restart_off(stack_plan):
    plan = stack_plan("gcp-h100")
    policy = one(plan, "compute/resourcePolicy:ResourcePolicy")["inputs"]
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "vmCount": 2}
    assert template(plan)["resourcePolicies"] == "<self link of h100-gcp-placement>"
    assert template(plan)["scheduling"]["automaticRestart"] is False


def test_diff_warns_when_a_deployed_mig_moves_from_compact_to_workload_policy(stack_plan):
    """gcp-a3mega as deployed before: a COLLOCATED policy on the template, none on the MIG."""
    import copy
    import json

    from components.diff import diff_plans

    new = json.loads(json.dumps(stack_plan("gcp-a3mega").as_json(), default=str))
    old = copy.deepcopy(new)
    for res in old["resources"]:
        inputs = res["inputs"]
        if res["type"].endswith("ResourcePolicy"):
            inputs.pop("workloadPolicy")
            inputs["groupPlacementPolicy"] = {"collocation": "COLLOCATED", "vmCount": 2}
        elif res["type"].endswith("InstanceTemplate"):
            inputs["resourcePolicies"] = "<self link of a3mega-gcp-placement>"
        elif res["type"].endswith("InstanceGroupManager"):
            inputs.pop("resourcePolicies")
    diff = diff_plans(old, new)
    warnings = "\n".join(diff.warnings)
    assert "replaces gcp:compute/resourcePolicy:ResourcePolicy `a3mega-gcp-placement`" in warnings
    assert "replaces gcp:compute/instanceTemplate:InstanceTemplate `a3mega-gcp-template`" in warnings
    assert "a3mega-gcp-mig" in warnings  # the group is flagged too (resourcePolicies: may replace)


def test_placement_max_distance_sets_the_policy_and_tightens_the_cap():
    import pytest

    from components.errors import ConfigError

    from .conftest import plan_values

    values = {
        "gpu-cluster:cloud": "gcp",
        "gcp:project": "p",
        "gcp:region": "us-central1",
        "gpu-cluster:cluster": {
            "gpu": "H100:8",
            "nodes": 4,
            "zone": "us-central1-a",
            "nodeGroup": "instances",
            "gcp": {"placementMaxDistance": 2},
        },
    }
    plan = plan_values(values)
    policy = next(r for r in plan.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"]["maxDistance"] == 2
    values["gpu-cluster:cluster"]["gcp"] = {"placementMaxDistance": 1}
    values["gpu-cluster:cluster"]["nodes"] = 23
    with pytest.raises(ConfigError) as info:
        plan_values(values)
    assert "at most 22" in str(info.value)
