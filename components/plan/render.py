"""Rendering a plan as a terminal table (rich), markdown (pull-request comments) or JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..catalog import monitoring as catalog_monitoring
from ..layout.kubernetes import charts
from ..layout.kubernetes_monitoring import grafana_text
from ..policy import group_violations
from . import Plan

HIDDEN_INPUTS = {"tags", "tagsAll", "userData", "tagSpecifications", "description", "__defaults"}
MAX_INLINE = 3


def _short(value: Any) -> str:
    if isinstance(value, list):
        return f"[{_count(len(value), 'item')}]"
    if isinstance(value, dict):
        return "{...}"
    text = str(value)
    return text if len(text) <= 48 else text[:45] + "..."


def key_inputs(inputs: dict[str, Any]) -> str:
    shown = [(k, v) for k, v in inputs.items() if k not in HIDDEN_INPUTS and v not in (None, "", [], {})]
    return ", ".join(f"{k}={_short(v)}" for k, v in shown[:MAX_INLINE]) + (" ..." if len(shown) > MAX_INLINE else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _gbps(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def gpus_text(s: dict[str, Any]) -> str:
    """The GPU nodes: the cluster's, or each elastic partition's range (launched while jobs need them)."""
    if s.get("partitions"):
        parts = [
            f"{p['name']}{' (default)' if p['default'] else ''} {p['minNodes']}..{p['maxNodes']} x "
            f"{p['instanceType']} ({p['gpusPerNode']} x {p['gpu']}){' spot' if p['spot'] else ''}"
            for p in s["partitions"]
        ]
        return "elastic partitions: " + "; ".join(parts)
    if s.get("gpuSlice"):  # a vGPU slice: one virtual GPU per node, a share of the host's physical GPU
        return (
            f"{_count(s['nodes'], 'node')} x a vGPU slice: {s['gpuSlice']} (one physical GPU shared by "
            f"{s['gpuFraction'].split('/')[1]} slices) (max {_count(s['maxNodes'], 'node')})"
        )
    return (
        f"{_count(s['nodes'], 'node')} x {s['gpusPerNode']} x {s['gpu']} = {s['totalGpus']}"
        f" (max {_count(s['maxNodes'], 'node')})"
    )


def _local_node_price(s: dict[str, Any]) -> str | None:
    """The GPU node's price in the cloud's own currency where the bill has one (Alibaba, Tencent: CNY), never
    converted to USD; None where it has none."""
    for item in (s.get("costs") or {}).get("items", ()):
        if item.get("item") == "gpuNode" and item.get("hourly") is not None and item.get("currency") != "USD":
            return f"{item['hourly']:,.2f} {item['currency']}/h"
    return None


def cost_text(s: dict[str, Any]) -> str:
    """The cost row: now and, for a group that can grow, at maxNodes (an elastic fleet: at minNodes, the target and
    maxNodes); with the price's caveats."""
    ceiling = s.get("maxHourlyUsd")
    if s.get("partitions"):
        if s["hourlyUsdAtMaxNodes"] is None:
            return "unknown (a partition's type has no public price)"
        return (
            f"${s['hourlyUsd']:,.2f}/h at the partitions' minNodes, up to ${s['hourlyUsdAtMaxNodes']:,.2f}/h with "
            "every partition at maxNodes (nodes run only while jobs need them)"
        )
    if s["hourlyUsdPerNode"] is None:
        local = _local_node_price(s)
        text = "unknown (no public price)" if local is None else f"no USD price; {local} per node (in est. total)"
        return text + (f"; the ceiling ${ceiling:,.2f}/h cannot be checked" if ceiling is not None else "")
    text = f"${s['hourlyUsd']:,.2f}/h"
    low = s.get("minNodes", s["nodes"])
    if low != s["nodes"]:  # an elastic fleet: at its floor, at the deploy count (the target), at its top
        text = (
            f"${s['hourlyUsdAtMinNodes']:,.2f}/h at minNodes ({_count(low, 'node')}), "
            f"{text} at the target ({_count(s['nodes'], 'node')}), "
            f"up to ${s['hourlyUsdAtMaxNodes']:,.2f}/h at {s['maxNodes']} nodes"
        )
    elif s["maxNodes"] != s["nodes"]:
        top = s["hourlyUsdAtMaxNodes"]
        text += f" now ({_count(s['nodes'], 'node')}), up to ${top:,.2f}/h at {s['maxNodes']} nodes"
    if s["spot"] and s.get("spotHourlyUsdPerNode") is not None:  # the reference spot price beside the upper bound
        text += (
            f" (on-demand upper bound; reference spot ${s['spotHourlyUsdPerNode']:g}/h per node in "
            f"{s['spotPriceRegion']}, read {s['spotPriceDate']}; spot varies)"
        )
    elif s["spot"]:
        text += " (on-demand upper bound; spot varies)"
    if s.get("hourlyUsdVerified") is False:
        text += f"; price unverified: {s.get('priceNote')}"
    if s.get("gpuFraction") and s.get("usdPerGpuHour") is not None:  # what a whole GPU costs at the slice's rate
        text += f"; ${s['usdPerGpuHour']:,.2f} per GPU-hour ({s['gpuFraction']} of a GPU per node)"
    if ceiling is not None:
        text += f"; ceiling ${ceiling:,.2f}/h"
    return text


