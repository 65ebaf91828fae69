"""GCP conformance (issue 26): every shipped GCP stack and a set of feature-rich configs, their registered inputs
translated into the requests the google-beta provider sends, checked against the discovery documents
google-api-python-client ships (tests/conformance/gcp.py); and the checker itself, fed known-bad requests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.errors import ConfigError

from .conformance import gcp, gcp_rules, gcp_schema, gcp_services
from .conformance.gcp_schema import Request, check_request
from .conftest import gcp_values, plan_stack, plan_values, shipped_stacks

LONG_NAME = "a" * 25 + "-long1"  # the longest cluster name the spec takes (31)
A4 = {"instanceType": "a4-highgpu-8g", "gpu": "B200:8", "zone": "us-central1-b"}
A3MEGA = {"instanceType": "a3-megagpu-8g", "gpu": "H100:8", "nodes": 2, "zone": "us-central1-a"}
FLEET = {"gpu": "L4:2", "instanceType": "g2-standard-24", "nodes": 2, "minNodes": 1, "maxNodes": 12}
FLEET["placement"] = "none"

# Feature-rich configs beside the shipped stacks (GKE with a pool, MIG with scaling, Filestore, Managed Lustre, CMEK,
# Slurm, flex-start, spot), each planned once per session.
FEATURES: dict[str, dict[str, Any]] = {
    "gke-spot-pool": {
        **A3MEGA,
        "instanceType": "a3-ultragpu-8g",
        "gpu": "H200:8",
        "scheduler": "kubernetes",
        "spot": True,
    },
    # GPU sharing: the guest accelerator's gpuPartitionSize (MIG on A3 High's H100s)
    "gke-mig": {
        "gpu": "H100:8",
        "instanceType": "a3-highgpu-8g",
        "scheduler": "kubernetes",
        "kubernetes": {"gpuSharing": {"mode": "mig", "migProfile": "1g.10gb"}},
    },
    "gke-public-l4": {
        "gpu": "L4:1",
        "instanceType": "g2-standard-8",
        "scheduler": "kubernetes",
        "kubernetes": {"publicEndpoint": True, "publicCidrs": ["203.0.113.0/24"]},
    },
    "mig-gpu-utilisation": {
        **FLEET,
        "scaling": {"metric": "gpuUtilization", "target": 70, "scaleInCooldownSeconds": 900},
    },
    "mig-queue-depth": {
        **FLEET,
        "minNodes": 0,
        "nodes": 0,
        "scaling": {"metric": "queueDepth", "target": 4, "queue": "auto"},
    },
    "mig-spot-mix": {**FLEET, "minNodes": 2, "maxNodes": 2, "spot": {"enabled": True, "onDemandBase": 1}},
    # serve: the internal passthrough load balancer on both groups of a spot mix (http), and over tcp
    "mig-serve-http-spot-mix": {
        **FLEET,
        "minNodes": 2,
        "maxNodes": 4,
        "spot": {"enabled": True, "onDemandBase": 1},
        "serve": {"port": 8000},
    },
    "mig-serve-tcp": {**FLEET, "serve": {"port": 9000, "protocol": "tcp"}},
    # serve: the regional external Application Load Balancer (TLS, Cloud Armor, request rate) on a spot mix, and the
    # internal one with a Certificate Manager certificate
    "mig-serve-public-alb": {
        **FLEET,
        "minNodes": 2,
        "maxNodes": 4,
        "spot": {"enabled": True, "onDemandBase": 1},
        "serve": {
            "public": True,
            "certificate": "projects/my-gpu-project/regions/us-central1/sslCertificates/serve",
            "allowedCidrs": ["203.0.113.0/24", "198.51.100.0/24"],
            "requestsPerNode": 4,
        },
    },
    "mig-serve-internal-alb": {
        **FLEET,
        "serve": {"certificate": "projects/my-gpu-project/locations/us-central1/certificates/serve"},
    },
    "mig-serve-request-rate": {**FLEET, "minNodes": 1, "maxNodes": 3, "serve": {"requestsPerNode": 2}},
    "slurm-login": {
        **A3MEGA,
        "scheduler": "slurm",
        "login": {"publicIp": True},
        "network": {"sshCidrs": ["203.0.113.0/24"]},
    },
    "flex-start": {**A4, "nodeGroup": "instances", "gcp": {"flexStart": True}},
    "reservation": {**A4, "reservation": "a4-block"},
    "spot-instances": {"gpu": "L4:1", "instanceType": "g2-standard-8", "nodeGroup": "instances", "spot": True},
    # a budget on the project and the cluster's label, a forecast alert, two email channels
    "budget": {
        "gpu": "L4:1",
        "instanceType": "g2-standard-8",
        "budget": {
            "monthly": 1500.75,
            "forecast": 100,
            "notify": ["ops@example.com", "ml@example.com"],
            "billingAccount": "012345-567890-ABCDEF",
        },
    },
    "long-name-filestore-cmk-slurm": {
        **A3MEGA,
        "name": LONG_NAME,
        "scheduler": "slurm",
        "storage": {"shared": {"kind": "nfs", "sizeGb": 2560}},
        "encryption": {"key": "auto"},
        "login": {"publicIp": True},
        "network": {"sshCidrs": ["203.0.113.0/24"]},
    },
    "long-name-logs-alerts-cmk-slurm": {
        **A3MEGA,
        "name": LONG_NAME,
        "scheduler": "slurm",
        "encryption": {"key": "auto"},
        "monitoring": {"logs": {"enabled": True, "retentionDays": 400}, "notify": ["ops@example.com"]},
    },
    # monitoring.prometheus managed: the nodes' Ops Agent to Managed Service for Prometheus, the rules as alerting
    # policies without channels, the Grafana boards as Cloud Monitoring dashboards; VM mode with no login node
    "managed-prometheus": {**A3MEGA, "monitoring": {"prometheus": "managed"}},
    "long-name-managed-prometheus-slurm": {
        **A3MEGA,
        "name": LONG_NAME,
        "scheduler": "slurm",
        "monitoring": {"prometheus": "managed", "notify": ["ops@example.com"]},
    },
    "long-name-lustre": {**A3MEGA, "name": LONG_NAME, "storage": {"shared": {"kind": "lustre", "sizeGb": 18000}}},
    "long-name-gke": {**A3MEGA, "name": LONG_NAME, "scheduler": "kubernetes"},
}
_PLANNED: dict[str, list[dict[str, Any]]] = {}


def feature(name: str) -> list[dict[str, Any]]:
    if name not in _PLANNED:
        _PLANNED[name] = [r.as_json() for r in plan_values(gcp_values(**FEATURES[name]), f"gcp-{name}").resources]
    return _PLANNED[name]


def shipped(stack: str) -> list[dict[str, Any]]:
    return [r.as_json() for r in plan_stack(stack).resources]


# --- every shipped stack and feature config conforms ---------------------------------------------------------------


@pytest.mark.parametrize("stack", shipped_stacks("gcp"))
def test_shipped_stack_conforms_to_the_documents_the_provider_sends_to(stack):
    report = gcp.check_resources(shipped(stack))
    assert not report.refusals, report.text()
    assert set(report.uncovered) <= set(gcp_services.UNCOVERED), report.uncovered
    assert sum(report.checked.values()) >= 10


@pytest.mark.parametrize("stack", shipped_stacks("gcp"))
def test_shipped_stack_conforms_to_the_ga_documents_too(stack):
    """compute.v1, container.v1, file.v1: nothing the plan sends is a beta-only field."""
    report = gcp.check_resources(shipped(stack), ga=True)
    assert not report.refusals, report.text()


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature_config_conforms(name):
    report = gcp.check_resources(feature(name))
    assert not report.refusals, report.text()
    assert set(report.uncovered) <= set(gcp_services.UNCOVERED), report.uncovered


def test_every_gcp_type_a_plan_registers_is_translated():
    types = {r["type"] for s in shipped_stacks("gcp") for r in shipped(s)} | {
        r["type"] for n in FEATURES for r in feature(n)
    }
    gcp_types = {t for t in types if t.startswith("gcp:")}
    assert gcp_types <= set(gcp_services.TRANSLATORS), gcp_types - set(gcp_services.TRANSLATORS)


def test_a_gke_cluster_named_train_dash_is_refused_before_registration():
    with pytest.raises(ConfigError) as info:
        plan_values(gcp_values(**A3MEGA, scheduler="kubernetes", name="train-"), "gcp-train-")
    errors = getattr(info.value, "errors", [info.value])
    assert any("gpu-cluster:cluster.name" in str(e) for e in errors), errors


def test_a_gke_cluster_named_train_dash_is_refused_by_the_checker():
    cluster = {
        "type": "gcp:container/cluster:Cluster",
        "name": "train--gcp-gke",
        "inputs": {"name": "train-", "location": "us-central1"},
    }
    requests, found = gcp.translate(cluster)
    problems = [m for r in requests for _, m in check_request(r, gcp_rules.apply)]
    assert any(
        "'train-' is not a GKE cluster name" in m and "Must end with a number or a letter" in m for m in problems
    )
    assert not found


def test_the_most_tags_a_gcp_plan_takes_still_fit_the_64_labels_of_every_resource():
    """The layout counts the labels resources add beyond the cluster's (a role; the provider's
    goog-pulumi-provisioned on create): 61 tags planned, and the Slurm head's and the template's bodies then carried
    65 and 66 labels, which GCP refuses (secretmanager.v1 Secret.labels: no more than 64)."""
    base = {**A3MEGA, "scheduler": "slurm", "login": {"publicIp": True}, "network": {"sshCidrs": ["203.0.113.0/24"]}}
    for count in range(64, 0, -1):
        try:
            plan = plan_values(gcp_values(**base, tags={f"t{i}": "v" for i in range(count)}), "gcp-tags")
        except ConfigError as exc:
            errors = getattr(exc, "errors", [exc])
            # the spec refuses first (catalog/tags.yaml counts the provider's label); the layout's check is a backstop
            assert any("gpu-cluster:cluster.tags" in str(e) and "allows 64 per resource" in str(e) for e in errors)
            continue
        break
    report = gcp.check_resources([r.as_json() for r in plan.resources])
    assert not report.refusals, report.text()
    heads = [r for r in plan.resources if r.name.endswith("-head")]
    assert len(heads[0].inputs["labels"]) + 1 == 64  # the most: with the provider's label, exactly GCP's limit


# --- the checker refuses what the documents refuse -----------------------------------------------------------------


def problems(api: str, method: str, params: dict[str, Any], body: dict[str, Any] | None) -> list[tuple[str, str]]:
    return check_request(Request(api, method, params, body, "test"), gcp_rules.apply)


def messages(found: list[tuple[str, str]]) -> str:
    return "\n".join(f"{w}: {m}" for w, m in found)


FIREWALL = {"name": "fw", "network": "global/networks/n", "allowed": [{"IPProtocol": "tcp"}]}


def test_a_conforming_request_passes():
    assert problems("compute.beta", "compute.firewalls.insert", {"project": "my-project"}, FIREWALL) == []


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ({**FIREWALL, "sourceRangez": ["10.0.0.0/8"]}, "body.sourceRangez", "unknown property"),
        (
            {**FIREWALL, "allowed": [{"IPProtocol": "tcp", "portz": ["22"]}]},
            "body.allowed[0].portz",
            "unknown property",
        ),
        ({**FIREWALL, "direction": "SIDEWAYS"}, "body.direction", "is not one of ['EGRESS', 'INGRESS']"),
        ({**FIREWALL, "name": "fw-"}, "body.name", "does not match the pattern"),
        ({**FIREWALL, "name": "f" * 64}, "body.name", "does not match the pattern"),
        ({**FIREWALL, "name": "Fw"}, "body.name", "does not match the pattern"),
        ({**FIREWALL, "priority": "10"}, "body.priority", "expected an integer"),
        ({**FIREWALL, "sourceRanges": "10.0.0.0/8"}, "body.sourceRanges", "expected an array"),
        ({**FIREWALL, "selfLink": "x"}, "body.selfLink", "output only"),
        ({k: v for k, v in FIREWALL.items() if k != "name"}, "body.name", "required by compute.firewalls.insert"),
    ],
)
def test_the_checker_refuses_a_bad_compute_body(body, where, words):
    found = problems("compute.beta", "compute.firewalls.insert", {"project": "my-project"}, body)
    assert any(w == where and words in m for w, m in found), messages(found)


def test_the_checker_refuses_bad_parameters():
    found = problems(
        "compute.beta", "compute.instances.insert", {"project": "p", "zone": "US-central1-a", "bogus": 1}, {}
    )
    assert ("param bogus", "compute.instances.insert has no parameter 'bogus'") in found
    assert any(w == "param zone" and "does not match the pattern" in m for w, m in found)
    assert any(w == "body.name" and "required" in m for w, m in found)
    assert any(
        w == "param project" and "required" in m
        for w, m in problems("compute.beta", "compute.instances.insert", {}, {})
    )


def test_the_checker_refuses_what_compute_states_only_in_prose():
    meta = {"items": [{"key": "startup-script", "value": "x" * 262145}]}
    props = {"machineType": "n1-standard-1", "metadata": meta, "labels": {"Team": "x"}, "tags": {"items": ["Bad_Tag"]}}
    found = problems(
        "compute.beta", "compute.instanceTemplates.insert", {"project": "p"}, {"name": "t", "properties": props}
    )
    text = messages(found)
    assert "at most 262144" in text and "Metadata.items.value" in text
    assert "label key 'Team'" in text
    assert any(w == "body.properties.tags.items[0]" and "does not match the pattern" in m for w, m in found), text
    group = {"name": "g", "baseInstanceName": "b" * 59, "targetSize": 1, "versions": [{"instanceTemplate": "t"}]}
    found = problems("compute.beta", "compute.instanceGroupManagers.insert", {"project": "p", "zone": "z"}, group)
    assert any(w == "body.baseInstanceName" and "does not match" in m for w, m in found), messages(found)


@pytest.mark.parametrize(
    ("cluster", "words"),
    [
        ({"name": "train-"}, "is not a GKE cluster name"),
        ({"name": "a" * 41}, "is not a GKE cluster name"),
        ({"name": "9lives"}, "is not a GKE cluster name"),
        ({"name": "ok", "maintenancePolicy": {"window": {"dailyMaintenanceWindow": {"startTime": "9:00"}}}}, "HH:MM"),
        ({"name": "ok", "nodeConfig": {"metadata": {"kube-env": "x"}}}, "'kube-env' is reserved"),
        ({"name": "ok", "nodeConfig": {"labels": {"bad key!": "v"}}}, "Kubernetes label key 'bad key!'"),
        ({"name": "ok", "releaseChannel": {"channel": "WEEKLY"}}, "is not one of"),
    ],
)
def test_the_checker_refuses_a_bad_gke_cluster(cluster, words):
    found = problems(
        "container.v1beta1",
        "container.projects.locations.clusters.create",
        {"parent": "projects/p/locations/l"},
        {"cluster": cluster},
    )
    assert any(words in m for _, m in found), messages(found)


def test_the_checker_refuses_bad_ids_and_lengths_of_the_other_apis():
    sa = problems(
        "iam.v1",
        "iam.projects.serviceAccounts.create",
        {"name": "projects/p"},
        {"accountId": "abc", "serviceAccount": {"displayName": "x" * 101}},
    )
    assert any("is not a service account id" in m for _, m in sa) and any("at most 100" in m for _, m in sa)
    key = problems(
        "cloudkms.v1",
        "cloudkms.projects.locations.keyRings.cryptoKeys.create",
        {"parent": "projects/p/locations/l/keyRings/r", "cryptoKeyId": "a.b"},
        {"purpose": "ENCRYPT", "rotationPeriod": "3600s"},
    )
    text = messages(key)
    assert "is not a crypto key id" in text and "is not one of" in text
    assert "not between 24 hours and 876,000 hours" in text and "without nextRotationTime" in text
    share = problems(
        "file.v1beta1",
        "file.projects.locations.instances.create",
        {"parent": "projects/p/locations/z", "instanceId": "shared-"},
        {"tier": "BASIC_HDD", "fileShares": [{"name": "a_share_name_of_17"}]},
    )
    text = messages(share)
    assert "is not a Filestore instance id" in text and "1-16 of [a-z0-9_]" in text
    topic = problems(
        "pubsub.v1", "pubsub.projects.topics.create", {"name": "projects/p/topics/goog-queue"}, {"name": "goog-queue"}
    )
    assert any("is not a Pub/Sub topic name" in m for _, m in topic), messages(topic)


def test_a_translator_reports_an_input_it_does_not_know():
    res = {
        "type": "gcp:compute/network:Network",
        "name": "n",
        "inputs": {"autoCreateSubnetworks": False, "newThing": 1},
    }
    _, found = gcp.translate(res)
    assert [(r.where, r.message) for r in found] == [
        ("inputs.newThing", "no translation for this input (tests/conformance)")
    ]


def test_a_generated_name_is_held_to_the_name_rules():
    """Pulumi's autoname (the logical name, '-', 7 hex digits) must fit too: a 60-character logical name does not."""
    res = {"type": "gcp:compute/network:Network", "name": "n" * 60, "inputs": {"autoCreateSubnetworks": False}}
    requests, _ = gcp.translate(res)
    assert requests[0].body is not None and requests[0].body["name"] == "n" * 60 + "-0a1b2c3"
    assert any(w == "body.name" and "pattern" in m for w, m in check_request(requests[0], gcp_rules.apply))


