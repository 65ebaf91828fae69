"""What every AWS concern module shares: the logical name prefix, the tags and the child options."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from ..layout.aws import AwsLayout


@dataclass(frozen=True)
class Context:
    """One cluster's naming: `name` prefixes logical names; resources are children of `parent`."""

    name: str
    layout: AwsLayout
    parent: pulumi.Resource
    # encryption.key not provider: the KMS key ARN every EBS volume, filesystem and secret is encrypted with
    # (components/aws/encryption.py); None: the AWS managed keys, and no kmsKeyId input anywhere
    kms_key: pulumi.Input[str] | None = None

    @property
    def child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent)

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.layout.tags)

    def tagged(self, suffix: str) -> dict[str, str]:
        """The cluster's tags plus a `Name` the console shows (`<cluster>-<suffix>`)."""
        return {**self.layout.tags, "Name": f"{self.layout.spec.name}-{suffix}"}
