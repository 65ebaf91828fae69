"""The catalog commands: `catalog`, `compare` and `recommend` (what to rent, before any stack exists); the package
registers them on the app after `plan`."""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import catalog
from ..errors import ConfigError
from .base import CatalogFormat, Format, _fail, _project_dir


@dataclass(frozen=True)
class _Column:
    header: str
    cell: Callable[[catalog.InstanceType], str]
    right: bool = False


def _gpu_cell(r: catalog.InstanceType) -> str:
    if r.gpuFraction:  # a vGPU slice: the share of one GPU
        return f"{r.gpuFraction} x {r.gpu or '?'}"
    if r.gpu:
        return f"{r.gpus} x {r.gpu}"
    memory = f" ({r.gpuMemoryGiB:g} GiB)" if r.gpuMemoryGiB else ""
    return f"{r.gpus} x ?{memory}"  # a model the cloud does not name: its description is in --format json


def _nvme_cell(r: catalog.InstanceType) -> str:
    if r.localNvmeCount and r.localNvmeGb:
        return f"{r.localNvmeCount} x {r.localNvmeGb:g} GB"
    return str(r.localNvmeCount or "-")


def _price_cell(r: catalog.InstanceType) -> str:
    if not r.hourlyUsd:
        return "?"
    unverified = getattr(r, "priceVerified", True) is False
    return f"{r.hourlyUsd:,.2f}" + ("*" if unverified else "")


# In the order a narrow console keeps them: the type, what it has and costs first; the rest while it fits.
_CATALOG_COLUMNS = {
    "type": _Column("type", lambda r: r.instanceType),
    "GPU": _Column("GPU", _gpu_cell),
    "$/h": _Column("$/h", _price_cell, right=True),
    "cloud": _Column("cloud", lambda r: r.cloud),
    "fabric Gb/s": _Column("fabric Gb/s", lambda r: f"{r.fabricGbps:g}" if r.fabricGbps else "-", right=True),
    "fabric": _Column("fabric", lambda r: r.fabric if r.fabric == "none" else f"{r.fabric} x{r.fabricDevices}"),
    "vCPU": _Column("vCPU", lambda r: str(r.vcpus or "?"), right=True),
    "mem GiB": _Column("mem GiB", lambda r: f"{r.memoryGiB:g}" if r.memoryGiB else "?", right=True),
    "local NVMe": _Column("local NVMe", _nvme_cell, right=True),
    "net Gb/s": _Column("net Gb/s", lambda r: f"{r.networkGbps:g}" if r.networkGbps else "?", right=True),
}
_CATALOG_ORDER = ("cloud", "type", "GPU", "vCPU", "mem GiB", "local NVMe", "net Gb/s", "fabric", "fabric Gb/s", "$/h")


def _catalog_table(rows: list[catalog.InstanceType], width: int, title: str, one_cloud: bool) -> Table:
    """The catalog as a table of at most `width` columns: a type is never cut (it folds only when even
    the type, GPU and price columns do not fit); columns that do not fit are left out, and said so."""
    cells = {name: [col.cell(r) for r in rows] for name, col in _CATALOG_COLUMNS.items()}
    needed = {name: max([len(name), *map(len, values)]) + 3 for name, values in cells.items()}  # 2 padding + 1 rule
    candidates = [n for n in _CATALOG_COLUMNS if not (one_cloud and n == "cloud")]
    shown: list[str] = []
    used = 1  # the left border
    for name in candidates:
        if len(shown) < 3 or used + needed[name] <= width:  # type, GPU, $/h always
            shown.append(name)
            used += needed[name]
    left_out = [n for n in candidates if n not in shown]
    notes = []
    if left_out:
        notes.append(
            f"not shown at {width} columns: {', '.join(left_out)} "
            f"(COLUMNS={used + sum(needed[n] for n in left_out)} shows all; so does --format json)"
        )
    if any(value.endswith("*") for value in cells["$/h"]):
        notes.append("* price not verified (see the row's priceNote in --format json)")
    table = Table(title=title, caption="\n".join(notes) or None, caption_justify="left")
    order = [n for n in _CATALOG_ORDER if n in shown]
    for name in order:
        col = _CATALOG_COLUMNS[name]
        if name == "type":
            table.add_column(name, no_wrap=True, overflow="fold", min_width=needed[name] - 3)
        else:
            table.add_column(name, justify="right" if col.right else "left", overflow="fold")
    for i in range(len(rows)):
        table.add_row(*(cells[name][i] for name in order))
    return table


