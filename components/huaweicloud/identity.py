"""The nodes' identity: an IAM agency delegated to ECS, with the IAM roles the config asks for.

Least privilege: no role unless `identity.policies` or `identity.readStorage` asks for one (the default set in
catalog/capabilities/huaweicloud.yaml `nodeIdentity` is empty, and says why). With `identity.existing` no agency is
created and nothing is granted by this stack: pulumi-huaweicloud 0.0.12 grants roles only inside iam.Agency itself
(all_resources_roles), so an existing agency keeps the roles it has. Instances take the agency by name (agency_name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout


@dataclass(frozen=True)
class Identity:
    agency: huaweicloud.iam.Agency | None  # None: an existing agency
    agency_name: pulumi.Output[str]

    def output(self, layout: HuaweiLayout) -> dict[str, Any]:
        """The `identity` stack output: everything the agency is allowed by this stack."""
        ident = layout.identity
        return {
            "kind": "iam-agency",
            "name": self.agency_name,
            "grants": list(ident.roles) if ident.create else [],
            "existing": not ident.create,
        }


def build(
    parent: pulumi.Resource, name: str, layout: HuaweiLayout, roles_first: Sequence[pulumi.Resource] = ()
) -> Identity:
    """`roles_first`: the custom policies the agency is granted by name (scheduler slurm's), created before it."""
    ident = layout.identity
    if not ident.create:
        return Identity(None, pulumi.Output.from_input(ident.agency_name))
    agency = huaweicloud.iam.Agency(
        f"{name}-agency",
        name=ident.agency_name,
        delegated_service_name=ident.delegated_service,
        description=f"gpu-cluster {layout.spec.name} nodes (ECS agency)",
        all_resources_roles=list(ident.roles) or None,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(roles_first) or None),
    )
    return Identity(agency, agency.name)
