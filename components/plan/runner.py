"""Run the real Pulumi program (`__main__.py`) under Pulumi's mock runtime and record what it registers.

Nothing here is a copy of the component logic: the same `__main__.py` that `pulumi up` runs is
executed with `pulumi.runtime.set_mocks`; a recording monitor keeps every registration request
(type token, name, parent, inputs as the engine receives them: camelCase) and the mocks answer
invokes with placeholders from `mocks.yaml`.
"""

from __future__ import annotations

import gc
import logging
import runpy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import get_project, get_stack
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from .. import placeholders
from ..datafile import load_yaml
from ..placeholders import SECRET as SECRET_PLACEHOLDER
from .stackfile import StackFile


@dataclass(frozen=True)
class Registered:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    aliases: tuple[str, ...] = ()  # old URNs this resource carries (a renamed or re-parented resource)
    ignore_changes: tuple[str, ...] = ()
    # the provider reference the SDK sent (`urn::id`; empty: the engine's default provider). Not in the
    # plan JSON: the plans of the shipped stacks stay as they were (tests/test_component_provider.py reads it)
    provider: str = field(default="", compare=False)
    # the URNs of its explicit and input dependencies (depends_on, Output inputs); not in the plan JSON either
    dependencies: tuple[str, ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": self.inputs,
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "aliases": list(self.aliases),
            "ignoreChanges": list(self.ignore_changes),
        }


@dataclass
class ProgramRun:
    resources: list[Registered]
    outputs: dict[str, Any]
    warnings: list[str]
    program_globals: dict[str, Any] = field(repr=False)


@cache
def _mock_answers() -> dict[str, Any]:
    """`mocks/<cloud>.yaml` merged: resource outputs and invoke answers keyed by type token."""
    merged: dict[str, Any] = {"resources": {}, "invokes": {}}
    for path in sorted((Path(__file__).parent / "mocks").glob("*.yaml")):
        data = load_yaml(path) or {}
        for section in merged:
            merged[section].update(data.get(section) or {})
    for token, outputs in merged["resources"].items():
        _check_references(token, outputs)
    return merged


def _check_references(token: str, template: Any) -> None:
    """Every output that names its resource must be a placeholder the diff can follow (`placeholders`)."""
    if isinstance(template, dict):
        for value in template.values():
            _check_references(token, value)
    elif isinstance(template, list):
        for value in template:
            _check_references(token, value)
    elif isinstance(template, str) and "{name}" in template:
        probe = "probe-name"
        if placeholders.referenced(template.format(name=probe, region="r")) != [probe]:
            raise ValueError(
                f"mocks: {token}: {template!r} is not a reference placeholder ({placeholders.REFERENCE.pattern})"
            )


def _fill(template: Any, **context: Any) -> Any:
    if isinstance(template, str):
        return template.format(**context)
    if isinstance(template, list):
        return [_fill(v, **context) for v in template]
    if isinstance(template, dict):
        return {k: _fill(v, **context) for k, v in template.items()}
    return template


