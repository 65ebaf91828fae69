"""The bill of what a plan runs: every item that bills, fixed or per node, with its price and source, or unpriced.

`bill_items(spec, layout, shared)` reads the spec and the layout (what the cloud package is told to build), not the
registered resources: the GPU nodes (catalog/<cloud>.yaml), their boot and scratch disks, the Slurm head and login
VMs, the Kubernetes control plane and system pool, the NAT gateway and its public address, the serving load
balancer, the cluster's encryption key and a Kubernetes Secrets key, Azure Bastion and the shared filesystem,
priced from catalog/prices/<cloud>.yaml. Traffic (per GB) is not counted: it depends on use, not on the plan.
`totals(items, ...)` adds them per currency: fixed costs apart from per-node costs, per hour and per month (730 h)
at nodes, minNodes and maxNodes; an item without a sourced price is never added and is listed by name in
`notCounted`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..catalog import accounting, fixed_prices, serving
from ..catalog import load as load_catalog
from ..catalog import monitoring as catalog_monitoring
from ..catalog.fixed_prices import HOURS_PER_MONTH, Price, tier_for
from ..spec import ClusterSpec

Per = Literal["stack", "node"]


@dataclass(frozen=True)
class BillItem:
    item: str  # a stable key: gpuNode, bootDisk, headNode, loginNode, systemPool, controlPlane, natGateway, ...
    name: str  # what the user reads
    count: int  # units per stack (per: stack) or per node (per: node)
    per: Per  # what drives it: fixed for the stack, or once per GPU node
    hourly_each: float | None  # price per unit per hour (a GB-month or monthly price converted at 730 h)
    price: str  # the price as the source gives it ("0.045/h", "0.08/GB-month x 200 GB", ...)
    currency: str
    region: str | None
    date: str | None
    source: str | None
    unpriced: str | None  # why it has no price (None: priced)
    partition: str | None = None  # per: node of an elastic Slurm partition: counted by its own node counts

    @property
    def hourly(self) -> float | None:
        """Per hour for the stack (per: stack) or for one GPU node (per: node)."""
        return None if self.hourly_each is None else self.hourly_each * self.count

    def as_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "name": self.name,
            "count": self.count,
            "per": self.per,
            "hourly": None if self.hourly is None else round(self.hourly, 6),
            "price": self.price if self.unpriced is None else None,
            "currency": self.currency,
            "region": self.region,
            "date": self.date,
            "source": self.source,
            "unpriced": self.unpriced,
            **({"partition": self.partition} if self.partition else {}),
        }


# compliance mlps3's trail as the bill names it, per cloud that builds one
AUDIT_TRAILS = {"alicloud": "audit trail (ActionTrail to SLS)", "tencentcloud": "audit trail (CloudAudit to CLS)"}


def _unpriced(item: str, name: str, count: int, per: Per, price: Price, why: str) -> BillItem:
    return BillItem(item, name, count, per, None, "", price.currency, price.region, price.date, None, why)


def _other_sku(price: Price, chosen: str | None) -> str | None:
    """Why `price` does not apply: it is for another SKU, tier or disk type than the layout chose (None: it applies;
    a layout that does not say which one leaves the price as the data file gives it)."""
    if price.sku is None or chosen is None or chosen == price.sku:
        return None
    return f"priced for {price.sku} only; the layout's is {chosen}"


def _priced(item: str, name: str, count: int, per: Per, price: Price, sku: str | None = None) -> BillItem:
    other = _other_sku(price, sku)
    if other is not None:
        return _unpriced(item, name, count, per, price, other)
    if price.hourly is None:
        return BillItem(item, name, count, per, None, "", price.currency, price.region, price.date, None,
                        price.unpriced or "no sourced price")  # fmt: skip
    return BillItem(item, name, count, per, price.hourly, price.text, price.currency, price.region, price.date,
                    price.source, None)  # fmt: skip


def _gpu_node(spec: ClusterSpec, prices: fixed_prices.CloudPrices) -> BillItem:
    row, data = spec.instance, load_catalog(spec.cloud).prices
    name = f"GPU node {row.instanceType}"
    if row.hourlyUsd is None:  # no USD price: the cloud's own currency where a source gives one (Alibaba: CNY)
        local = prices.instance(row.instanceType, spec.region)
        if local.hourly is not None:
            return _priced("gpuNode", name, 1, "node", local)
        why = row.priceNote or f"no public on-demand price in catalog/{spec.cloud}.yaml; {local.unpriced}"
        return BillItem("gpuNode", name, 1, "node", None, "", prices.currency, local.region, None, None, why)
    source = " ".join(str(data.get("source") or row.source or "").split()) or None
    date = None if data.get("date") is None else str(data.get("date"))
    upper = " (spot: an upper bound)" if spec.spot else ""  # the plan's figures are on-demand prices
    return BillItem("gpuNode", name, 1, "node", row.hourlyUsd, f"{row.hourlyUsd:g}/h on demand{upper}", "USD",
                    data.get("region"), date, source, None)  # fmt: skip


def _tiered_disk(item: str, name: str, gb: float, price: Price) -> BillItem:
    """A disk billed per size tier (Azure managed disks): the smallest tier that holds `gb`, at its monthly price."""
    tier = tier_for(price.tiers, gb)
    if tier is None or tier.monthly is None:
        which = "no tier holds it" if tier is None else f"its tier {tier.name} ({tier.gb:,} GB) has no sourced price"
        return _unpriced(item, name, 1, "node", price, f"{price.sku or 'the disk'} is billed per size tier: {which}")
    return BillItem(item, name, 1, "node", tier.monthly / HOURS_PER_MONTH,
                    f"{tier.name} ({tier.gb:,} GB tier) {tier.monthly:g}/month for {gb:,.0f} GB", price.currency,
                    price.region, price.date, price.source, None)  # fmt: skip


def _disk(item: str, what: str, gb: float, prices: fixed_prices.CloudPrices, sku: str | None) -> BillItem:
    """A per-node cloud disk of `gb` GB of the type the layout chose (`sku`), at the cloud's GB-month price (at 730 h),
    its size tier's monthly price, or unpriced."""
    price = prices.item(item)
    name = f"{what} {gb:,.0f} GB per node"
    other = _other_sku(price, sku)
    if other is not None:
        return _unpriced(item, name, 1, "node", price, other)
    if price.tiers:
        return _tiered_disk(item, name, gb, price)
    if price.per_gb_month is None:
        return _priced(item, name, 1, "node", price)
    rate = f"{price.per_gb_hour:g}/GB-hour" if price.per_gb_hour is not None else f"{price.per_gb_month:g}/GB-month"
    return BillItem(item, name, 1, "node", price.per_gb_month * gb / HOURS_PER_MONTH, f"{rate} x {gb:,.0f} GB",
                    price.currency, price.region, price.date, price.source, None)  # fmt: skip


