"""`budget:`: the spec's checks (one keyed line per problem, all at once), the budget each cloud registers with the
mocks (amount, currency, thresholds, filter, emails), the clouds that refuse it from capabilities data, and the plan
summary's budget beside the monthly total with its over-budget warning."""

from __future__ import annotations

import pytest

from components.catalog.capabilities import capability_data
from components.diff import diff_plans
from components.errors import ConfigErrors
from components.plan.render import budget_text
from components.spec import build_spec

from .conftest import one, plan_json, plan_stack, plan_stack_with, resources_of

EMAILS = ["ops@example.com", "ml-team@example.org"]
ACCOUNT = "012345-567890-ABCDEF"
K = "gpu-cluster:cluster.budget"


def values(cloud: str, **budget: object) -> dict[str, object]:
    base = {
        "aws": {"aws:region": "us-east-1", "cluster": {"gpu": "T4:1", "zone": "us-east-1a"}},
        "gcp": {"gcp:project": "ml-project", "gcp:region": "us-central1",
                "cluster": {"instanceType": "g2-standard-4", "zone": "us-central1-a"}},
        "azure": {"azure-native:location": "eastus", "cluster": {"instanceType": "Standard_NC4as_T4_v3"}},
        "alicloud": {"alicloud:region": "cn-beijing",
                     "cluster": {"instanceType": "ecs.gn6i-c4g1.xlarge", "zone": "cn-beijing-h"}},
        "tencentcloud": {"tencentcloud:region": "ap-guangzhou",
                         "cluster": {"instanceType": "GN7.2XLARGE32", "zone": "ap-guangzhou-6",
                                     "nodeGroup": "instances"}},
    }[cloud]  # fmt: skip
    cluster = {**base["cluster"], "budget": budget}
    return {"gpu-cluster:cloud": cloud, **{k: v for k, v in base.items() if k != "cluster"},
            "gpu-cluster:cluster": cluster}  # fmt: skip


def errors_of(vals: dict[str, object]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigErrors) as info:
        build_spec(vals, "test")
    return [(e.key, e.message) for e in info.value.errors]


# --- the spec ----------------------------------------------------------------------------------------------------


def test_defaults_and_the_currency_source():
    spec = build_spec(values("aws", monthly=1000, notify=EMAILS[:1]), "t")
    assert spec.budget is not None
    assert (spec.budget.currency, spec.budget.thresholds, spec.budget.forecast) == ("USD", (50, 80, 100), None)
    assert spec.budget.currency_source.startswith("the default on aws: AWS Budgets")
    given = build_spec(values("aws", monthly=1000, currency="USD", notify=EMAILS[:1]), "t")
    assert given.budget is not None and given.budget.currency_source == "given"


def test_every_bad_value_is_one_keyed_line_all_at_once():
    got = errors_of(
        values(
            "aws",
            monthly=-5,
            currency="CNY",
            thresholds=[0, 80, 1001],
            forecast=2000,
            notify=["ops@example.com", "not-an-email", "a@b"],
            billingAccount=ACCOUNT,
        )
    )
    assert [k for k, _ in got] == [
        f"{K}.monthly",
        f"{K}.currency",
        f"{K}.thresholds[0]",
        f"{K}.thresholds[2]",
        f"{K}.forecast",
        f"{K}.notify[1]",
        f"{K}.notify[2]",
        f"{K}.billingAccount",
    ]
    messages = dict(got)
    assert messages[f"{K}.monthly"] == "got -5; a positive amount per month"
    assert "aws bills in USD" in messages[f"{K}.currency"]
    assert messages[f"{K}.thresholds[2]"] == "got 1001; percent of the amount, 1 to 1000"


def test_no_one_to_notify_is_refused():
    assert errors_of(values("azure", monthly=10)) == [
        (f"{K}.notify", "no one to alert; give at least one email address")
    ]


def test_gcp_needs_its_billing_account_and_its_form():
    assert [k for k, _ in errors_of(values("gcp", monthly=10, notify=EMAILS))] == [f"{K}.billingAccount"]
    assert [k for k, _ in errors_of(values("gcp", monthly=10, notify=EMAILS, billingAccount="acct-1"))] == [
        f"{K}.billingAccount"
    ]
    assert build_spec(values("gcp", monthly=10, notify=EMAILS, billingAccount=ACCOUNT), "t").budget is not None