def _money(value: float, currency: str) -> str:
    return f"${value:,.2f}" if currency == "USD" else f"{value:,.2f} {currency}"


def _currency_text(s: dict[str, Any], currency: str, t: dict[str, Any], hours: int) -> str:
    hourly, monthly = t["hourly"], t["monthly"]
    text = f"{_money(hourly['nodes'], currency)}/h, {_money(monthly['nodes'], currency)}/month ({hours} h)"
    low, top = s.get("minNodes", s["nodes"]), s["maxNodes"]
    if low != s["nodes"] or top != s["nodes"]:
        text += f" at {_count(s['nodes'], 'node')}"
    if low != s["nodes"]:
        text += (
            f"; {_money(hourly['minNodes'], currency)}/h, {_money(monthly['minNodes'], currency)}/month at minNodes"
            f" ({_count(low, 'node')})"
        )
    if top != s["nodes"]:
        text += f"; up to {_money(hourly['maxNodes'], currency)}/h at {_count(top, 'node')}"
    return text + f"; fixed {_money(t['fixedHourly'], currency)}/h of it (runs at any node count)"


def total_text(s: dict[str, Any]) -> str:
    """The `est. total` row: everything the stack runs (summary.costs), per hour and per month (730 h), at nodes and,
    for a group that can change size, at minNodes and maxNodes; fixed costs apart; each currency apart (never
    converted); what is not counted, by name."""
    costs = s.get("costs") or {}
    hours = costs.get("hoursPerMonth", 730)
    totals = costs.get("totals") or {}
    unpriced = [i["name"] for i in costs.get("items") or [] if i.get("unpriced")]
    missing = f"; not counted: {', '.join(unpriced)}" if unpriced else ""
    if not totals:
        return "unknown: no item has a sourced price" + missing
    order = sorted(totals, key=lambda c: (c != "USD", c))  # USD first; CNY items are added in CNY, apart
    return " | plus ".join(_currency_text(s, c, totals[c], hours) for c in order) + missing


def budget_text(s: dict[str, Any]) -> str | None:
    """The `budget` row beside `est. total`: the amount, the alerts, who hears them, and the plan's estimate."""
    b = s.get("budget")
    if not b:
        return None
    cur = b["currency"]
    alerts = [f"{t:g}%" for t in b["thresholds"]] + ([f"{b['forecast']:g}% forecast"] if b["forecast"] else [])
    text = f"{_money(b['monthly'], cur)}/month; alerts at {', '.join(alerts)} to {', '.join(b['notify'])}"
    if b["estimateMonthly"] is not None:
        state = "OVER the budget" if b["overBudget"] else "within it"
        text += f"; the plan's estimate {_money(b['estimateMonthly'], cur)}/month at nodes is {state}"
        if s.get("notCounted"):
            text += " (a lower bound: what is not counted is not in it)"
    else:
        text += f"; no {cur} estimate to compare"
    return text