def _disk_skus(layout: Any) -> tuple[str | None, str | None]:
    """The disk types the layout chose for the boot and the scratch disk (GCP boot/scratch_disk_type, Azure
    os_disk_type and the scratch data disk's storage_account_type); None where a layout does not say."""
    boot = getattr(layout, "boot_disk_type", None) or getattr(layout, "os_disk_type", None)
    if getattr(layout, "aks", None) is not None:  # AKS pools: os_disk_type Managed, AKS picks the disk's SKU
        boot = "an AKS-managed OS disk (its SKU chosen by AKS)"
    scratch_disk = getattr(layout, "scratch_disk", None)
    scratch = getattr(layout, "scratch_disk_type", None) or getattr(scratch_disk, "storage_account_type", None)
    return boot, scratch


def _disks(spec: ClusterSpec, layout: Any, prices: fixed_prices.CloudPrices) -> list[BillItem]:
    boot_sku, scratch_sku = _disk_skus(layout)
    disks = [_disk("bootDisk", "boot disk", spec.storage.root_gb, prices, boot_sku)]
    scratch = getattr(layout, "scratch", None)
    if scratch is not None and scratch.kind == "disk":  # a cloud disk per node (local NVMe is in the node's price)
        if scratch.total_gb is None:
            why = "its size is not known to the layout"
            disks.append(BillItem("scratchDisk", "scratch disk per node", 1, "node", None, "", prices.currency,
                                  prices.region, prices.date, None, why))  # fmt: skip
        else:
            disks.append(_disk("scratchDisk", "scratch disk", scratch.total_gb, prices, scratch_sku or boot_sku))
    return disks


