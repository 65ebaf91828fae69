"""GCP conformance (issue 26): a plan's `gcp:` resources, each translated into the REST requests the Terraform
google-beta provider sends (`gcp_requests`, `gcp_services`: one translator per type, citing the provider function),
checked against the discovery documents google-api-python-client ships (`gcp_schema`: unknown and output-only
properties, types, enums, patterns, required properties, the documented name and label rules).

`check_resources(plan_resources)` returns a `Report`: the refusals, how many resources of each type were checked,
and the types not (fully) checked with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from . import gcp_rules, gcp_services
from .gcp_schema import Refusal, Request, check_request

__all__ = ["GA", "Refusal", "Report", "Request", "check_request", "check_resources", "translate"]

# The documents the google-beta provider sends to, and their GA versions: `check_resources(..., ga=True)` holds a
# plan to the GA documents too, so a field only the beta API takes shows (method ids are the same in both).
GA = {"compute.beta": "compute.v1", "container.v1beta1": "container.v1", "file.v1beta1": "file.v1"}


@dataclass(frozen=True)
class Report:
    refusals: list[Refusal]
    checked: dict[str, int]  # type -> resources translated and checked
    uncovered: dict[str, str]  # type -> what is not checked, and why

    def text(self) -> str:
        return "\n".join(str(r) for r in self.refusals)


def translate(res: dict[str, Any], resources: Iterable[dict[str, Any]] = ()) -> tuple[list[Request], list[Refusal]]:
    """One resource's requests, and what its translation itself found (name rules, inputs nobody translates)."""
    index = {r["name"]: r for r in resources}
    index.setdefault(res["name"], res)
    ctx = gcp_services.Context(res["name"], res["type"], index)
    requests = gcp_services.TRANSLATORS[res["type"]](dict(res["inputs"]), ctx)
    return requests, [Refusal(res["name"], res["type"], w, m) for w, m in ctx.problems]


def check_resources(resources: Iterable[dict[str, Any]], ga: bool = False) -> Report:
    """Every `gcp:` resource of a plan (`Registered.as_json()` dicts), translated and checked against the documents
    the provider sends to (or, `ga`, their GA versions)."""
    listed = [r for r in resources if r["type"].startswith("gcp:")]
    refusals: list[Refusal] = []
    checked: dict[str, int] = {}
    uncovered: dict[str, str] = {}
    for res in listed:
        if res["type"] in gcp_services.UNCOVERED:
            uncovered[res["type"]] = gcp_services.UNCOVERED[res["type"]]
        if res["type"] not in gcp_services.TRANSLATORS:
            uncovered.setdefault(res["type"], "no translation written (tests/conformance/gcp_services.py)")
            continue
        requests, found = translate(res, listed)
        refusals += found
        for req in requests:
            if ga:
                req = replace(req, api=GA.get(req.api, req.api))
            refusals += [Refusal(res["name"], res["type"], w, m) for w, m in check_request(req, gcp_rules.apply)]
        checked[res["type"]] = checked.get(res["type"], 0) + 1
    return Report(refusals, checked, uncovered)
