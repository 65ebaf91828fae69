"""Run mutmut on one critical module, with that module's own test files (README "Mutation testing").

    python3 -m uv run python -m tests.mutation.mutmut_module spec     # then: python3 -m uv run mutmut results
    python3 -m uv run python -m tests.mutation.mutmut_module spec --survivors   # re-test only what survived

`[tool.mutmut]` in pyproject.toml holds the shared settings; this picks, per module, the functions to
mutate (mutmut's mutant-name globs) and the test files that run against them
(`pytest_add_cli_args_test_selection`). Each mutant runs only the selected tests that reach its
function. Why not the whole suite: most tests plan whole stacks, so a spec or layout mutant would run
for seconds each and one module would take an hour on 2 cores; these files test the module directly.
A mutant only the rest of the suite would kill counts as survived here: the rates are lower bounds.

mutmut keeps one set of results: running another module changes the test selection, which makes mutmut
forget the results of the previous one (`mutmut results` then shows the last module run).
"""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path


def _spec_globs(functions: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """mutmut's mutant-name globs of functions per module of components/spec/ (`rules.names`, `resolve`...)."""
    return tuple(
        f"components.spec.{module}.x_{name}__mutmut_*" for module, names in functions.items() for name in names
    )


SPEC_FUNCTIONS = _spec_globs({
    # the cross-field rules (CROSS_RULES); not _instance_type and zone_of: their per-zone availability
    # logic was being rewritten while this was measured (catalog/availability), see README
    "rules.names": ("_name", "_tags"),
    "rules.instance": ("_zone", "_other_cloud_blocks", "_fabric", "_gpu_partition"),
    "rules.nodes": ("_node_counts", "_image"),
    "rules.storage": ("_scratch",),
    "rules.capacity": ("_capacity",),
    "rules.network": ("_network",),
    # access, login keys and placement
    "rules.identity": ("_login_user", "check_access", "_check_login_user", "rsa_bits"),
    "resolve": ("_placement",),
})  # fmt: skip

POLICY_FUNCTIONS = (
    # the rules (RULES) and what they read, per module of components/policy/
    *(f"components.policy.model.x_{name}__mutmut_*" for name in ("find", "truthy")),
    "components.cidr.x_wide_public__mutmut_*",
    *(f"components.policy.rules.network.x_{name}__mutmut_*"
      for name in ("is_login", "no_public_ip", "open_sources", "no_open_ingress")),
    *(f"components.policy.rules.nodes.x_{name}__mutmut_*"
      for name in ("encrypted_disks", "node_login", "is_spot", "spot_nodes")),
    *(f"components.policy.rules.tags.x_{name}__mutmut_*" for name in ("normal", "tag_keys", "required_tags")),
    *(f"components.policy.rules.cost.x_{name}__mutmut_*" for name in ("cost_ceiling", "cost_ceiling_unchecked")),
    *(f"components.policy.rules.identity.x_{name}__mutmut_*" for name in ("wildcard_statements", "no_admin_on_nodes")),
    # the per-type facts the rules read from resource_types.yaml
    *(f"components.policy.readers.x_{name}__mutmut_*"
      for name in ("is_set", "unset_checks", "any_set", "api_endpoint", "ports_of", "_admits", "_rule_ports",
                   "_admitting", "ingress_sources", "ingress_rules")),
)  # fmt: skip

LAYOUT_AWS_FUNCTIONS = (
    # the EFA/NIC layout and the decisions plan() takes (interfaces, placement, market, image, metrics): plan() is in
    # components/layout/aws/__init__.py (mutmut drops `__init__` from the name), the rest in the concern modules
    "components.layout.aws.x_plan__mutmut_*",
    "components.layout.aws.fabric.x_efa_interfaces__mutmut_*",
    "components.layout.aws.fabric.x_interfaces_of__mutmut_*",
    "components.layout.aws.network.x_check_public_ip__mutmut_*",
    "components.layout.aws.network.x_metrics__mutmut_*",
    "components.layout.aws.nodes.x_image_of__mutmut_*",
    "components.layout.aws.nodes.x_market_of__mutmut_*",
    "components.layout.aws.proof.x_count_wired_gbps__mutmut_*",
    # the EFA environment and enablement (NCCL env, the boot check, whether NCCL can use the fabric)
    *(
        f"components.layout.aws.fabric.x_{name}__mutmut_*"
        for name in ("instance_family", "nccl_env", "_default_image_vouches", "efa_usability", "efa_enablement")
    ),
)

# the security-relevant settings the AWS resources get: the node security group's rules (self, SSH only from
# sshCidrs, egress) and the launch template (IMDSv2, encrypted volumes, public IP only on one interface: what every
# template holds is in components/aws/launch_template.py, shared with the EKS pools' templates)
AWS_SECURITY_FUNCTIONS = (
    "components.aws.network.x__security_group__mutmut_*",
    "components.aws.nodes.x__launch_template__mutmut_*",
    "components.aws.launch_template.x_build_launch_template__mutmut_*",
    "components.aws.launch_template.x_network_interfaces__mutmut_*",
    "components.aws.launch_template.x__volume__mutmut_*",
)

RUNNER_FUNCTIONS = (
    # the mock runner: URNs, recorded inputs and options, secrets masking, aliases, mock answers and their
    # placeholder check, invokes, outputs; not the garbage-collector pause (_Collector: speed, not results)
    "x__check_references", "x__fill", "x__clean", "x_run_program",
    "xǁRegisteredǁas_json", "xǁPlanMocksǁnew_resource", "xǁPlanMocksǁcall",
    "xǁRecordingMonitorǁmake_urn", "xǁRecordingMonitorǁ_alias_urns", "xǁRecordingMonitorǁRegisterResource",
    "xǁRecordingMonitorǁInvoke",
)  # fmt: skip

# the rules of this round's keys: scheduler and its blocks, elastic fleets, encryption (and what they resolve to)
SCHEDULER_SPEC_FUNCTIONS = _spec_globs({
    "rules.scheduler": ("_scheduler", "_kubernetes", "_slurm"),
    "rules.scaling": ("_scaling", "min_nodes"),
    "rules.encryption": ("_encryption",),
    "resolve": ("_kubernetes_spec", "_slurm_spec", "_scaling_spec"),
})  # fmt: skip

# monitoring: the logs' retention and the alert addresses (issue 30's keys). Not where a self-hosted Prometheus can
# run (has_host, _problems, resolve_prometheus): their tests plan stacks (tests/test_monitoring.py), seconds a mutant
MONITORING_SPEC_FUNCTIONS = _spec_globs({
    "rules.monitoring": ("_retention_problem", "_logs", "_notify", "_monitoring"),
    "rules.emails": ("email_errors",),
})  # fmt: skip

# the in-cluster release set: the `when:` selection, Helm's value merge, the GPU labels
LAYOUT_KUBERNETES_FUNCTIONS = ("gpu_labels", "_facts", "_matches", "merge", "_selected", "releases", "manifests")

# where a type is sold and whether as spot: the lookups the spec, resolve, compare and recommend ask (not the
# cached loaders: a cache filled before the fork would hide their mutants)
CATALOG_DATA_FUNCTIONS = (
    "components.catalog.availability.x__zone_region__mutmut_*",
    *(f"components.catalog.availability.x_{name}__mutmut_*"
      for name in ("offer", "label", "sold_in", "zones_selling", "nearest_first", "why_not")),
    *(f"components.catalog.spot.x_{name}__mutmut_*"
      for name in ("_entry", "_catalog_says_not_spot", "lookup", "hourly_usd", "offered", "refusal")),
)  # fmt: skip

# Tests left out of one module's run: they plan every shipped stack (seconds per mutant) and the module's
# own tests exercise the same code on crafted resources.
SLOW: dict[str, tuple[str, ...]] = {
    "policy": (
        "tests/test_policy.py::test_every_shipped_stack_passes_every_policy",
        "tests/test_policy.py::test_cost_ceiling_is_judged_at_max_nodes_and_its_level_is_configurable",
        "tests/test_policy.py::test_the_plan_reports_violations",
        "tests/test_policy.py::test_cli_exits_3_on_a_mandatory_violation_and_levels_come_from_a_file",
    ),
}

MODULES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "spec": (
        SPEC_FUNCTIONS,
        ("tests/test_spec.py", "tests/test_spec_rules.py", "tests/test_mutation_spec.py"),
    ),
    "scheduler-spec": (
        SCHEDULER_SPEC_FUNCTIONS,
        ("tests/test_spec_scheduler.py", "tests/test_spec_scaling.py", "tests/test_spec_encryption.py"),
    ),
    "monitoring-spec": (
        MONITORING_SPEC_FUNCTIONS,
        ("tests/test_monitoring_rules.py", "tests/test_budget.py"),
    ),
    "catalog-data": (
        CATALOG_DATA_FUNCTIONS,
        (
            "tests/test_availability.py",
            "tests/test_availability_clouds.py",
            "tests/test_spot.py",
            "tests/test_alicloud_catalog.py",
        ),
    ),
    "layout-kubernetes": (
        tuple(f"components.layout.kubernetes.x_{name}__mutmut_*" for name in LAYOUT_KUBERNETES_FUNCTIONS),
        ("tests/test_layout_kubernetes.py",),
    ),
    "policy": (
        POLICY_FUNCTIONS,
        ("tests/test_policy.py", "tests/test_mutation_policy.py", "tests/test_policy_readers.py"),
    ),
    "layout-aws": (
        LAYOUT_AWS_FUNCTIONS,
        ("tests/test_layout_aws.py", "tests/test_mutation_layout_aws.py"),
    ),
    "aws-security": (
        AWS_SECURITY_FUNCTIONS,
        # small plans under the mock runtime, and the template's users this round added: the CMK on every volume,
        # the Slurm user data, the EKS pools' templates (tests/test_aws_resources.py plans every shipped stack)
        (
            "tests/test_mutation_aws_security.py",
            "tests/test_aws_encryption.py",
            "tests/test_aws_slurm.py",
            "tests/test_aws_kubernetes.py",
        ),
    ),
    "runner": (
        tuple(f"components.plan.runner.{name}__mutmut_*" for name in RUNNER_FUNCTIONS),
        # a tiny program each test runs (~20 ms; tests/test_plan_cli.py, test_diff_references.py: 10-15 s a run)
        ("tests/test_mutation_runner.py",),
    ),
}