def _parse_gpu_filter(text: str, flag: str = "--gpu") -> tuple[str, int | None]:
    """`h100` -> ("H100", None), `H100:8` -> ("H100", 8): the syntax of the `gpu` config key."""
    model_text, sep, count_text = text.strip().rpartition(":")
    if not sep:
        model_text, count_text = count_text, ""
    count: int | None = None
    if sep:
        if not count_text.strip().isdigit() or int(count_text) < 1:
            raise _fail(f"{flag}: got {text!r}; expected MODEL or MODEL:COUNT, for example H100 or H100:8")
        count = int(count_text)
    model = catalog.normalize_gpu(model_text)
    if model is None:
        aliases = catalog.gpu_aliases()
        close = difflib.get_close_matches(model_text.strip().lower(), list(aliases), n=5, cutoff=0.6)
        suggestions = list(dict.fromkeys(aliases[c] for c in close))
        hint = f"did you mean {' or '.join(suggestions[:2])}? " if suggestions else ""
        known = ", ".join(sorted(set(aliases.values())))
        raise _fail(f"{flag}: unknown GPU model {model_text.strip()!r}; {hint}known models: {known}")
    return model, count


def _no_match_hint(cloud: str | None, model: str, count: int | None) -> str:
    """Why a catalog filter matched nothing, and what would match."""
    everywhere = [r for r in catalog.all_types() if r.gpu == model]
    where = f"no {cloud} type" if cloud else "no type in the catalog"
    asked = f"{count} x {model}" if count else model
    filters = f"--gpu {model}{f':{count}' if count else ''}" + (f" --cloud {cloud}" if cloud else "")
    if not everywhere:
        return f"{filters}: {where} has {asked}; no cloud in the catalog offers {model}"
    here = [r for r in everywhere if cloud is None or r.cloud == cloud]
    if not here:
        clouds = ", ".join(c for c in catalog.CLOUDS if any(r.cloud == c for r in everywhere))
        offered = sorted({r.gpu for r in catalog.all_types(cloud) if r.gpu})  # type: ignore[arg-type]
        return f"{filters}: {where} has {model}; {model} is offered on: {clouds}; {cloud} offers: {', '.join(offered)}"
    counts = ", ".join(str(c) for c in sorted({r.gpus for r in here}))
    hint = f"{filters}: {where} has {asked}; counts offered: {counts}"
    elsewhere = sorted({r.cloud for r in everywhere if r.gpus == count} - {cloud})
    if cloud and elsewhere:
        hint += f"; {asked} is offered on: {', '.join(elsewhere)}"
    return hint


def catalog_cmd(
    cloud: Annotated[str | None, typer.Option("--cloud", metavar="CLOUD", help="aws | azure | gcp | alicloud")] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", metavar="MODEL[:COUNT]", help="GPU model, any usual spelling (h100, a100-80gb), and count (H100:8)"
        ),
    ] = None,
    fmt: Annotated[CatalogFormat, typer.Option("--format", "-f", help="output format")] = CatalogFormat.table,
) -> None:
    """List the GPU instance types gpu-cluster knows, with specs, fabric and price (sources: --format json).

    A table keeps every instance type whole: on a narrow console the less important columns are left
    out (the caption names them). A filter that matches nothing says what would.
    """
    if cloud is not None and cloud not in catalog.CLOUDS:
        raise _fail(f"--cloud: got {cloud!r}; allowed: {', '.join(catalog.CLOUDS)}")
    model, count = _parse_gpu_filter(gpu) if gpu is not None else (None, None)
    rows = [
        r
        for r in catalog.all_types(cloud)
        if (model is None or r.gpu == model) and (count is None or (r.gpus == count and not r.gpuFraction))
    ]
    if not rows and model is not None:
        Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(
            Text.assemble(("no match: ", "yellow"), _no_match_hint(cloud, model, count))
        )
    if fmt is CatalogFormat.json:
        sys.stdout.write(json.dumps([r.public_row() for r in rows], indent=2) + "\n")
        return
    if not rows:
        return
    console = Console(highlight=False)
    scope = " on " + cloud if cloud else ""
    wanted = f" with {count} x {model}" if count else f" with {model}" if model else ""
    title = f"{len(rows)} GPU instance type{'s' if len(rows) != 1 else ''}{scope}{wanted}"
    console.print(_catalog_table(rows, console.width, title, one_cloud=cloud is not None))


