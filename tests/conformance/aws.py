"""AWS conformance: every AWS resource a plan registers, translated into the API requests the provider makes for it,
each judged against botocore's service model (`aws_api.validate`).

pulumi-aws bridges the Terraform AWS provider: the registered inputs (camelCase) are the Terraform arguments
(snake_case), and the provider's create function builds the request. Each translator below follows one of those
functions; `TF` paths are in hashicorp/terraform-provider-aws (internal/service/...). The Pulumi-side parts are
pulumi/pulumi-aws `provider/resources.go` (which names Pulumi generates: `AutoName(field, maxLength, "-")`, default
255 through `setAutonaming` in `provider/autonaming.go`) and pulumi-terraform-bridge `pkg/tfbridge/info/autonaming.go`
(`<logical name>-<7 random hex>`, refused when longer than the maximum).

Every input of a translated resource must be read by its translator or declared provider-side only (`Inputs.skip`,
with the reason): a new input shows up as `untranslated`, never silently unchecked; a type without a translator too
(tests/test_conformance_aws.py also requires one for every pulumi_aws class components/aws/ constructs).

Not covered, and why:
- aws_iam_policy, aws_cloudwatch_metric_alarm, aws_ssm_*, aws_security_group_rule: no config registers them (target
  tracking creates its alarms server-side; SSM is only read, through the getParameter invoke; the rules are
  aws_vpc_security_group_{ingress,egress}_rule). Invokes (getParameter, getAvailabilityZones, getCallerIdentity,
  getPartition, getSessionContext) are reads whose answers the mocks give; they are not judged.
- What the models do not state: quotas (VPCs, Elastic IPs, vCPUs per region), whether a type is offered in the zone,
  what an AMI allows (its root device name and snapshot size: the root volume's device name stays a placeholder),
  the 10,240-character inline-policy total per role (an inline policy's document is judged: aws_iam.py), the union
  of an Auto Scaling group's propagated tags with the launch template's instance tags, SQS attributes left at the
  provider's defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.plan import Plan

from . import aws_elbv2, aws_observability, aws_services  # noqa: F401  (register the other services' translators)
from .aws_api import Refusal, Request, validate
from .aws_translate import TRANSLATORS

__all__ = ["NOT_AWS_REQUESTS", "Report", "check_plan", "check_resources", "covered_types"]

# Registered types that make no AWS API request (the reason is the value).
NOT_AWS_REQUESTS: dict[str, str] = {
    "gpu-cluster:index:GpuCluster": "this project's component resource: no provider call",
    "gpu-cluster:aws:Cluster": "this project's component resource: no provider call",
    "pulumi:providers:kubernetes": "a Pulumi provider instance (the EKS kubeconfig): no AWS call",
    "kubernetes:helm.sh/v3:Release": "a Helm release applied to the cluster through the Kubernetes API, not AWS",
    "random:index/randomBytes:RandomBytes": "generated locally by pulumi-random: no AWS call",
    "random:index/randomPassword:RandomPassword": "generated locally by pulumi-random: no AWS call",
    # monitoring.grafanaAdmins: the data source and dashboards go to the Amazon Managed Grafana workspace's own
    # Grafana HTTP API with the service account token (pulumiverse-grafana), not to an AWS API
    "pulumi:providers:grafana": "a Pulumi provider instance (the workspace's URL and token): no AWS call",
    "grafana:oss/dataSource:DataSource": "Grafana's HTTP API inside the Amazon Managed Grafana workspace, not AWS",
    "grafana:oss/dashboard:Dashboard": "Grafana's HTTP API inside the Amazon Managed Grafana workspace, not AWS",
}


@dataclass
class Report:
    requests: list[Request] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)  # inputs no translator reads, or types none covers

    @property
    def ok(self) -> bool:
        return not self.refusals and not self.untranslated

    def lines(self) -> list[str]:
        return [str(r) for r in self.refusals] + self.untranslated


def covered_types() -> set[str]:
    return set(TRANSLATORS)


def check_resources(resources: list[dict[str, Any]]) -> Report:
    """`resources` as `Plan.as_json()["resources"]` lists them."""
    report = Report()
    for resource in resources:
        kind = resource["type"]
        if kind in NOT_AWS_REQUESTS:
            continue
        translator: Callable[..., Any] | None = TRANSLATORS.get(kind)
        if translator is None:
            report.untranslated.append(f"{resource['urn']}: no translation for {kind} (tests/conformance/aws.py)")
            continue
        translated = translator(resource)
        report.requests += translated.requests
        report.refusals += translated.problems
        report.untranslated += [f"{resource['urn']}: input {path} is not translated" for path in translated.unread]
        for request in translated.requests:
            report.refusals += validate(request)
    return report


def check_plan(plan: Plan) -> Report:
    return check_resources([r.as_json() for r in plan.resources])