def reservation_text(plan: Plan) -> str:
    s = plan.summary()
    if not s["reservation"]:
        return "none"
    return str(s["reservation"]) + (f" ({s['reservationType']})" if s.get("reservationType") else "")


def placement_text(s: dict[str, Any]) -> str:
    applied, asked = s["placement"], s.get("placementRequested", s["placement"])
    return applied if applied == asked else f"{applied} (asked: {asked}; not applied here, see warnings)"


def usable_text(s: dict[str, Any]) -> str:
    if s["fabric"] == "none":
        return ""
    if s.get("fabricUsable"):
        return "; usable by NCCL"
    return "; NOT usable by NCCL: missing " + "; ".join(s.get("fabricMissing") or ["?"])


def access_text(s: dict[str, Any]) -> str:
    access = s.get("access") or {}
    if not access:
        return "none: no way to log in is built"
    text = f"{access.get('method')}: {access.get('command') or 'no login command'}"
    if s.get("login"):
        text += f" (login node {s['login']})"
    if access.get("method") == "bastion":
        price = s.get("accessHourlyUsd")
        text += f"; Bastion ${price:,.2f}/h" if price is not None else "; Bastion billed per hour (not priced here)"
    return text


def monitoring_text(s: dict[str, Any]) -> str:
    """Where Prometheus and Grafana run and the command that reaches Grafana (docs/monitoring.md)."""
    m = s.get("monitoring") or {}
    grafana = m.get("grafana")
    # monitoring.logs and .notify where the cloud builds them: after the Prometheus text
    shipping = "".join(f"; {what}: {m[what]}" for what in ("logs", "alerts") if m.get(what))
    chart = catalog_monitoring.kubernetes_chart()
    stack = next((r for r in (s.get("kubernetes") or {}).get("releases") or () if r["chart"] == chart), None)
    if m.get("prometheus") == "managed" and m.get("collector"):  # EKS, AKS: the cloud's collector in the cluster
        return (
            f"{m.get('service')} (workspace {m.get('workspace')}), scraped in the cluster by {m['collector']}; "
            f"{m.get('grafanaNote')}"
            + _portal_dashboards_text(m.get("portalDashboards"))
            + _managed_grafana_text(m.get("managedGrafana"))
            + shipping
        )
    if stack is not None:  # scheduler kubernetes: the in-cluster release (layout.kubernetes_monitoring)
        namespace = str(charts()[chart]["namespace"])
        access = grafana_text(stack["name"], namespace)
        return f"{chart} in the cluster (namespace {namespace}, not exposed); Grafana: {access}" + shipping
    if m.get("prometheus") == "managed" and m.get("collection") and not grafana:  # ACK: ARMS' agent in the cluster
        return (
            f"{m.get('service')} (environment {m.get('environment')}); {m.get('host')}: {m.get('collection')}; "
            f"{len(m.get('rules') or [])} alert rules; {m.get('grafanaNote')}" + shipping
        )
    if m.get("prometheus") == "managed" and m.get("dashboards"):  # GCP: the nodes write, Cloud Monitoring shows
        return (
            f"{m.get('service')}, written by the GPU nodes' Ops Agent; dashboards in Cloud Monitoring: "
            f"{', '.join(m['dashboards'])}; {m.get('grafanaNote')}" + shipping
        )
    if m.get("prometheus") not in ("selfHosted", "managed") or not grafana:
        return (
            "none: the exporters are not scraped (monitoring.prometheus; scrape :9400 and :9100 from your own)"
            + shipping
        )
    if m.get("prometheus") == "managed":  # the cloud's workspace stores and alerts; the login node scrapes and shows
        return (
            f"{m.get('service')} (workspace {m.get('workspace')}); a Prometheus agent and Grafana on the "
            f"{m.get('host')} (private); Grafana: {grafana['forward']}, then {grafana['url']} as {grafana['user']} "
            f"({grafana['password']}); {m.get('grafanaNote')}"
            + _portal_dashboards_text(m.get("portalDashboards"))
            + _managed_grafana_text(m.get("managedGrafana"))
            + shipping
        )
    return (
        f"Prometheus and Grafana on the {m.get('host')} (private); Grafana: {grafana['forward']}, then "
        f"{grafana['url']} as {grafana['user']} ({grafana['password']})" + shipping
    )


