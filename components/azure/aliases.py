"""The azure-native SDK's API-version aliases, dropped from our children (docs/azure.md, "Plan cost")."""

from __future__ import annotations

from typing import Any

import pulumi


def _is_api_version_alias(alias: Any, type_: str) -> bool:
    """True for the SDK's own alias of `type_` to one of its API-version tokens, and nothing else.

    Each azure-native class adds one `Alias(type_="azure-native:<module>/v<date>:<Kind>")` per API
    version the resource ever had (29 for a VM, 61 for a NIC), so that a stack created with a versioned
    token moves to the default token without a replacement.
    """
    package, _, rest = type_.partition(":")
    module, _, kind = rest.partition(":")
    return (
        isinstance(alias, pulumi.Alias)
        and isinstance(alias.type_, str)
        and alias.type_.startswith(f"{package}:{module}/v")
        and alias.type_.endswith(f":{kind}")
        and all(getattr(alias, field) is ... for field in ("name", "parent", "stack", "project"))
    )


def drop_api_version_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """Resource transformation: drop the SDK's API-version aliases from our children, keep any other alias.

    Why: the Python SDK turns every alias into a URN `Output` chain in `Resource.__init__`, even when the
    engine takes alias specs, so these aliases were ~70 % of the CPU and ~95 % of the memory of a plan in
    `nodeGroup: instances` (docs/azure.md, "Plan cost"; pulumi/pulumi-azure-native#1493). This program
    only ever registers the default (unversioned) tokens, so no state of it can match a versioned alias:
    `pulumi up` does the same with or without them. A legacy `transformations` entry (not `transforms`)
    because it runs in-process before the SDK builds the alias URNs; `transforms` run in the engine after.
    """
    aliases = args.opts.aliases
    if not aliases:
        return None
    kept = [alias for alias in aliases if not _is_api_version_alias(alias, args.type_)]
    if len(kept) == len(aliases):
        return None
    opts = pulumi.ResourceOptions.merge(args.opts, None)  # a copy: the caller's options stay unchanged
    opts.aliases = kept or None
    return pulumi.ResourceTransformationResult(args.props, opts)
