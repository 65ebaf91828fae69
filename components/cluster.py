"""`GpuCluster`: the one component users create. It validates, lays out, and delegates to a cloud.

The cloud is reached through its contract (`contract.py`); its package, and so its provider SDK,
is imported only for the cloud in use.
"""

from __future__ import annotations

from typing import Any

import pulumi

from .contract import CloudCluster, Layout, contract
from .spec import ClusterSpec

TYPE = "gpu-cluster:index:GpuCluster"


def plan_layout(spec: ClusterSpec) -> Layout:
    return contract(spec.cloud).plan(spec)


class GpuCluster(pulumi.ComponentResource):
    """A GPU cluster on one cloud, from a validated `ClusterSpec` (see `spec.build_spec`)."""

    def __init__(self, name: str, args: ClusterSpec, opts: pulumi.ResourceOptions | None = None) -> None:
        # The layout may still reject the spec (ConfigError): do it before registering anything.
        cloud = contract(args.cloud)
        self.layout = cloud.plan(args)
        # What the stack asked for, as component inputs: policies (pack and offline plan) read these
        # to tell an opted-in public IP or spot node from a mistake. One key, so the SDK's habit of
        # turning input keys into attributes cannot clash with ours.
        facts = {
            "cloud": args.cloud,
            "instanceType": args.instance.instanceType,
            "nodes": args.nodes,
            "publicIp": args.network.public_ip,
            "loginPublicIp": args.login is not None and args.login.public_ip,
            "spot": args.spot,
            "hourlyUsd": args.hourly_usd,
            "hourlyUsdAtMaxNodes": args.max_hourly_usd_at_scale,
            "maxHourlyUsd": args.max_hourly_usd,
        }
        super().__init__(TYPE, name, {"stackFacts": facts}, opts)
        self.spec = args
        for finding in args.findings:
            log = pulumi.log.warn if finding.level == "warning" else pulumi.log.info
            log(str(finding), resource=self)
        self.cloud: CloudCluster = cloud.component()(
            f"{name}-{args.cloud}", self.layout, pulumi.ResourceOptions(parent=self)
        )
        row = args.instance
        self.outputs: dict[str, Any] = {
            "cloud": args.cloud,
            "region": args.region,
            "instanceType": row.instanceType,
            "gpu": row.gpu or row.gpuDescription,
            "gpusPerNode": row.gpus,
            "nodes": args.nodes,
            "maxNodes": args.max_nodes,
            "fabric": row.fabric if args.fabric_wired else "none",
            "fabricGbpsPerNode": self.layout.fabric_gbps_wired,
            "placement": self.layout.placement_applied,
            "scratch": self.layout.scratch.describe(),
            **self.cloud.outputs,
        }
        self.register_outputs(self.outputs)