def _portal_dashboards_text(names: list[str] | None) -> str:
    """Azure: the dashboards provisioned as Azure Monitor dashboards with Grafana (resource names)."""
    return f"; Azure Monitor dashboards with Grafana: {', '.join(names)}" if names else ""


def _managed_grafana_text(g: dict[str, Any] | None) -> str:
    """monitoring.grafanaAdmins: the cloud's managed Grafana beside the workspace (Azure: no dashboards inside)."""
    if not g:
        return ""
    if g.get("signIn"):  # AWS: Amazon Managed Grafana with the dashboards provisioned in it
        return (
            f"; {g['service']} {g['endpoint']} for monitoring.grafanaAdmins ({g['signIn']}; dashboards: "
            f"{', '.join(g['dashboards'])})"
        )
    return (
        f"; Azure Managed Grafana {g['endpoint']} for monitoring.grafanaAdmins (Entra sign-in, public endpoint; its "
        "dashboards not provisioned)"
    )


def shared_text(s: dict[str, Any]) -> str:
    shared = s.get("sharedStorage")
    if not shared:
        return "none"
    size = f"{shared['sizeGb']:,} GiB" if shared.get("sizeGb") else "elastic" if shared["kind"] != "existing" else ""
    tier = f" at {shared['throughput']} MB/s/TiB" if shared.get("throughput") else ""
    cost = f", est. ${shared['monthlyUsd']:,.2f}/month" if shared.get("monthlyUsd") is not None else ""
    kept = ", retained on delete" if shared.get("retain") and shared["kind"] != "existing" else ""
    return f"{shared['service']} {size}{tier} at {shared['path']}{cost}{kept}".replace("  ", " ")


def identity_text(s: dict[str, Any]) -> str:
    identity = s.get("identity") or {}
    if not identity:
        return "none"
    grants = identity.get("grants") or []
    what = ", ".join(str(g).rsplit("/", 1)[-1] for g in grants) if grants else "no grants"
    return f"{identity.get('kind')} {identity.get('name')}: {what}"


def scheduler_text(s: dict[str, Any]) -> str:
    kube, slurm = s.get("kubernetes"), s.get("slurm")
    if kube:
        where = "private API endpoint"
        if kube.get("endpoint") == "public":
            where = "public API endpoint from " + (", ".join(kube.get("publicCidrs") or []) or "anywhere")
        built = kube.get("versionBuilt")
        version = kube["version"] + (f" ({built})" if built and built != kube["version"] else "")
        return f"kubernetes: {kube.get('service') or '?'} {version}, {where}"
    if slurm:
        version = f" {slurm['slurmVersion']}" if slurm.get("slurmVersion") else ""
        return f"slurm{version}: head node {slurm['headNode']}, partition {slurm['partition']}"
    return str(s.get("scheduler") or "none")


def kubernetes_rows(kube: dict[str, Any]) -> list[tuple[str, str]]:
    system, gpu = kube["systemPool"], kube["gpuPool"]
    low, high = gpu.get("minNodes", gpu["nodes"]), gpu.get("maxNodes", gpu["nodes"])
    grows = f" (autoscaled {low} to {high})" if (low, high) != (gpu["nodes"], gpu["nodes"]) else ""
    pools = (
        f"system {system['nodes']} x {system['instanceType']}; GPU {gpu['nodes']} x {gpu['instanceType']}{grows}"
        f" ({', '.join(kube['nodePools']) or 'none registered'})"
    )
    releases = ", ".join(f"{r['chart']} {r['version']}" for r in kube["releases"]) or "none"
    sharing = kube.get("gpuSharing")
    shared = [("GPU sharing", _sharing_row(sharing))] if sharing else []
    return [
        ("node pools", pools),
        *shared,
        ("releases", releases),
        ("credentials", str(kube.get("credentials") or "not given")),
    ]