def test_lustre_ids_are_held_to_the_provider_schema_rules():
    res = {
        "type": "gcp:lustre/instance:Instance",
        "name": "l",
        "inputs": {"instanceId": "Shared-", "filesystem": "shared-fs"},
    }
    _, found = gcp.translate(res)
    text = "\n".join(r.message for r in found)
    assert "is not a Managed Lustre instance id" in text and "is not a Managed Lustre filesystem name" in text


def test_every_rule_is_stated_in_the_document_the_provider_sends_to():
    """A rule whose sentence left its document fails here (the rules quote the documents, they do not copy them)."""
    for rule in gcp_rules.RULES:
        gcp_rules.verified(rule, gcp_rules.SENT[rule.api])
    gcp_rules.verified(gcp_rules.LABEL_RULE, gcp_rules.LABEL_RULE.api)
    gcp_rules.verified(gcp_rules.K8S_LABEL_RULE, gcp_rules.SENT["container"])
    for key in gcp_rules.PROVIDER_RULES:
        assert gcp_rules.apply_provider_rule(key, "ok") == []


def test_documents_are_read_once():
    assert gcp_schema.document("compute.beta") is gcp_schema.document("compute.beta")


def test_the_checker_judges_the_budget_and_leaves_its_filter_and_channel_labels_to_their_own_forms():
    """billingbudgets v1: a spend basis outside the enum is refused; the filter's one-value label lists and the email
    channel's configuration labels (email_address) are not resource labels (gcp_rules.NOT_RESOURCE_LABELS)."""
    resources = [dict(r, inputs=dict(r["inputs"])) for r in feature("budget")]
    assert not gcp.check_resources(resources).refusals
    budget = next(r for r in resources if r["type"] == "gcp:billing/budget:Budget")
    budget["inputs"]["thresholdRules"] = [{"thresholdPercent": 0.5, "spendBasis": "SOMETIMES"}]
    text = gcp.check_resources(resources).text()
    assert "body.thresholdRules[0].spendBasis: 'SOMETIMES' is not one of" in text


def test_the_checker_judges_the_log_bucket_sink_and_alert_policies():
    """monitoring.logs and notify: the bucket, the sink and the policies are checked against logging v2 and
    monitoring v3, and a wrong severity or retention type is refused."""
    resources = copy.deepcopy(feature("long-name-logs-alerts-cmk-slurm"))
    report = gcp.check_resources(resources)
    assert not report.refusals, report.text()
    assert report.checked["gcp:logging/projectBucketConfig:ProjectBucketConfig"] == 1
    assert report.checked["gcp:logging/projectSink:ProjectSink"] == 1
    assert report.checked["gcp:monitoring/alertPolicy:AlertPolicy"] == 7
    for r in resources:
        if r["type"].endswith("AlertPolicy"):
            r["inputs"]["severity"] = "LOUD"
        if r["type"].endswith("ProjectBucketConfig"):
            r["inputs"]["retentionDays"] = "forever"
    text = gcp.check_resources(resources).text()
    assert "body.severity: 'LOUD' is not one of" in text
    assert "body.retentionDays: expected an integer" in text