def _clean(value: Any) -> Any:
    """Inputs as a reader expects them: secrets masked, whole numbers as ints (the wire has doubles)."""
    if rpc.is_rpc_secret(value):
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class PlanMocks(pulumi_mocks.Mocks):
    def __init__(self, region: str) -> None:
        self.region = region
        self.unanswered: list[str] = []

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        answers = _mock_answers()["resources"].get(args.typ, {})
        state = {
            "name": placeholders.autoname(args.name),
            "arn": placeholders.of("arn", args.name),
            **args.inputs,
            **_fill(answers, name=args.name, region=self.region),
        }
        return placeholders.of("id", args.name), state

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        answer = _mock_answers()["invokes"].get(args.token)
        if answer is None:
            self.unanswered.append(args.token)
            return {}
        result: dict[str, Any] = _fill(answer, args=args.args, region=self.region)
        return result


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that also keeps each registration's parent, options and inputs in order."""

    def __init__(self, mocks: PlanMocks) -> None:
        super().__init__(mocks)
        self.registered: list[Registered] = []
        self.stack_outputs: dict[str, Any] = {}
        self.invokes: list[tuple[str, str]] = []  # (token, provider reference) of every invoke, in order

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """URNs as the engine makes them: the whole chain of ancestor types, without the root stack.

        (The SDK's mock keeps only the parent's own type, so its URNs differ from `pulumi up`'s.)
        """
        if parent:
            qualified = parent.split("::")[2]
            if qualified != "pulumi:pulumi:Stack":
                type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([get_stack(), get_project(), type_, name])

    def _alias_urns(self, request: Any) -> tuple[str, ...]:
        """The URNs the request's aliases stand for, as the engine resolves them (unset parts: the resource's own)."""
        urns = list(request.aliasURNs)
        for alias in request.aliases:
            if alias.urn:
                urns.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            urns.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return tuple(sorted(set(urns)))

    def RegisterResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        _ensure_event_loop()  # type: ignore[no-untyped-call]
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        resource_args = pulumi_mocks.MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=inputs,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom or False,
        )
        id_, state = self.mocks.new_resource(resource_args)
        self.registered.append(
            Registered(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=bool(request.custom),
                inputs=_clean(inputs),
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                aliases=self._alias_urns(request),
                ignore_changes=tuple(request.ignoreChanges),
                provider=request.provider,
                dependencies=tuple(request.dependencies),
            )
        )
        obj = _sync_await(rpc.serialize_properties(state, {}))
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_ or "", state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_ or "", object=obj)

    def Invoke(self, request: Any) -> Any:
        self.invokes.append((request.tok, request.provider))
        return super().Invoke(request)  # type: ignore[no-untyped-call]


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _Collector:
    """Pauses the cyclic garbage collector while a program runs; reference counting still frees.

    Why: the Pulumi SDK allocates dozens of Outputs, futures and tasks per resource, all alive until
    the program ends, so every collection rescans all that was registered so far (and the SDK
    modules imported on the way). Measured with `python -m bench` (docs/performance.md): a
    2,048-node instances plan spent half its CPU in the collector. The first plan of a process
    then freezes what it allocated (`gc.freeze`), so a one-shot CLI never rescans it, not even at
    exit; a later plan in the same process (the tests) unfreezes it first, so nothing the
    collector would have freed is kept.
    """

    def __init__(self) -> None:
        self.planned = False
        self.frozen = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
        first = not self.planned and gc.get_freeze_count() == 0  # never thaw what a host froze
        self.planned = True
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if first:
                gc.freeze()
                self.frozen = True
            if enabled:
                gc.enable()


_COLLECTOR = _Collector()


def run_program(program: Path, stack: StackFile, region: str, monitor: RecordingMonitor | None = None) -> ProgramRun:
    """Execute `program` as `pulumi up` would, against mocks; raises what the program raises.

    Pass a `monitor` to inspect what was registered when the program raises.
    """
    monitor = monitor or RecordingMonitor(PlanMocks(region))
    mocks = monitor.mocks
    assert isinstance(mocks, PlanMocks)
    logger = logging.getLogger(f"gpu-cluster.plan.{stack.stack}")
    logger.propagate = False
    collector = _Collect()
    logger.handlers = [collector]
    settings.ROOT.set(None)  # a fresh root stack per run (pulumi/pulumi#8280)
    pulumi.runtime.set_all_config(stack.engine_config(), list(stack.secret_keys))
    pulumi.runtime.set_mocks(
        mocks, project=stack.project, stack=stack.stack, preview=False, logger=logger, monitor=monitor
    )
    settings.SETTINGS.rpc_manager.clear()
    program_globals: dict[str, Any] = {}

    def body() -> None:
        program_globals.update(runpy.run_path(str(program), run_name="__main__"))

    outputs: dict[str, Any] = {}
    with _COLLECTOR.paused():
        _sync_await(run_pulumi_func(body))
        root = settings.get_root_resource()
        for key, value in (getattr(root, "outputs", None) or {}).items():
            output = pulumi.Output.from_input(value)
            resolved = _sync_await(output.future())
            secret = _sync_await(output.is_secret())
            outputs[key] = SECRET_PLACEHOLDER if secret else resolved
    warnings = list(collector.messages)
    warnings += [f"offline plan: no mock answer for invoke {token}" for token in mocks.unanswered]
    resources = sorted(monitor.registered, key=lambda r: r.urn)  # completion order varies; URNs do not
    return ProgramRun(resources, _clean(outputs), warnings, program_globals)