def _sharing_row(sharing: dict[str, Any]) -> str:
    """How many workloads share a GPU, a node and the pool at maxNodes (the plan's kubernetes.gpuSharing)."""
    profile = f" {sharing['migProfile']}" if sharing.get("migProfile") else ""
    gpus = sharing["gpusPerNode"]
    return (
        f"{sharing['mode']}{profile} ({sharing['mechanism']}): {sharing['workloadsPerGpu']} workloads per GPU x "
        f"{gpus} GPU{'s' if gpus != 1 else ''} = {sharing['workloadsPerNode']} per node, "
        f"{sharing['workloadsAtMaxNodes']} at maxNodes"
        + (f"; ${sharing['hourlyUsdPerWorkload']:.4f}/h a workload" if sharing.get("hourlyUsdPerWorkload") else "")
    )


def slurm_rows(slurm: dict[str, Any]) -> list[tuple[str, str]]:
    submit = str(slurm.get("login") or "no login command")
    if slurm.get("check"):
        submit += f", then {slurm['check']}"
    rows = [("slurm login", submit)]
    if slurm.get("firstJob"):
        rows.append(("first job", f"on the login node: {slurm['firstJob']} (nccl-tests all_reduce_perf, two nodes)"))
    return rows


def serve_rows(serve: dict[str, Any]) -> list[tuple[str, str]]:
    where = "internal" if serve.get("internal") else "internet-facing"
    health = serve.get("healthCheck") or {}
    check = f"{health.get('protocol')} :{health.get('port')}{health.get('path') or ''}"
    return [
        ("serve", f"{serve['protocol']}://{serve['endpoint']}:{serve['port']} ({where}; health check {check})"),
        ("serve check", f"{serve['check']} (from {serve.get('from') or 'a client allowed in'})"),
    ]


def summary_rows(plan: Plan) -> list[tuple[str, str]]:
    s = plan.summary()
    wired, rated = s["fabricGbpsPerNode"], s["fabricGbpsRated"]
    ratio = f" ({wired / rated:.0%})" if rated else ""
    return [
        ("stack", f"{plan.stack.stack} ({plan.spec.cloud}, {plan.spec.region})"),
        ("instance type", f"{s['instanceType']}: {s['resolution']}"),
        ("GPUs", gpus_text(s)),
        ("node group", f"{s['nodeGroup']}, placement {placement_text(s)}"),
        ("scheduler", scheduler_text(s)),
        *(kubernetes_rows(s["kubernetes"]) if s.get("kubernetes") else []),
        *(slurm_rows(s["slurm"]) if s.get("slurm") else []),
        *(serve_rows(s["serve"]) if s.get("serve") else []),
        ("fabric", f"{s['fabric']}: {_gbps(wired)} of {_gbps(rated)} Gb/s per node wired{ratio}{usable_text(s)}"),
        ("scratch", s["scratch"]),
        ("shared storage", shared_text(s)),
        ("image", str(s["image"]) + (f" + driver {s['gpuDriver']}" if s.get("gpuDriver") else "")),
        ("reservation", reservation_text(plan)),
        ("access", access_text(s)),
        ("monitoring", monitoring_text(s)),
        ("identity", identity_text(s)),
        ("est. cost", "GPU nodes " + cost_text(s)),
        ("est. total", total_text(s)),
        *([("budget", budget)] if (budget := budget_text(s)) else []),
        ("in transit", transit_text(s)),
        ("resources", str(s["resourceCount"])),
    ]


def transit_text(s: dict[str, Any]) -> str:
    """Metrics inside the cluster network (checked on the rules), the TLS endpoints, the shared mount."""
    t = s["inTransit"]
    ports = "/".join(str(p) for p in t["metrics"]["ports"])
    parts = [f"metrics :{ports} " + ("cluster network only" if t["metrics"]["insideClusterNetwork"] else "EXPOSED")]
    if t.get("kubernetesApi"):
        parts.append(f"Kubernetes API {t['kubernetesApi']['tls']}")
    if t.get("sharedStorage"):
        parts.append(f"shared {t['sharedStorage']['kind']}: {t['sharedStorage']['inTransit']}")
    serve = s.get("serve")
    if serve:  # TLS only where the load balancer terminates it; the hop to the nodes stays inside the network
        tls = "TLS at the load balancer, plain to the nodes" if serve["protocol"] == "https" else "not TLS"
        parts.append(f"serve :{serve['port']} {tls}")
    return "; ".join(parts)


