"""monitoring.prometheus managed on Tencent Cloud (layout/tencentcloud/tmp.py decides it): the TMP instance in the
cluster's VPC and subnet, one TMP alert rule per rule, the login node's grant to read this instance's write token, and
what the login node's user data gets at deploy (the APPID, the instance's id and addresses)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..bootstrap import gzip_b64
from ..layout.tencentcloud import TencentLayout
from ..layout.tencentcloud.tmp import (
    APPID_PLACEHOLDER,
    INSTANCE_PLACEHOLDER,
    QUERY_PLACEHOLDER,
    REMOTE_WRITE_PLACEHOLDER,
    TencentTmp,
)
from ..resources import fill, invoke_options
from .identity import custom_grant
from .network import Network
from .slurm import SlurmHead


@dataclass(frozen=True)
class Tmp:
    instance: tencentcloud.monitor.TmpInstance
    rules: tuple[tencentcloud.monitor.TmpAlertRule, ...]
    app_id: pulumi.Output[str]

    @property
    def fills(self) -> Mapping[str, pulumi.Input[str] | None]:
        """The login node's user data placeholders and their values, known once the instance exists."""
        return {
            APPID_PLACEHOLDER: self.app_id,
            INSTANCE_PLACEHOLDER: self.instance.id,
            REMOTE_WRITE_PLACEHOLDER: self.instance.remote_write,
            QUERY_PLACEHOLDER: self.instance.api_root_path,
        }


def build(
    parent: pulumi.Resource, name: str, layout: TencentLayout, network: Network, tags: Mapping[str, str]
) -> Tmp | None:
    plan = layout.monitoring.tmp if layout.monitoring is not None else None
    if plan is None:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    instance = tencentcloud.monitor.TmpInstance(
        f"{name}-tmp",
        instance_name=plan.instance_name,
        vpc_id=network.vpc.id,
        subnet_id=network.subnet.id,  # the login node's: its agent writes to the instance's address in it
        zone=network.zone,
        data_retention_time=plan.data_retention_time,
        tags=dict(tags),
        opts=child,
    )
    rules = tuple(
        tencentcloud.monitor.TmpAlertRule(
            f"{name}-tmp-rule-{rule.rule_name.removeprefix(layout.spec.name + '-')}",
            instance_id=instance.id,
            rule_name=rule.rule_name,
            expr=rule.expr,
            duration=rule.duration,
            labels=[tencentcloud.monitor.TmpAlertRuleLabelArgs(key=k, value=v) for k, v in rule.labels],
            annotations=[tencentcloud.monitor.TmpAlertRuleAnnotationArgs(key=k, value=v) for k, v in rule.annotations],
            receivers=[],  # monitoring.notify is not built on Tencent (catalog/monitoring.yaml notifyNotBuilt)
            rule_state=2,  # CreateAlertRule RuleState "2=RuleEnabled"
            opts=child,
        )
        for rule in plan.rules
    )
    account = tencentcloud.user.get_info_output(opts=invoke_options(parent))
    return Tmp(instance, rules, account.app_id.apply(str))


def grant(
    parent: pulumi.Resource, name: str, layout: TencentLayout, tmp: Tmp | None, role_name: pulumi.Output[str]
) -> tencentcloud.cam.RolePolicyAttachmentByName | None:
    """The login node's role may describe this TMP instance only (its write token, read at boot)."""
    plan: TencentTmp | None = layout.monitoring.tmp if layout.monitoring is not None else None
    if plan is None or tmp is None:
        return None
    account = tencentcloud.user.get_info_output(opts=invoke_options(parent))
    resource = pulumi.Output.all(account.owner_uin, tmp.instance.id).apply(
        lambda v: plan.token_resource.format(region=layout.spec.region, account=f"uin/{v[0]}", instance=v[1])
    )
    return custom_grant(
        parent,
        (f"{name}-tmp-policy", f"{name}-role-tmp"),
        plan.policy_name,
        f"gpu-cluster {layout.spec.name}: the login node reads its TMP instance's write token",
        resource.apply(plan.policy_document),
        role_name,
    )


def login_user_data(layout: TencentLayout, slurm: SlurmHead | None, tmp: Tmp | None) -> pulumi.Input[str] | None:
    """The login node's user data when it is filled at deploy: Slurm's (the head's address, and TMP's) or TMP's alone;
    None: the layout's as it is (access.build_login)."""
    fills = tmp.fills if tmp is not None else {}
    if slurm is not None:
        return slurm.login_user_data(fills)
    text = layout.login_user_data_text
    return fill(text, fills, gzip_b64) if tmp is not None and text is not None else None
