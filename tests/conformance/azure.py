"""Azure conformance (issue 26): a plan's `azure-native:` resources, each turned into the ARM request the
azure-native provider sends, checked against the Azure SDK's own models (`azure_models`) and the rules their
docstrings state (`azure_rules`).

The ARM request, as azure-native builds it (pulumi-azure-native provider/pkg/convert/sdkInputsToRequestBody.go,
`SdkInputsToRequestBody`): the inputs that are the operation's URL parameters (`resourceGroupName`,
`vmScaleSetName`, ...) go into the URL, every other input goes into the body under its own name, a property the
API nests under `properties` (`x-ms-client-flatten`, in azure-native a `Containers: ["properties"]`) is moved
there, and a string set (`identity.userAssignedIdentities`: a list of ids as an input) becomes a map of the ids to
`{}` (`IsStringSet`). A resource's own name, when not given, is what the provider generates
(provider/provider.go `getDefaultName`, `AutoNameRandom`: the logical name and 8 random hex digits, no separator;
a GUID where the SDK says the name "can be any valid GUID").

The body is checked property by property against the operation's body model (`azure_models.fields`): every key is
a JSON property of its model (or of its `properties`), none is read-only, types match, enum values are among the
model's known values (case-insensitively: ARM compares them so), required properties are present; then the SDK
deserializes it (msrest models: `deserialize` and `validate`, with their `_validation` lengths and patterns).
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import azure_rules
from .azure_models import Field, Kind, Operation, by_input_name, fields, models_package, operation, param_doc
from .gcp_schema import unknown

SAMPLE_SUFFIX = "0a1b2c3d"  # what azure-native's 8 random hex digits stand for here

# azure-native type token -> the SDK operation that creates it (package, operations class, method)
OPERATIONS: dict[str, tuple[str, str, str]] = {
    "azure-native:compute:VirtualMachineScaleSet": (
        "azure.mgmt.compute",
        "VirtualMachineScaleSetsOperations",
        "begin_create_or_update",
    ),
    "azure-native:compute:VirtualMachine": (
        "azure.mgmt.compute",
        "VirtualMachinesOperations",
        "begin_create_or_update",
    ),
    "azure-native:compute:AvailabilitySet": ("azure.mgmt.compute", "AvailabilitySetsOperations", "create_or_update"),
    # monitoring.logs: the Azure Monitor Agent on a single VM, the workspace, its rule and the rule's associations
    "azure-native:operationalinsights:Workspace": (
        "azure.mgmt.loganalytics",
        "WorkspacesOperations",
        "begin_create_or_update",
    ),
    "azure-native:monitor:DataCollectionRule": ("azure.mgmt.monitor", "DataCollectionRulesOperations", "create"),
    # monitoring.prometheus managed on AKS: the add-on's data collection endpoint
    "azure-native:monitor:DataCollectionEndpoint": (
        "azure.mgmt.monitor",
        "DataCollectionEndpointsOperations",
        "create",
    ),
    # monitoring.notify: the Azure Monitor workspace and the action group
    "azure-native:monitor:AzureMonitorWorkspace": ("azure.mgmt.monitor", "AzureMonitorWorkspacesOperations", "create"),
    "azure-native:monitor:ActionGroup": ("azure.mgmt.monitor", "ActionGroupsOperations", "create_or_update"),
    # monitoring.prometheus managed with grafanaAdmins: Azure Managed Grafana (azure-mgmt-dashboard 2.0.0)
    "azure-native:dashboard:Grafana": ("azure.mgmt.dashboard", "GrafanaOperations", "begin_create"),
    # monitoring.prometheus managed: the dashboards as Azure Monitor dashboards with Grafana (azure-mgmt-dashboard
    # 2.0.0 ManagedDashboard, API 2025-08-01: location, tags; the definition below has no model there)
    "azure-native:dashboard:Dashboard": ("azure.mgmt.dashboard", "ManagedDashboardsOperations", "begin_create"),
    "azure-native:monitor:DataCollectionRuleAssociation": (
        "azure.mgmt.monitor",
        "DataCollectionRuleAssociationsOperations",
        "create",
    ),
    "azure-native:compute:VirtualMachineExtension": (
        "azure.mgmt.compute",
        "VirtualMachineExtensionsOperations",
        "begin_create_or_update",
    ),
    "azure-native:compute:ProximityPlacementGroup": (
        "azure.mgmt.compute",
        "ProximityPlacementGroupsOperations",
        "create_or_update",
    ),
    "azure-native:compute:DiskEncryptionSet": (
        "azure.mgmt.compute",
        "DiskEncryptionSetsOperations",
        "begin_create_or_update",
    ),
    "azure-native:containerservice:ManagedCluster": (
        "azure.mgmt.containerservice",
        "ManagedClustersOperations",
        "begin_create_or_update",
    ),
    "azure-native:containerservice:AgentPool": (
        "azure.mgmt.containerservice",
        "AgentPoolsOperations",
        "begin_create_or_update",
    ),
    "azure-native:keyvault:Vault": ("azure.mgmt.keyvault", "VaultsOperations", "begin_create_or_update"),
    "azure-native:keyvault:Key": ("azure.mgmt.keyvault", "KeysOperations", "create_if_not_exist"),
    "azure-native:keyvault:Secret": ("azure.mgmt.keyvault", "SecretsOperations", "create_or_update"),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "azure.mgmt.msi.v2024_11_30",
        "UserAssignedIdentitiesOperations",
        "create_or_update",
    ),
    "azure-native:authorization:RoleAssignment": (
        "azure.mgmt.authorization.v2022_04_01",
        "RoleAssignmentsOperations",
        "create",
    ),
    "azure-native:authorization:RoleDefinition": (
        "azure.mgmt.authorization.v2022_04_01",
        "RoleDefinitionsOperations",
        "create_or_update",
    ),
    "azure-native:network:NetworkSecurityGroup": (
        "azure.mgmt.network",
        "NetworkSecurityGroupsOperations",
        "begin_create_or_update",
    ),
    "azure-native:network:Subnet": ("azure.mgmt.network", "SubnetsOperations", "begin_create_or_update"),
    "azure-native:network:VirtualNetwork": (
        "azure.mgmt.network",
        "VirtualNetworksOperations",
        "begin_create_or_update",
    ),
    "azure-native:network:PublicIPAddress": (
        "azure.mgmt.network",
        "PublicIPAddressesOperations",
        "begin_create_or_update",
    ),
    "azure-native:network:NatGateway": ("azure.mgmt.network", "NatGatewaysOperations", "begin_create_or_update"),
    "azure-native:network:LoadBalancer": ("azure.mgmt.network", "LoadBalancersOperations", "begin_create_or_update"),
    "azure-native:network:BastionHost": ("azure.mgmt.network", "BastionHostsOperations", "begin_create_or_update"),
    "azure-native:network:NetworkInterface": (
        "azure.mgmt.network",
        "NetworkInterfacesOperations",
        "begin_create_or_update",
    ),
    "azure-native:network:PrivateEndpoint": (
        "azure.mgmt.network",
        "PrivateEndpointsOperations",
        "begin_create_or_update",
    ),
    "azure-native:network:PrivateDnsZoneGroup": (
        "azure.mgmt.network",
        "PrivateDnsZoneGroupsOperations",
        "begin_create_or_update",
    ),
    "azure-native:resources:ResourceGroup": (
        "azure.mgmt.resource.resources",
        "ResourceGroupsOperations",
        "create_or_update",
    ),
    "azure-native:storage:StorageAccount": ("azure.mgmt.storage", "StorageAccountsOperations", "begin_create"),
    "azure-native:storage:FileShare": ("azure.mgmt.storage", "FileSharesOperations", "create"),
    "azure-native:storagecache:AmlFilesystem": (
        "azure.mgmt.storagecache",
        "AmlFilesystemsOperations",
        "begin_create_or_update",
    ),
    # slurm.accounting: the MySQL Flexible Server, its database and server parameter
    "azure-native:dbformysql:Server": ("azure.mgmt.mysqlflexibleservers", "ServersOperations", "begin_create"),
    "azure-native:dbformysql:Database": (
        "azure.mgmt.mysqlflexibleservers",
        "DatabasesOperations",
        "begin_create_or_update",
    ),
    "azure-native:dbformysql:Configuration": (
        "azure.mgmt.mysqlflexibleservers",
        "ConfigurationsOperations",
        "begin_create_or_update",
    ),
    # the private DNS zones (the Slurm Key Vault's privatelink zone, the MySQL server's zone) and their VNet links
    "azure-native:privatedns:PrivateZone": (
        "azure.mgmt.privatedns",
        "PrivateZonesOperations",
        "begin_create_or_update",
    ),
    "azure-native:privatedns:VirtualNetworkLink": (
        "azure.mgmt.privatedns",
        "VirtualNetworkLinksOperations",
        "begin_create_or_update",
    ),
}
UNCOVERED = {
    "azure-native:monitor:AutoscaleSetting": "azure-mgmt-monitor is not installed (no SDK model to check against)",
    "azure-native:servicebus:Namespace": "azure-mgmt-servicebus is not installed",
    "azure-native:servicebus:Queue": "azure-mgmt-servicebus is not installed",
    # budget: the Consumption budget's model is in azure-mgmt-consumption, not in the dev group (uv.lock unchanged)
    "azure-native:consumption:Budget": "azure-mgmt-consumption is not installed",
}
# Types no published Azure SDK for Python models: checked by hand in their own tests instead
NO_SDK_MODEL = {
    # monitoring.notify: azure-mgmt-alertsmanagement 1.0.1, the newest on PyPI, has no PrometheusRuleGroups
    # operations (tests/test_azure_alerts.py checks the rule group's interval, severities and durations)
    "azure-native:alertsmanagement:PrometheusRuleGroup": (
        "no Azure SDK for Python models it (azure-mgmt-alertsmanagement 1.0.1)"
    ),
    # prometheus managed: tests/test_azure_portal_dashboards.py checks its name, parent and serializedData
    "azure-native:dashboard:DashboardDefinition": (
        "no Azure SDK for Python models it (azure-mgmt-dashboard 2.0.0 has ManagedDashboard, no dashboardDefinitions)"
    ),
}
UNCOVERED.update(NO_SDK_MODEL)


@dataclass(frozen=True)
class ArmRequest:
    type: str
    operation: Operation
    path: dict[str, Any]  # URL parameters (camelCase)
    body: dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    resource: str
    type: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.type} {self.resource}: {self.where}: {self.message}"


@dataclass
class Build:
    """One body being built and checked against its model."""

    problems: list[tuple[str, str]] = field(default_factory=list)

    def add(self, where: str, message: str) -> None:
        self.problems.append((where, message))

    def value(self, where: str, kind: Kind, value: Any, owner: type, f: Field | None) -> Any:
        """The body's value for an input value, checked; the rules stated on `f` see what is sent."""
        sent = self.convert(where, kind, value, owner)
        if f is not None and sent is not None and not unknown(sent):
            for message in azure_rules.apply(owner, f.attr, sent):
                self.add(where, message)
        return sent

    def convert(self, where: str, kind: Kind, value: Any, owner: type) -> Any:
        if value is None or unknown(value):
            return value
        if kind.name == "model" and kind.model is not None:
            if not isinstance(value, dict):
                self.add(where, f"expected an object ({kind.model.__name__}), got {type(value).__name__}")
                return value
            return self.model(where, kind.model, value)
        if kind.name == "list":
            if not isinstance(value, list):
                self.add(where, f"expected an array, got {type(value).__name__}")
                return value
            return [self.value(f"{where}[{i}]", kind.item or Kind("any"), v, owner, None) for i, v in enumerate(value)]
        if kind.name == "dict":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return {v: {} for v in value}  # azure-native IsStringSet: a list of ids becomes a map
            if not isinstance(value, dict):
                self.add(where, f"expected an object, got {type(value).__name__}")
                return value
            return {k: self.value(f"{where}.{k}", kind.item or Kind("any"), v, owner, None) for k, v in value.items()}
        self.scalar(where, kind, value)
        return value

    def scalar(self, where: str, kind: Kind, value: Any) -> None:
        expected = {"str": str, "int": int, "float": (int, float), "bool": bool, "enum": str}.get(kind.name)
        if expected is None:
            return
        if (kind.name in ("int", "float") and isinstance(value, bool)) or not isinstance(value, expected):
            self.add(where, f"expected {kind.name}, got {type(value).__name__} {value!r}")
        elif kind.name == "enum" and kind.values and value.lower() not in {v.lower() for v in kind.values}:
            self.add(where, f"{value!r} is not one of the known values {list(kind.values)}")

    def model(self, where: str, cls: type, value: dict[str, Any]) -> dict[str, Any]:
        """Input object -> body object: each key a JSON property of `cls`, or of its `properties` (flattened),
        under its wire name."""
        own = fields(cls)
        nested = own.get("properties")
        inner_cls = nested.kind.model if nested is not None and not nested.container else None
        out: dict[str, Any] = {}
        for message in azure_rules.apply(cls, "", value):
            self.add(where, message)
        for key, item in value.items():
            found = self.match(cls, inner_cls, key)
            if found is None:
                self.add(f"{where}.{key}", f"unknown property: {cls.__name__} has no {key!r} (nor its properties)")
                continue
            owner, f, container = found
            target = out
            for part in container:
                target = target.setdefault(part, {})
            here = ".".join([where, *container, f.rest])
            if f.readonly:
                self.add(here, f"read-only ({owner.__name__}.{f.attr}): the API does not take it")
                continue
            if f.rest == "tags" and not container:
                self.problems += [(here, m) for m in azure_rules.tags(item)]
            target[f.rest] = self.value(here, f.kind, item, owner, f)
            self.validation(here, f, item)
        self.required(where, cls, own, out)
        if inner_cls is not None and "properties" in out:
            self.required(f"{where}.properties", inner_cls, fields(inner_cls), out["properties"])
        return out

    @staticmethod
    def match(cls: type, inner: type | None, key: str) -> tuple[type, Field, tuple[str, ...]] | None:
        """The field an input key is: the model's own or its `properties`' (azure-native flattens these), a
        writable one first (an agent pool's `type` is `properties.type`; the top-level `type` is read-only)."""
        own = [(cls, f, f.container) for f in by_input_name(cls).get(key, [])]
        nested = [(inner, f, ("properties",)) for f in by_input_name(inner).get(key, [])] if inner else []
        candidates = own + nested
        return next((c for c in candidates if not c[1].readonly), candidates[0] if candidates else None)

    def required(self, where: str, cls: type, own: dict[str, Field], out: dict[str, Any]) -> None:
        for key, f in own.items():
            if not f.required or f.readonly:
                continue
            target: Any = out
            for part in f.container:
                target = target.get(part, {}) if isinstance(target, dict) else {}
            if not isinstance(target, dict) or target.get(key) is None:
                self.add(f"{where}.{key}", f"required ({cls.__name__}.{f.attr})")

    def validation(self, where: str, f: Field, value: Any) -> None:
        """msrest `_validation` (lengths, pattern, bounds), as its `Serializer.validate` reads them."""
        rules = f.validation
        if not rules or value is None or unknown(value):
            return
        if isinstance(value, str | list):
            if "max_length" in rules and len(value) > rules["max_length"]:
                self.add(where, f"longer than {rules['max_length']}")
            if "min_length" in rules and len(value) < rules["min_length"]:
                self.add(where, f"shorter than {rules['min_length']}")
        if isinstance(value, str) and "pattern" in rules and not re.search(rules["pattern"], value):
            self.add(where, f"{value!r} does not match {rules['pattern']}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if "minimum" in rules and value < rules["minimum"]:
                self.add(where, f"{value} is below {rules['minimum']}")
            if "maximum" in rules and value > rules["maximum"]:
                self.add(where, f"{value} is above {rules['maximum']}")


def autoname(logical: str, op: Operation, param: str) -> str:
    """The name azure-native generates: a GUID where the SDK asks for one, else NAME and 8 hex digits."""
    if "GUID" in param_doc(op, param):
        return str(uuid.UUID(int=0x0A1B2C3D))
    return f"{logical}{SAMPLE_SUFFIX}"


def request(res: dict[str, Any], index: dict[str, dict[str, Any]]) -> tuple[ArmRequest, list[tuple[str, str]]]:
    """A resource's ARM request, and what building its body refused."""
    op = operation(*OPERATIONS[res["type"]])
    inputs = dict(res["inputs"])
    path: dict[str, Any] = {}
    for name in op.path:
        value = inputs.pop(name, None)
        if value is None and name == op.path[-1]:
            value = autoname(res["name"], op, name)
        path[name] = resolve(value, index)
    build = Build()
    inputs.pop("azureApiVersion", None)  # azure-native picks the API version; not a body property
    body = build.model("body", op.body, resolve(inputs, index))
    for name, value in path.items():
        for message in azure_rules.apply_param(op, name, value):
            build.add(f"path {name}", message)
    build.problems += [("body", m) for m in deserialize(op.body, body)]
    return ArmRequest(res["type"], op, path, body), build.problems


def resolve(value: Any, index: dict[str, dict[str, Any]]) -> Any:
    """`<autoname:NAME>` -> what azure-native generates for NAME; other placeholders kept."""
    if isinstance(value, str):
        m = re.fullmatch(r"<autoname:([^<>]+)>", value)
        if m and m.group(1) in index:
            other = index[m.group(1)]
            if other["type"] in OPERATIONS:
                op = operation(*OPERATIONS[other["type"]])
                return autoname(m.group(1), op, op.path[-1])
            return f"{m.group(1)}{SAMPLE_SUFFIX}"
        return value
    if isinstance(value, list):
        return [resolve(v, index) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, index) for k, v in value.items()}
    return value