def compliance_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """(rule, control, result) of the stack's compliance profile; empty without one."""
    c = plan.summary()["compliance"]
    if c is None:
        return []
    return [(r["rule"], r["control"] or "none (toolkit baseline)", r["result"]) for r in c["rules"]]


def compliance_title(plan: Plan) -> str:
    c = plan.summary()["compliance"]
    bench = c["benchmark"] or "no benchmark for this cloud: the toolkit's baseline"
    return f"compliance {c['profile']}: {bench}: " + ("passed" if c["passed"] else "FAILED")


def _tree(plan: Plan) -> Tree:
    children: dict[str | None, list[Any]] = defaultdict(list)
    known = {res.urn for res in plan.resources}
    for res in plan.resources:
        children[res.parent if res.parent in known else None].append(res)
    root = Tree(f"[bold]{plan.stack.project}/{plan.stack.stack}[/bold]")

    def add(node: Tree, parent: str | None) -> None:
        for res in children.get(parent, []):
            detail = key_inputs(res.inputs)
            label = f"{res.type}  [bold]{res.name}[/bold]" + (f"  [dim]{detail}[/dim]" if detail else "")
            add(node.add(label), res.urn)

    add(root, None)
    return root


def render_table(plan: Plan, console: Console) -> None:
    table = Table(title="gpu-cluster offline plan", show_header=False, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")  # long values (an image path, a resolution) fold; they are never cut
    for key, value in summary_rows(plan):
        table.add_row(key, value)
    parts: list[Any] = [table]
    for warning in plan.warnings():
        parts.append(f"[yellow]warning:[/yellow] {warning}")
    for group in plan.violation_groups():  # one line per rule and fix; the resources are in the JSON
        color = "red" if group.level == "mandatory" else "yellow"
        parts.append(Text.assemble((f"policy {group.rule} ({group.level}): ", color), group.summary))
    rows = compliance_rows(plan)
    if rows:
        profile = Table(title=compliance_title(plan), title_justify="left")
        for column in ("rule", "control", "result"):
            profile.add_column(column, overflow="fold")
        for rule, control, result in rows:
            style = "red" if result == "fail" else ("yellow" if result != "pass" else "green")
            profile.add_row(rule, control, Text(result, style=style))
        parts.append(profile)
    parts.append(_tree(plan))
    console.print(Group(*parts))


def _md(text: str) -> str:
    """Text for a markdown table cell or list item: no pipes, no HTML."""
    return text.replace("|", "/").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(plan: Plan) -> str:
    lines = [f"### gpu-cluster plan: `{plan.stack.stack}`", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {_md(v)} |" for k, v in summary_rows(plan)]
    warnings = plan.warnings()
    if warnings:
        lines += ["", "**Warnings**", ""] + [f"- :warning: {w}" for w in warnings]
    rows = compliance_rows(plan)
    if rows:
        lines += ["", f"**{_md(compliance_title(plan))}**", "", "| rule | control | result |", "|---|---|---|"]
        lines += [f"| `{rule}` | {_md(control)} | {result} |" for rule, control, result in rows]
    violations = plan.violations()
    if violations:
        lines += ["", "**Policy violations**", ""]
        lines += [f"- `{g.rule}` ({g.level}): {_md(g.summary)}" for g in group_violations(violations)]
        lines += [
            "",
            f"<details><summary>{_count(len(violations), 'policy violation')} by resource</summary>",
            "",
            "| rule | level | finding |",
            "|---|---|---|",
        ]
        lines += [f"| `{v.rule}` | {v.level} | {_md(v.message)} |" for v in violations]
        lines += ["", "</details>"]
    lines += [
        "",
        f"<details><summary>{len(plan.resources)} resources</summary>",
        "",
        "| type | name | key inputs |",
        "|---|---|---|",
    ]
    lines += [f"| `{r.type}` | `{r.name}` | {_md(key_inputs(r.inputs))} |" for r in plan.resources]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def render_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2, sort_keys=False, default=str)