def test_the_clouds_limits_come_from_their_data():
    # Azure: five notifications per budget; GCP: five email channels per budget
    azure = errors_of(values("azure", monthly=10, thresholds=[10, 20, 30, 40, 50], forecast=100, notify=EMAILS))
    assert [k for k, _ in azure] == [f"{K}.thresholds"]
    assert "at most 5" in azure[0][1]
    six = [f"u{i}@example.com" for i in range(6)]
    gcp = errors_of(values("gcp", monthly=10, notify=six, billingAccount=ACCOUNT))
    assert [k for k, _ in gcp] == [f"{K}.notify"]
    assert "at most 5" in gcp[0][1]


@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_a_cloud_without_a_built_budget_refuses_it_with_the_reason(cloud):
    got = errors_of(values(cloud, monthly=1000, notify=EMAILS))
    assert len(got) == 1 and got[0][0] == K
    why = " ".join(capability_data(cloud)["budget"]["why"].split())
    assert got[0][1] == f"not built on {cloud}: {why}"


# --- the resources -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def aws():
    return plan_stack_with("aws-dev", budget={"monthly": 1234.5, "forecast": 90, "notify": EMAILS})


def test_aws_budget_counts_the_clusters_tag_and_emails_each_threshold(aws):
    budget = one(aws, "budgets/budget:Budget")
    inputs = budget["inputs"]
    assert (inputs["name"], inputs["budgetType"], inputs["timeUnit"]) == ("dev-budget", "COST", "MONTHLY")
    assert (inputs["limitAmount"], inputs["limitUnit"]) == ("1234.5", "USD")
    assert inputs["costFilters"] == [{"name": "TagKeyValue", "values": ["user:gpu-cluster:cluster$dev"]}]
    assert [(n["notificationType"], n["threshold"]) for n in inputs["notifications"]] == [
        ("ACTUAL", 50), ("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 90)
    ]  # fmt: skip
    for n in inputs["notifications"]:
        assert (n["comparisonOperator"], n["thresholdType"]) == ("GREATER_THAN", "PERCENTAGE")
        assert n["subscriberEmailAddresses"] == EMAILS
    assert inputs["tags"]["gpu-cluster:cluster"] == "dev"
    # the tag counts only once activated as a cost allocation tag: the plan says so
    assert any("cost allocation tag" in w for w in aws.warnings())


def test_azure_budget_is_on_the_resource_group_from_the_first_of_the_month():
    plan = plan_stack_with("azure-dev", budget={"monthly": 800, "notify": EMAILS})
    budget = one(plan, "consumption:Budget")
    inputs = budget["inputs"]
    assert (
        inputs["scope"].startswith("/subscriptions/") and "/resourceGroups/<autoname:dev-azure-rg>" in inputs["scope"]
    )
    assert (inputs["amount"], inputs["category"], inputs["timeGrain"]) == (800, "Cost", "Monthly")
    start = inputs["timePeriod"]["startDate"]
    assert start.endswith("-01T00:00:00Z")
    assert budget["ignoreChanges"] == ["timePeriod"]  # a deploy in a later month does not move the period
    assert sorted(inputs["notifications"]) == ["actual-100", "actual-50", "actual-80"]
    for note in inputs["notifications"].values():
        assert (note["operator"], note["thresholdType"], note["contactEmails"]) == ("GreaterThan", "Actual", EMAILS)


def test_gcp_budget_filters_project_and_label_and_notifies_its_own_email_channels():
    plan = plan_stack_with(
        "gcp-dev", budget={"monthly": 99.25, "thresholds": [75], "forecast": 110, "notify": EMAILS,
                           "billingAccount": ACCOUNT}
    )  # fmt: skip
    inputs = one(plan, "billing/budget:Budget")["inputs"]
    assert inputs["billingAccount"] == ACCOUNT
    assert inputs["amount"] == {"specifiedAmount": {"currencyCode": "USD", "units": "99", "nanos": 250000000}}
    assert inputs["budgetFilter"] == {
        "projects": ["projects/<project number: known at deploy>"],
        "labels": {"gpu-cluster_cluster": "dev"},
        "calendarPeriod": "MONTH",
    }
    assert inputs["thresholdRules"] == [
        {"thresholdPercent": 0.75, "spendBasis": "CURRENT_SPEND"},
        {"thresholdPercent": 1.1, "spendBasis": "FORECASTED_SPEND"},
    ]
    channels = resources_of(plan, "monitoring/notificationChannel:NotificationChannel")
    assert [(c["inputs"]["type"], c["inputs"]["labels"]) for c in channels] == [
        ("email", {"email_address": e}) for e in EMAILS
    ]
    assert inputs["allUpdatesRule"]["monitoringNotificationChannels"] == [f"<id of {c['name']}>" for c in channels]
    # the channels carry the cluster's labels where GCP keeps them (userLabels): no required-tags violation
    assert not [v for v in plan.violations() if "notificationChannel" in v.urn]


def test_no_budget_key_registers_no_budget():
    plan = plan_stack("aws-dev")
    assert not resources_of(plan, "budgets/budget:Budget")
    assert plan.summary()["budget"] is None


# --- the summary -------------------------------------------------------------------------------------------------


def test_the_summary_shows_the_budget_beside_the_monthly_total_and_warns_when_over(aws):
    s = aws.summary()
    assert s["budget"]["monthly"] == 1234.5 and s["budget"]["resources"] == ["dev-aws-budget"]
    assert s["budget"]["estimateMonthly"] == s["totalMonthlyUsd"]
    assert s["budget"]["overBudget"] is False
    assert not any("above budget.monthly" in w for w in aws.warnings())
    low = plan_stack_with("aws-dev", budget={"monthly": 100, "notify": EMAILS})
    assert low.summary()["budget"]["overBudget"] is True
    warning = next(w for w in low.warnings() if "above budget.monthly" in w)
    assert f"{low.summary()['totalMonthlyUsd']:,.2f} USD/month" in warning
    assert "OVER the budget" in (budget_text(low.summary()) or "")


# --- day 2 -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "budget"),
    [
        ("aws-dev", {"monthly": 900, "notify": EMAILS}),
        ("azure-dev", {"monthly": 900, "notify": EMAILS}),
        ("gcp-dev", {"monthly": 900, "notify": EMAILS, "billingAccount": ACCOUNT}),
    ],
)
def test_adding_a_budget_to_a_running_stack_only_creates_the_budget(stack, budget):
    """updates.yaml cluster.budget in-place: the diff creates the budget (and GCP's channels), changes nothing else,
    and refuses nothing; the budget's types have diff rules (no `may replace` of an unknown type)."""
    old, new = plan_json(plan_stack(stack)), plan_json(plan_stack_with(stack, budget=budget))
    diff = diff_plans(old, new)
    created = {urn.rsplit("$", 1)[-1].split("::")[0] for urn in diff.created}
    assert created <= {
        "aws:budgets/budget:Budget",
        "azure-native:consumption:Budget",
        "gcp:billing/budget:Budget",
        "gcp:monitoring/notificationChannel:NotificationChannel",
    }
    assert created and not diff.deleted and not diff.changed and not diff.may_replace
    assert not diff.refused
    assert [c.key for c in diff.spec_changes] == ["cluster.budget"]