def _fit_columns(
    cells: dict[str, list[str]], priority: tuple[str, ...], order: tuple[str, ...], right: set[str], width: int
) -> tuple[list[str], list[str], int]:
    """Which columns fit `width` (the first three always), in display order; and the ones left out."""
    needed = {name: max([len(name), *map(len, values)]) + 3 for name, values in cells.items()}
    shown: list[str] = []
    used = 1
    for name in priority:
        if len(shown) < 3 or used + needed[name] <= width:
            shown.append(name)
            used += needed[name]
    left_out = [n for n in priority if n not in shown]
    return [n for n in order if n in shown], left_out, used + sum(needed[n] for n in left_out)


def _fitted_table(
    cells: dict[str, list[str]], priority: tuple[str, ...], order: tuple[str, ...], right: set[str], width: int,
    title: str, notes: list[str],
) -> Table:  # fmt: skip
    shown, left_out, full = _fit_columns(cells, priority, order, right, width)
    if left_out:
        notes = [f"not shown at {width} columns: {', '.join(left_out)} (COLUMNS={full} shows all; so does "
                 "--format json)", *notes]  # fmt: skip
    table = Table(title=title, caption="\n".join(notes) or None, caption_justify="left")
    for name in shown:
        no_wrap = name == "type"
        table.add_column(name, justify="right" if name in right else "left", no_wrap=no_wrap, overflow="fold")
    for i in range(len(next(iter(cells.values()), []))):
        table.add_row(*(cells[name][i] for name in shown))
    return table