def deserialize(cls: type, body: dict[str, Any]) -> list[str]:
    """The SDK reads the body back: msrest `deserialize` then `validate`; a hybrid model's every field read."""
    try:
        if hasattr(cls, "_attribute_map"):  # what the operation does with its body: Serializer.body
            module = sys.modules[cls.__module__]
            models = models_package(cls)
            serializer = module._serialization.Serializer(
                {k: v for k, v in vars(models).items() if isinstance(v, type)}
            )
            serializer.body(body, cls.__name__)
        else:
            _touch(cls(body))
    except Exception as exc:  # what the SDK raises on a body it cannot read is the finding
        return [f"the SDK cannot read the body: {type(exc).__name__}: {exc}"]
    return []


def _touch(value: Any) -> None:
    if hasattr(value, "_attr_to_rest_field"):
        for attr in value._attr_to_rest_field:
            _touch(getattr(value, attr))
    elif isinstance(value, list):
        for v in value:
            _touch(v)
    elif isinstance(value, dict):
        for v in value.values():
            _touch(v)


@dataclass(frozen=True)
class Report:
    refusals: list[Refusal]
    checked: dict[str, int]
    uncovered: dict[str, str]

    def text(self) -> str:
        return "\n".join(str(r) for r in self.refusals)


def check_resources(resources: Iterable[dict[str, Any]]) -> Report:
    """Every `azure-native:` resource of a plan (`Registered.as_json()` dicts), as an ARM request, checked."""
    listed = [r for r in resources if r["type"].startswith("azure-native:")]
    index = {r["name"]: r for r in listed}
    refusals: list[Refusal] = []
    checked: dict[str, int] = {}
    uncovered: dict[str, str] = {}
    for res in listed:
        if res["type"] not in OPERATIONS:
            uncovered[res["type"]] = UNCOVERED.get(res["type"], "no SDK operation mapped (tests/conformance/azure.py)")
            continue
        _, problems = request(res, index)
        refusals += [Refusal(res["name"], res["type"], w, m) for w, m in problems]
        checked[res["type"]] = checked.get(res["type"], 0) + 1
    return Report(refusals, checked, uncovered)