def _control_plane_sku(layout: Any) -> str | None:
    """The control plane tier the layout chose: AKS sku tier (Free / Standard), ACK cluster spec (ack.pro.small)."""
    aks = getattr(layout, "aks", None)
    if aks is not None:
        return str(aks.sku_tier)
    spec = getattr(getattr(layout, "kubernetes", None), "cluster_spec", None)
    return None if spec is None else str(spec)


def _shared(shared: dict[str, Any] | None) -> list[BillItem]:
    if not shared or shared.get("kind") == "existing":
        return []  # an existing filesystem is billed wherever it was made, not by this stack
    name = f"shared filesystem {shared['service']}"
    monthly = shared.get("monthlyUsd")
    if monthly is None:
        why = shared.get("priceSource") or "no sourced price in catalog/storage"
        return [BillItem("sharedStorage", name, 1, "stack", None, "", "USD", None, None, None, why)]
    return [BillItem("sharedStorage", name, 1, "stack", float(monthly) / HOURS_PER_MONTH, f"{monthly:g}/month",
                     "USD", None, None, shared.get("priceSource"), None)]  # fmt: skip


def _bastion(layout: Any, prices: fixed_prices.CloudPrices) -> list[BillItem]:
    bastion = getattr(layout, "bastion", None)
    if bastion is None:
        return []
    name = f"Azure Bastion {bastion.sku}"
    address = _priced("bastionPublicIp", "Azure Bastion public IP", 1, "stack", prices.item("publicIp"))
    if bastion.hourly_usd is None:
        return [BillItem("bastion", name, 1, "stack", None, "", "USD", None, None, None, bastion.price_note), address]
    return [BillItem("bastion", name, 1, "stack", bastion.hourly_usd, f"{bastion.hourly_usd:g}/h", "USD", None,
                     None, bastion.price_note, None), address]  # fmt: skip


def _accounting(spec: ClusterSpec, prices: fixed_prices.CloudPrices) -> list[BillItem]:
    """slurm.accounting: the managed database that runs always, and its storage (catalog/accounting.yaml)."""
    if spec.slurm is None or not spec.slurm.accounting:
        return []
    offer = accounting.cloud_offer(spec.cloud)
    name = f"Slurm accounting database {offer.get('instanceClass', '')}".rstrip()
    items = [_priced("accountingDatabase", name, 1, "stack", prices.item("accountingDatabase"))]
    storage, gb = prices.item("accountingDatabaseStorage"), float(offer.get("storageGb", 0))
    if storage.per_gb_month is None or not gb:
        return [*items, _priced("accountingDatabaseStorage", "its storage", 1, "stack", storage)]
    return [*items, BillItem("accountingDatabaseStorage", f"its storage {gb:,.0f} GB", 1, "stack",
                             storage.per_gb_month * gb / HOURS_PER_MONTH, f"{storage.per_gb_month:g}/GB-month x "
                             f"{gb:,.0f} GB", storage.currency, storage.region, storage.date, storage.source,
                             None)]  # fmt: skip