def _money(value: float | None, digits: int = 2) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _markdown(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


_COMPARE_ORDER = (
    "cloud",
    "type",
    "GPU",
    "vCPU",
    "mem GiB",
    "local NVMe",
    "fabric",
    "Gb/s",
    "regions",
    "$/h",
    "$/GPU-h",
    "spot",
    "local/h",
)
# spot after regions: at 80 columns a long type name leaves room for one of them, and regions came first
_COMPARE_PRIORITY = ("type", "GPU", "$/GPU-h", "$/h", "cloud", "regions", "spot", "Gb/s", "fabric", "vCPU",
                     "mem GiB", "local NVMe", "local/h")  # fmt: skip


def _spot_cell(price: float | None, offered: bool | None) -> str:
    """The reference spot $/h, `no` where a source says the type is not sold as spot, `?` when unknown."""
    return "no" if offered is False else _money(price)


def _compare_cells(rows: list[dict[str, Any]], region: str | None) -> dict[str, list[str]]:
    def regions(r: dict[str, Any]) -> str:
        if region is not None:
            return {True: "yes", False: "no", None: "?"}[r["soldInRegion"]]
        return "?" if r["regions"] is None else str(len(r["regions"]))

    def gpu(r: dict[str, Any]) -> str:
        memory = f" {r['gpuMemoryGiB']:g}G" if r["gpuMemoryGiB"] else ""
        return f"{r.get('gpuFraction') or r['gpus']}x {r['gpu']}{memory}"

    return {
        "cloud": [r["cloud"] for r in rows],
        "type": [r["instanceType"] for r in rows],
        "GPU": [gpu(r) for r in rows],
        "vCPU": [str(r["vcpus"] or "?") for r in rows],
        "mem GiB": [f"{r['memoryGiB']:g}" if r["memoryGiB"] else "?" for r in rows],
        "local NVMe": [f"{r['localNvmeCount']}x{r['localNvmeGb']:g}" if r["localNvmeGb"] else "-" for r in rows],
        "fabric": [r["fabric"] for r in rows],
        "Gb/s": [f"{r['fabricGbps']:g}" if r["fabricGbps"] else "-" for r in rows],
        "regions": [regions(r) for r in rows],
        "$/h": [_money(r["hourlyUsd"]) + ("" if r["priceVerified"] else "*") for r in rows],
        "$/GPU-h": [_money(r["usdPerGpuHour"]) for r in rows],
        "spot": [_spot_cell(r["spotHourlyUsd"], r["spotOffered"]) for r in rows],
        # the cloud's own currency, named in every cell and never added to the $ columns
        "local/h": ["-" if r["localHourly"] is None else f"{r['localHourly']:,.2f} {r['localCurrency']}" for r in rows],
    }


def compare(
    gpu: Annotated[str, typer.Argument(metavar="GPU[:COUNT]", help="GPU model, any usual spelling, and count")],
    region: Annotated[
        str | None, typer.Option("--region", metavar="REGION", help="only types sold there (or not known not to be)")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.table,
) -> None:
    """Every cloud's types with that GPU side by side, cheapest per GPU-hour first.

    Prices are each cloud's reference on-demand price (its region is in --format json); `regions` is how
    many regions the availability data lists the type in (with --region: whether it is sold there); `spot` is
    the reference spot $/h in the same region (a snapshot; `no`: not sold as spot, `?`: unknown).
    """
    from .. import recommend as rec

    model, count = _parse_gpu_filter(gpu, "GPU")
    rows = [rec.compare_row(r, region) for r in rec.compare(model, count, region)]
    if not rows:
        where = f" sold in {region}" if region else ""
        raise _fail(f"GPU: no type with {gpu}{where}; " + _no_match_hint(None, model, count).split(": ", 1)[1])
    if fmt is Format.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    cells = _compare_cells(rows, region)
    notes = [
        "$/h and $/GPU-h: reference on-demand prices per cloud (regions in --format json)",
        "spot: reference spot $/h in the same region, a snapshot (prices move); no: not sold as spot; ?: unknown",
    ]
    if any(not r["priceVerified"] for r in rows):
        notes.append("* price not verified (see the catalog row's priceNote)")
    if any(r["localHourly"] is not None for r in rows):
        notes.append("local/h: the cloud's own on-demand list price in its currency (CNY), never converted to $")
    if fmt is Format.markdown:
        sys.stdout.write(
            _markdown(list(_COMPARE_ORDER), [[cells[c][i] for c in _COMPARE_ORDER] for i in range(len(rows))])
        )
        sys.stdout.write("\n" + "\n".join(notes) + "\n")
        return
    console = Console(highlight=False)
    title = f"{len(rows)} type{'s' if len(rows) != 1 else ''} with {gpu}" + (f" in {region}" if region else "")
    console.print(_fitted_table(cells, _COMPARE_PRIORITY, _COMPARE_ORDER, {"vCPU", "mem GiB", "Gb/s", "regions",
                                "$/h", "$/GPU-h", "spot"}, console.width, title, notes))  # fmt: skip


_RECOMMEND_ORDER = ("#", "cloud", "type", "nodes", "GPUs", "fabric", "$/h", "$/GPU-h")


def recommend(
    workload: Annotated[
        str, typer.Option("--workload", metavar="W", help="training | fine-tuning | inference | rendering | hpc")
    ],
    model_params: Annotated[
        str | None, typer.Option("--model-params", metavar="N", help="parameters, e.g. 7B, 70B")
    ] = None,
    precision: Annotated[str, typer.Option("--precision", metavar="P", help="bf16 | fp8 | int4")] = "bf16",
    context: Annotated[
        str | None, typer.Option("--context", metavar="TOKENS", help="inference context, e.g. 32k")
    ] = None,
    batch: Annotated[int | None, typer.Option("--batch", metavar="N", help="concurrent sequences (inference)")] = None,
    gpu_memory: Annotated[
        float | None, typer.Option("--gpu-memory", metavar="GIB", help="rendering/hpc: GiB per GPU at least")
    ] = None,
    gpus_max: Annotated[int | None, typer.Option("--gpus-max", metavar="N", help="at most N GPUs in all")] = None,
    cloud: Annotated[str | None, typer.Option("--cloud", metavar="CLOUD", help="only this cloud")] = None,
    region: Annotated[str | None, typer.Option("--region", metavar="REGION", help="only types sold there")] = None,
    budget: Annotated[float | None, typer.Option("--budget", metavar="USD/h", help="at most this per hour")] = None,
    use_spot: Annotated[
        bool, typer.Option("--spot", help="rank by reference spot prices; leave out types not sold as spot")
    ] = False,
    write_stack: Annotated[
        str | None,
        typer.Option("--write-stack", metavar="NAME", help="write stacks/Pulumi.NAME.yaml for the best valid option"),
    ] = None,
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="folder with Pulumi.yaml")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.table,
) -> None:
    """How much GPU memory a workload needs, and the cheapest ways to get it on each cloud.

    Formulas and every constant, with sources: docs/recommend.md. Exit 2 on bad input, naming the flag.
    """
    from .. import recommend as rec

    try:
        params = None if model_params is None else rec.parse_size(model_params, "--model-params", rec.PARAM_SUFFIXES)
        tokens = None if context is None else int(rec.parse_size(context, "--context", rec.TOKEN_SUFFIXES))
        if batch is not None and batch < 1:
            raise ConfigError("--batch", f"got {batch}; must be 1 or more")
        need = rec.memory_need(workload, params, precision, tokens, batch, gpu_memory)
        options = rec.recommend(need, cloud, gpus_max, budget, region, use_spot=use_spot)
        written, skipped = _write_stack(rec, options, write_stack, project) if write_stack is not None else (None, [])
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if fmt is Format.json:
        out = {"workload": workload, "needGiB": round(need.total_gib, 2), "need": need.explain(),
               "multiNode": bool(options) and all(o.multi_node for o in options),
               "options": [o.as_json() for o in options], "wroteStack": written, "spot": use_spot,
               "writeSkipped": skipped}  # fmt: skip
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    cells: dict[str, list[str]] = {
        "#": [str(i + 1) for i in range(len(options))],
        "cloud": [str(o.row.cloud) for o in options],
        "type": [o.row.instanceType for o in options],
        "nodes": [str(o.nodes) for o in options],
        "GPUs": [f"{o.row.gpuFraction or o.total_gpus}x {o.row.gpu}" for o in options],
        "fabric": [str(o.row.fabric) if o.multi_node else "-" for o in options],
        "$/h": [_money(o.hourly_usd) for o in options],
        "$/GPU-h": [_money(o.row.usd_per_gpu_hour) for o in options],
        "spot $/h": [_money(o.spot_usd) for o in options],
    }
    order = (*_RECOMMEND_ORDER, "spot $/h") if use_spot else _RECOMMEND_ORDER
    head = f"{workload}: {need.total_gib:,.1f} GiB of GPU memory ({need.explain()})"
    whys = [f"{i + 1}. {o.why}" for i, o in enumerate(options)]
    if fmt is Format.markdown:
        rows = [[cells[c][i] for c in order] for i in range(len(options))]
        sys.stdout.write(f"{head}\n\n" + _markdown(list(order), rows) + "\n" + "\n".join(whys) + "\n")
    else:
        console = Console(highlight=False, soft_wrap=False)
        console.print(Text(head))
        priority: tuple[str, ...] = ("#", "type", "$/h", "nodes", "GPUs", "cloud", "$/GPU-h", "fabric")
        title = "options, cheapest per hour first"
        if use_spot:  # the spot price ranks, so it keeps its place over the on-demand one
            priority = ("#", "type", "spot $/h", "nodes", "GPUs", "cloud", "$/h", "$/GPU-h", "fabric")
            title = "options, cheapest spot price first"
        right = {"#", "nodes", "$/h", "$/GPU-h", "spot $/h"}
        shown = {c: cells[c] for c in order}
        console.print(_fitted_table(shown, priority, order, right, console.width, title, []))
        for line in whys:
            console.print(Text(line))
    if written:
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        for line in skipped:  # the better-ranked options that would not plan, and why
            err.print(Text(f"skipped {line}"))
        err.print(Text(f"wrote {written}"))


def _write_stack(rec: Any, options: list[Any], name: str, project: Path | None) -> tuple[str, list[str]]:
    """Write stacks/Pulumi.NAME.yaml for the first option whose config plans (the spec and the cloud's layout, which
    hold every refusal: an Azure option needs an sshPublicKey, for one), and say why the better-ranked ones did not."""
    import re

    from ..contract import contract
    from ..spec import build_spec
    from ..spec.model import NAME_PATTERN

    if not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError("--write-stack", f"got {name!r}; a stack name is [a-z][a-z0-9-]{{0,30}}")
    path = _project_dir(project) / "stacks" / f"Pulumi.{name}.yaml"
    if path.exists():
        raise ConfigError("--write-stack", f"{path} exists; pick another name or remove it")
    skipped: list[str] = []
    for option in options:
        try:
            values = rec.stack_config(option, name)
            spec = build_spec(values, name)
            contract(spec.cloud).plan(spec)
        except ConfigError as exc:
            skipped.append(f"{option.row.instanceType}: {exc}")
            continue
        header = f"# Written by `gpu-cluster recommend`: {option.why}\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + yaml.safe_dump({"config": values}, sort_keys=False))
        return str(path), skipped
    raise ConfigError("--write-stack", "no option validates as a stack: " + "; ".join(skipped))
