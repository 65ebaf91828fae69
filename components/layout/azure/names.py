"""Names the Azure compute API limits, derived from the cluster's name with the limits as data
(catalog/capabilities/azure.yaml `computerName`)."""

from __future__ import annotations

import hashlib

from .data import computer_name_prefix_limit


def computer_name_prefix(cluster: str) -> str:
    """A scale set's computerNamePrefix: `<cluster>-` where it fits the API's limit; else the name cut short and a
    4-digit hash of the whole name, so two long names that share a beginning keep different host names."""
    limit = computer_name_prefix_limit()
    text = f"{cluster}-"
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:4]
    return f"{cluster[: limit - len(digest) - 2].rstrip('-')}-{digest}-"