def test_the_python_api_takes_the_budget_as_a_typed_field():
    from components.args import GpuClusterArgs

    values = {"gpu-cluster:cloud": "aws", "aws:region": "us-east-1",
              "gpu-cluster:cluster": {"gpu": "T4:1", "budget": {"monthly": 10, "notify": EMAILS}}}  # fmt: skip
    args = GpuClusterArgs.from_config(values)
    assert args.budget == {"monthly": 10, "notify": EMAILS} and not args.extra_config
    assert args.to_config()[0] == values
    spec = args.to_spec("t")
    assert spec.budget is not None and spec.budget.notify == tuple(EMAILS)


@pytest.mark.parametrize(
    ("stack", "token", "extra"),
    [
        ("aws-eks-h100", "aws:budgets/budget:Budget", {}),
        ("azure-aks-h100", "azure-native:consumption:Budget", {}),
        ("gcp-gke-a3mega", "gcp:billing/budget:Budget", {"billingAccount": ACCOUNT}),
    ],
)
def test_kubernetes_stacks_get_the_budget_too(stack, token, extra):
    """The budget is built before the cloud package branches to the managed Kubernetes path."""
    plan = plan_stack_with(stack, budget={"monthly": 200000, "notify": EMAILS, **extra})
    assert [r.type for r in plan.resources if r.type == token] == [token]
