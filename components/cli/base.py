"""What every command shares: the typer app, its flag help, the output formats, errors as one line each, and
the project folder."""

from __future__ import annotations

import sys
from enum import StrEnum
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from ..errors import ConfigError


def _flags_take_no_value(params: list[Any]) -> list[Any]:
    # typer labels a flag `<bool>` in --help, as if it took a value; a flag takes none, so it shows none.
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_take_no_value(super().get_params(ctx))


class _Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_take_no_value(super().get_params(ctx))


app = typer.Typer(
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Cloud-neutral GPU clusters on Pulumi: offline plans and the instance catalog.",
)
REPO_ROOT = Path(__file__).resolve().parents[2]
REFUSED_EXIT = 4  # `diff`: a config change its update policy refuses


def version() -> str:
    try:
        return metadata.version("gpu-cluster")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"gpu-cluster {version()}\n")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", help="print the version and exit", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    """Cloud-neutral GPU clusters on Pulumi: offline plans and the instance catalog."""


class Format(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


class CatalogFormat(StrEnum):
    table = "table"
    json = "json"


def _fail(message: str) -> typer.Exit:
    # Text, not markup: config values may contain [brackets] or :emoji: codes.
    console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    for line in message.splitlines() or [""]:  # several problems (ConfigErrors): one `error:` line each
        console.print(Text.assemble(("error: ", "red"), line))
    return typer.Exit(code=2)


def _project_dir(project: Path | None) -> Path:
    from ..plan import find_project

    if project is not None:
        return find_project(project.resolve())
    try:
        return find_project(Path.cwd())
    except ConfigError:
        return find_project(REPO_ROOT)