def bill_items(spec: ClusterSpec, layout: Any, shared: dict[str, Any] | None) -> list[BillItem]:
    """Every item the stack bills for, from the spec and the layout (the plan's `summary.costs.items`)."""
    prices = fixed_prices.load(spec.cloud)
    items = [_gpu_node(spec, prices), *_disks(spec, layout, prices)] if not spec.partitions else []
    for part in getattr(layout, "partitions", ()):  # elastic Slurm partitions: their nodes, at their own counts
        sub = part.layout
        items += [
            replace(item, name=f"{part.name}: {item.name}", partition=part.name)
            for item in (_gpu_node(sub.spec, prices), *_disks(sub.spec, sub, prices))
        ]
    if spec.slurm is not None and spec.slurm.head_instance_type:
        head = spec.slurm.head_instance_type
        items.append(_priced("headNode", f"Slurm head {head}", 1, "stack", prices.instance(head, spec.region)))
    if spec.login is not None and spec.login.instance_type:
        login = spec.login.instance_type
        items.append(_priced("loginNode", f"login node {login}", 1, "stack", prices.instance(login, spec.region)))
    if spec.kubernetes is not None:
        kube = spec.kubernetes
        control = prices.item("controlPlane")
        items.append(
            _priced("controlPlane", "Kubernetes control plane", 1, "stack", control, _control_plane_sku(layout))
        )
        system = kube.system_instance_type
        items.append(
            _priced(
                "systemPool", f"system pool {system}", kube.system_nodes, "stack", prices.instance(system, spec.region)
            )
        )
    if spec.network.egress == "nat":
        nat = prices.item("natGateway")
        if nat.per_vm:  # GCP Cloud NAT: billed per VM using it, the GPU nodes and the fixed VMs
            items.append(_priced("natGateway", "Cloud NAT (per GPU node)", 1, "node", nat))
            fixed_vms = sum(i.count for i in items if i.item in ("headNode", "loginNode", "systemPool"))
            if fixed_vms:
                items.append(_priced("natGatewayFixedVms", "Cloud NAT (head, login, system VMs)", fixed_vms, "stack",
                                     nat))  # fmt: skip
        else:
            items.append(_priced("natGateway", "NAT gateway", 1, "stack", nat))
        items.append(_priced("publicIp", "NAT gateway public IP", 1, "stack", prices.item("publicIp")))
    vm_names = [i.name for i in items if i.item in ("headNode", "loginNode", "systemPool")]
    if vm_names:  # their disk sizes are set by the cloud packages, not held by the layout
        why = "their size is set in the cloud package, not in the layout the bill reads"
        items.append(BillItem("fixedVmDisks", f"boot disks of {', '.join(vm_names)}", 1, "stack", None, "",
                              prices.currency, prices.region, prices.date, None, why))  # fmt: skip
    serve = spec.serve
    if serve is not None and serving.offer(spec.cloud) is not None:
        # serve: the endpoint's load balancer bills by the hour (its capacity units by traffic)
        for item, name in serving.bill_items(spec.cloud, serve.public, serve.certificate, serve.requests_per_node):
            items.append(_priced(item, name, 1, "stack", prices.item(item)))
    items += _accounting(spec, prices)
    if spec.encryption_key == "auto":  # one customer-managed key per cluster (a key id given is billed elsewhere)
        # a key in an existing KMS instance (Alibaba encryption.kmsInstance) is billed with that instance
        which = "encryptionKeyInInstance" if spec.encryption_kms_instance else "encryptionKey"
        items.append(_priced(which, "the cluster's encryption key", 1, "stack", prices.item(which)))
    if spec.kubernetes is not None and getattr(getattr(layout, "kubernetes", None), "secrets_key", None):
        # ACK and TKE wrap the cluster's Secrets with a KMS key of its own, made beside any encryption.key
        items.append(_priced("kubernetesSecretsKey", "the Kubernetes Secrets' KMS key", 1, "stack",
                             prices.item("encryptionKey")))  # fmt: skip
    if getattr(layout, "audit", None) is not None:  # compliance mlps3: the trail and the log store it delivers to
        trail = AUDIT_TRAILS.get(spec.cloud, "audit trail")
        items.append(_priced("auditTrail", trail, 1, "stack", prices.item("auditTrail")))
    items += _bastion(layout, prices)
    items += _shared(shared)
    items += _monitoring(spec, prices)
    return items