def survivors(globs: tuple[str, ...]) -> list[str]:
    """The module's mutants that the last run did not kill (mutmut's own results in mutants/)."""
    names = []
    for meta in Path("mutants").rglob("*.py.meta"):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if code not in (1, 3) and any(fnmatch.fnmatch(name, g) for g in globs):
                names.append(name)
    return sorted(names)


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] not in MODULES or args[1:] not in ([], ["--survivors"]):
        raise SystemExit(f"usage: python -m tests.mutation.mutmut_module {{{','.join(MODULES)}}} [--survivors]")
    globs, tests = MODULES[args[0]]
    if args[1:]:
        globs = tuple(survivors(globs))
        if not globs:
            raise SystemExit("no surviving mutants to re-test")
    from mutmut import configuration
    from mutmut.__main__ import cli

    cfg = configuration.config()
    cfg.pytest_add_cli_args_test_selection = list(tests)  # forked workers inherit the config
    for node in SLOW.get(args[0], ()):
        cfg.pytest_add_cli_args += ["--deselect", node]
    # this module came in as `tests.mutation...`: forget that package, or pytest finds `tests` already
    # imported from the source tree when it imports mutants/tests/conftest.py
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        del sys.modules[name]
    cli(["run", "--max-children", "2", *globs])


if __name__ == "__main__":
    main()
