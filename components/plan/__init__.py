"""The offline plan: what `pulumi up` would create for a stack, without credentials or the CLI.

`make_plan` validates the stack file first (the same `build_spec` the program uses), then runs the
real program under mocks and summarises the recorded resources. The JSON form (`Plan.as_json`) is a
stable format documented in README.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi import RunError

from ..catalog import spot as spot_data
from ..contract import Layout, contract
from ..errors import ConfigError, ConfigErrors
from ..layout.kubernetes import gpu_sharing
from ..policy import (
    K8S_POOL_TYPES,
    RELEASE_TYPE,
    Resource,
    Violation,
    ViolationGroup,
    benchmark,
    control_plane_service,
    endpoint_state,
    evaluate,
    group_violations,
    profile_rows,
)
from ..policy.transit import in_transit
from ..policy.types import BUDGET_TYPES
from ..spec import ClusterSpec, build_spec
from ..spec.updates import config_document
from .bill import costs as bill_costs
from .runner import ProgramRun, Registered, run_program
from .stackfile import StackFile, find_project, project_info, read_stack_file

__all__ = ["Plan", "find_project", "load_stack", "make_plan"]


@dataclass
class Plan:
    stack: StackFile
    spec: ClusterSpec
    run: ProgramRun
    policy_config: dict[str, Any] = field(default_factory=dict)

    @property
    def resources(self) -> list[Registered]:
        return self.run.resources

    @property
    def layout(self) -> Layout:
        layout: Layout = self.run.program_globals["cluster"].layout
        return layout

    def fabric_gbps_wired(self) -> float | int:
        """Counted from the registered resources, not taken from the layout: the plan's proof."""
        counter = contract(self.spec.cloud).count_wired_gbps
        gbps = float(counter([r.as_json() for r in self.resources], self.spec.instance.gbps_per_fabric_device))
        return int(gbps) if gbps.is_integer() else gbps  # as the outputs show it

    def summary(self) -> dict[str, Any]:
        spec, row = self.spec, self.spec.instance
        return {
            "instanceType": row.instanceType,
            "resolution": spec.resolution,
            "gpu": row.gpu or row.gpuDescription,
            "gpusPerNode": row.gpus,
            "nodes": spec.nodes,
            "maxNodes": spec.max_nodes,
            "totalGpus": spec.total_gpus,
            "nodeGroup": spec.node_group,
            "placement": self.layout.placement_applied,  # what is applied (placementRequested: what was asked)
            "fabric": row.fabric if spec.fabric_wired else "none",
            "fabricGbpsPerNode": self.fabric_gbps_wired(),
            "fabricGbpsRated": row.fabricGbps,
            "scratch": self.layout.scratch.describe(),
            "image": self.run.outputs.get("imageId"),
            "gpuDriver": self.run.outputs.get("gpuDriver"),
            "spot": spec.spot,
            "hourlyUsd": spec.hourly_usd,
            "hourlyUsdPerNode": row.hourlyUsd,
            "resourceCount": len(self.resources),
            # keys added later (the format only ever adds): what a managed group costs once scaled out,
            # whether the catalog's price is confirmed, and the capacity reservation the nodes launch into
            "hourlyUsdAtMaxNodes": spec.max_hourly_usd_at_scale,
            "hourlyUsdVerified": None if row.hourlyUsd is None else row.priceVerified,
            "priceNote": row.priceNote,
            "maxHourlyUsd": spec.max_hourly_usd,
            "reservation": spec.reservation or None,
            "reservationType": spec.reservation_type if spec.reservation and spec.cloud == "aws" else None,
            # how to log in and list the nodes, and what the nodes' identity may do (the cloud's outputs)
            "access": self.run.outputs.get("access"),
            "accessHourlyUsd": self.run.outputs.get("accessHourlyUsd"),
            "identity": self.run.outputs.get("identity"),
            "login": spec.login.instance_type if spec.login else None,
            # who scrapes the exporters, and how to reach Grafana (the cloud's `monitoring` output; None: not built)
            "monitoring": self.run.outputs.get("monitoring"),
            "placementRequested": spec.placement,
            # wired is necessary, not sufficient: does the bootstrap give NCCL what the fabric needs?
            "fabricUsable": self.layout.fabric_usability.usable,
            "fabricMissing": list(self.layout.fabric_usability.missing),
            "fabricProvides": list(self.layout.fabric_usability.provides),
            # storage.shared: the filesystem every node mounts, its size and est. monthly cost (None: none)
            "sharedStorage": self.shared_storage(),
            # what schedules work: none, kubernetes (control plane, pools, releases) or slurm (head node)
            "scheduler": spec.scheduler,
            "kubernetes": self.kubernetes(),
            "slurm": self.slurm(),
            # slurm.partitions: the elastic partitions (their nodes run only while jobs need them)
            "partitions": [
                {
                    "name": p.name,
                    "instanceType": p.instance.instanceType,
                    "gpu": p.instance.gpu or p.instance.gpuDescription,
                    "gpusPerNode": p.instance.gpus,
                    "minNodes": p.min_nodes,
                    "maxNodes": p.max_nodes,
                    "spot": p.spot,
                    "default": p.default,
                    "hourlyUsdPerNode": p.instance.hourlyUsd,
                }
                for p in spec.partitions
            ],
            # elastic fleets: the group's floor and its cost there (the target is `nodes`, the top maxNodes),
            # and what moves the group between them (None: nothing does)
            "minNodes": spec.min_nodes,
            "hourlyUsdAtMinNodes": None if row.hourlyUsd is None else round(row.hourlyUsd * spec.min_nodes, 2),
            "scaling": self.run.outputs.get("scaling"),
            # serve: the load-balanced endpoint, its health check and the command that checks it (None: none)
            "serve": self.run.outputs.get("serve"),
            # the compliance profile's rules with the control each serves and its result (None: no profile), and
            # what is encrypted in transit (metrics inside the cluster network, TLS endpoints, the shared mounts)
            "compliance": self.compliance(),
            "inTransit": in_transit(
                self.spec.cloud,
                [Resource(r.type, r.inputs, r.urn, r.name) for r in self.resources],
                cluster_cidrs=(self.spec.network.cidr,),
                shared_kind=(self.shared_storage() or {}).get("kind"),
                kubernetes=self.spec.kubernetes is not None,
            ),
            # spot stacks: the reference spot price per node, its region and read date (catalog/spot/<cloud>.yaml;
            # a snapshot, shown beside the on-demand upper bound); None when not spot or the data does not say
            **self.spot_reference(),
            # issue 30: everything the stack runs, priced or listed as not counted (bill.py), and the USD totals
            # with fixed costs included, per hour and per month (730 h) at nodes, minNodes and maxNodes
            **self.cost_totals(),
            # budget: the cloud's monthly budget beside the monthly total, and whether the plan's own estimate at
            # nodes is already over it (None: no budget key)
            "budget": self.budget(),
            # a vGPU slice (catalog gpuFraction): the share of one GPU each node gets, its memory, and the price of a
            # whole GPU-hour at the slice's rate (the node's price over the fraction); None on whole-GPU types
            "gpuFraction": row.gpuFraction,
            "gpuSlice": row.slice_text,
            "usdPerGpuHour": None if row.usd_per_gpu_hour is None else round(row.usd_per_gpu_hour, 5),
        }

    def costs(self) -> dict[str, Any]:
        return bill_costs(self.spec, self.layout, self.shared_storage())

    def cost_totals(self) -> dict[str, Any]:
        bill = self.costs()
        usd = bill["totals"].get("USD")
        keys = ("totalHourlyUsd", "totalHourlyUsdAtMinNodes", "totalHourlyUsdAtMaxNodes")
        monthly = ("totalMonthlyUsd", "totalMonthlyUsdAtMinNodes", "totalMonthlyUsdAtMaxNodes")
        at = ("nodes", "minNodes", "maxNodes")
        return {
            "costs": bill,
            "fixedHourlyUsd": None if usd is None else usd["fixedHourly"],
            **{k: None if usd is None else usd["hourly"][a] for k, a in zip(keys, at, strict=True)},
            **{k: None if usd is None else usd["monthly"][a] for k, a in zip(monthly, at, strict=True)},
            "notCounted": bill["notCounted"],
        }

    def budget(self) -> dict[str, Any] | None:
        """`budget` as the cloud is told it, beside the bill's monthly total at nodes in the budget's currency."""
        budget = self.spec.budget
        if budget is None:
            return None
        totals = self.costs()["totals"].get(budget.currency)
        estimate = None if totals is None else totals["monthly"]["nodes"]
        return {
            "monthly": budget.monthly,
            "currency": budget.currency,
            "currencySource": budget.currency_source,
            "thresholds": list(budget.thresholds),
            "forecast": budget.forecast,
            "notify": list(budget.notify),
            "resources": [r.name for r in self.resources if r.type in BUDGET_TYPES],
            "estimateMonthly": estimate,
            "overBudget": None if estimate is None else estimate > budget.monthly,
        }

    def budget_warning(self) -> str | None:
        """The plan's own monthly estimate at nodes already above the budget: the first month's alerts are certain."""
        found = self.budget()
        if not found or not found["overBudget"]:
            return None
        cur = found["currency"]
        return (
            f"budget: the plan's own estimate is {found['estimateMonthly']:,.2f} {cur}/month at "
            f"{self.spec.nodes} node(s), above budget.monthly {found['monthly']:,.2f} {cur}: the budget's alerts will "
            "fire every month this cluster runs at that size; raise the budget or lower nodes"
        )

    def spot_reference(self) -> dict[str, Any]:
        found = spot_data.lookup(self.spec.instance) if self.spec.spot else None
        if found is None or found.hourly_usd is None:
            return dict.fromkeys(("spotHourlyUsdPerNode", "spotPriceRegion", "spotPriceDate"))
        return {"spotHourlyUsdPerNode": found.hourly_usd, "spotPriceRegion": found.region, "spotPriceDate": found.date}

    def compliance(self) -> dict[str, Any] | None:
        profile = self.spec.compliance
        if profile == "none":
            return None
        rows = profile_rows(profile, self.spec.cloud, self.violations(), self.policy_config)
        return {
            "profile": profile,
            "benchmark": benchmark(profile, self.spec.cloud),
            "passed": not any(r.result == "fail" for r in rows),
            "rules": [r.as_json() for r in rows],
        }

    def kubernetes(self) -> dict[str, Any] | None:
        """The control plane, pools and releases as registered (endpoint read from the control plane's inputs)."""
        kube = self.spec.kubernetes
        if kube is None:
            return None
        outputs = self.run.outputs.get("kubernetes") or {}
        planes = [r for r in self.resources if control_plane_service(r.type)]
        # the control plane's endpoint, or a resource of its own (TKE's ClusterEndpoint)
        state = next(
            (
                found
                for r in [*planes, *self.resources]
                if (found := endpoint_state(Resource(r.type, r.inputs, r.urn, r.name))) is not None
            ),
            None,
        )
        releases = [
            {
                "name": r.inputs.get("name") or r.name,
                "chart": r.inputs.get("chart"),
                "version": r.inputs.get("version"),
                "namespace": r.inputs.get("namespace"),
                "repo": (r.inputs.get("repositoryOpts") or {}).get("repo"),
            }
            for r in self.resources
            if r.type == RELEASE_TYPE
        ]
        return {
            "service": control_plane_service(planes[0].type) if planes else None,
            "controlPlane": planes[0].name if planes else None,
            "clusterName": outputs.get("clusterName"),
            "version": kube.version,
            "versionBuilt": outputs.get("version"),  # what the cloud is asked for (ACK: its patch release)
            "endpoint": None if state is None else ("public" if state[0] else "private"),
            "publicCidrs": list(kube.public_cidrs),
            "endpointAddress": outputs.get("endpoint"),
            "systemPool": {"instanceType": kube.system_instance_type, "nodes": kube.system_nodes},
            "gpuPool": {
                "instanceType": self.spec.instance.instanceType,
                "nodes": self.spec.nodes,
                "maxNodes": self.spec.max_nodes,
                "minNodes": self.spec.min_nodes,
            },
            # pools declared inside the control plane (AKS's system pool: agentPoolProfiles), then pool resources
            "nodePools": [
                f"{plane.name}/{pool.get('name')}"
                for plane in planes
                for pool in plane.inputs.get("agentPoolProfiles") or []
            ]
            + [r.name for r in self.resources if r.type in K8S_POOL_TYPES],
            "releases": releases,
            "gpuSoftware": kube.gpu_software,
            "credentials": outputs.get("credentials"),
            **self.gpu_sharing(),
        }

    def gpu_sharing(self) -> dict[str, Any]:
        """kubernetes.gpuSharing: how many workloads share each GPU and a node (absent when pods take whole GPUs)."""
        sharing = gpu_sharing(self.spec)
        if sharing is None:
            return {}
        return {
            "gpuSharing": {
                "mode": sharing.mode,
                "mechanism": sharing.mechanism,
                "migProfile": sharing.mig_profile,
                "workloadsPerGpu": sharing.per_gpu,
                "gpusPerNode": sharing.gpus,
                "workloadsPerNode": sharing.per_node,
                "workloadsAtMaxNodes": sharing.per_node * self.spec.max_nodes,
                # a GPU node's on-demand price spread over the workloads it runs (None without a USD price)
                "hourlyUsdPerWorkload": None
                if self.spec.instance.hourlyUsd is None
                else round(self.spec.instance.hourlyUsd / sharing.per_node, 4),
            }
        }

    def slurm(self) -> dict[str, Any] | None:
        """The head node, the partition and how to log in and submit (the cloud's `slurm` output)."""
        slurm = self.spec.slurm
        if slurm is None:
            return None
        outputs = self.run.outputs.get("slurm") or {}
        return {
            "headNode": slurm.head_instance_type,
            "headNodeAddress": (outputs.get("headNode") or {}).get("privateIp")
            if isinstance(outputs.get("headNode"), dict)
            else outputs.get("headNode"),
            "loginNode": self.spec.login.instance_type if self.spec.login else None,
            "partition": outputs.get("partition", slurm.partition),
            "accounting": slurm.accounting,
            "slurmVersion": outputs.get("slurmVersion"),
            "login": outputs.get("login"),
            "check": outputs.get("check"),
            # the first job, on the login node: nccl-tests all_reduce_perf on two GPU nodes (docs/slurm.md)
            "firstJob": "gpu-cluster-nccl-test -N 2",
            "users": [u.name for u in slurm.users],
        }

    def shared_storage(self) -> dict[str, Any] | None:
        shared = getattr(self.layout, "shared", None)  # a cloud without storage.shared support has none
        if shared is None:
            return None
        made = [r.name for r in self.resources if shared.resource is not None and r.type == shared.resource]
        return {**shared.summary(), "resource": made[0] if made else None}

    def violations(self) -> list[Violation]:
        """The policy pack's rules, run on the recorded resources (same code as `policy/`)."""
        resources = [Resource(r.type, r.inputs, r.urn, r.name, r.protect or r.retain_on_delete) for r in self.resources]
        return evaluate(resources, self.policy_config)

    def violation_groups(self) -> list[ViolationGroup]:
        """One entry per rule, kind and fix (`required-tags: 11 resources lack environment; set ...`)."""
        return group_violations(self.violations())

    def warnings(self) -> list[str]:
        seen: dict[str, None] = dict.fromkeys(self.run.warnings)
        over = self.budget_warning()
        if over is not None:
            seen[over] = None
        return list(seen)

    def as_json(self) -> dict[str, Any]:
        violations = self.violations()
        return {
            "project": self.stack.project,
            "stack": self.stack.stack,
            "cloud": self.spec.cloud,
            "region": self.spec.region,
            "resources": [r.as_json() for r in self.resources],
            "outputs": self.run.outputs,
            "summary": self.summary(),
            "warnings": self.warnings(),
            "policy": [v.as_json() for v in violations],
            "policyGroups": [g.as_json() for g in group_violations(violations)],
            # added for day 2 (issue 28): the config as written, which the diff compares key by key
            "config": self.config(),
        }

    def config(self) -> dict[str, Any]:
        """The stack's config as the user wrote it, validated, defaults filled in, secrets masked."""
        return config_document(self.stack.values, self.spec.region, self.spec.gcp_project, self.spec.secret_config)


def load_stack(project_dir: Path, stack: str | None = None, config_file: Path | None = None) -> StackFile:
    project, stack_dir = project_info(project_dir)
    path = config_file if config_file is not None else stack_dir / f"Pulumi.{stack}.yaml"
    if config_file is None and not path.exists():
        known = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in stack_dir.glob("Pulumi.*.yaml"))
        raise ConfigError(f"--stack {stack}", f"no {path.name} in {stack_dir}; stacks: {', '.join(known)}")
    return read_stack_file(path, project, None if config_file is not None else stack)


def make_plan(project_dir: Path, stack_file: StackFile, policy_config: dict[str, Any] | None = None) -> Plan:
    """Validate, then run `__main__.py` under mocks. Raises ConfigError on invalid input."""
    spec = build_spec(stack_file.values, stack_file.stack, stack_file.project, stack_file.secret_keys)
    try:
        run = run_program(project_dir / "__main__.py", stack_file, spec.region)
    except RunError as exc:  # the program's own rejection (layout rules): one clear line per problem
        raise ConfigErrors([ConfigError("", line) for line in str(exc).splitlines()]) from None
    return Plan(stack_file, spec, run, dict(policy_config or {}))