def _monitoring(spec: ClusterSpec, prices: fixed_prices.CloudPrices) -> list[BillItem]:
    """monitoring.logs, .notify and prometheus managed: the cloud's log service, alert path and workspace bill by use
    (GB ingested, samples written, notifications sent), so they are named and never counted (prices/<cloud>.yaml
    says why)."""
    items = []
    logs = catalog_monitoring.logs(spec.cloud)
    if spec.monitoring.logs.enabled and logs is not None:
        items.append(_priced("logs", f"the nodes' logs in {logs['service']}", 1, "stack", prices.item("logs")))
    managed = catalog_monitoring.managed(spec.cloud)
    if spec.prometheus == "managed" and managed is not None:
        # a Kubernetes cluster's own route where the cloud names one (Alibaba: a container environment on ACK)
        service = (managed.get("kubernetes") or {}).get("service") if spec.kubernetes else None
        items.append(
            _priced("managedPrometheus", service or managed["service"], 1, "stack", prices.item("managedPrometheus"))
        )
        grafana = managed.get("managedGrafana") or {}
        if (
            spec.monitoring.grafana_admins and "service" in grafana
        ):  # billed per admin (prices/<cloud>.yaml managedGrafana)
            admins = len(spec.monitoring.grafana_admins)
            name = f"{grafana['service']} (monitoring.grafanaAdmins: {admins} admin license(s))"
            items.append(_priced("managedGrafana", name, admins, "stack", prices.item("managedGrafana")))
    notify = catalog_monitoring.notify(spec.cloud)
    if spec.monitoring.notify and notify is not None:
        items.append(_priced("alerts", f"alert delivery: {notify['service']}", 1, "stack", prices.item("alerts")))
    return items


def _money(value: float) -> float:
    return round(value, 2)


def totals(
    items: list[BillItem],
    nodes: int,
    min_nodes: int,
    max_nodes: int,
    partitions: Mapping[str, tuple[int, int, int]] | None = None,
) -> dict[str, Any]:
    """Per currency: fixed and per-node hourly, and per hour / per month at nodes, minNodes and maxNodes (an elastic
    partition's items at its own (nodes, minNodes, maxNodes) from `partitions`)."""
    counts = {"nodes": nodes, "minNodes": min_nodes, "maxNodes": max_nodes}
    keys = tuple(counts)

    def count(item: BillItem, key: str) -> int:
        if item.partition is None or partitions is None:
            return counts[key]
        return partitions[item.partition][keys.index(key)]

    by_currency: dict[str, dict[str, Any]] = {}
    for currency in dict.fromkeys(i.currency for i in items if i.hourly is not None):
        fixed = sum(i.hourly or 0.0 for i in items if i.currency == currency and i.per == "stack")
        nodes_of = [i for i in items if i.currency == currency and i.per == "node"]
        per_node = sum(i.hourly or 0.0 for i in nodes_of if i.partition is None)
        hourly = {key: fixed + sum((i.hourly or 0.0) * count(i, key) for i in nodes_of) for key in keys}
        by_currency[currency] = {
            "fixedHourly": _money(fixed),
            "perNodeHourly": _money(per_node),
            "hourly": {k: _money(v) for k, v in hourly.items()},
            "monthly": {k: _money(v * HOURS_PER_MONTH) for k, v in hourly.items()},
        }
    return by_currency


def costs(spec: ClusterSpec, layout: Any, shared: dict[str, Any] | None) -> dict[str, Any]:
    """`summary.costs`: the bill, its totals per currency and what is not counted, by name."""
    items = bill_items(spec, layout, shared)
    return {
        "hoursPerMonth": HOURS_PER_MONTH,
        "items": [i.as_json() for i in items],
        "totals": totals(
            items,
            spec.nodes,
            spec.min_nodes,
            spec.max_nodes,
            {p.name: (p.min_nodes, p.min_nodes, p.max_nodes) for p in spec.partitions},
        ),
        "notCounted": [f"{i.name} ({i.unpriced})" for i in items if i.unpriced is not None],
    }
