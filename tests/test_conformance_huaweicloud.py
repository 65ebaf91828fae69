"""Huawei Cloud conformance: every shipped huaweicloud stack's registered inputs, translated into the request bodies
the Terraform huaweicloud provider sends, judged by Huawei's SDK models (members and JSON types of the body models)
and by the constraints their documentation states (tests/conformance/huaweicloud_rules.yaml); and the judge itself,
fed known-bad bodies, refuses each."""

from __future__ import annotations

import base64

import pytest
from huaweicloudsdkecs.v2 import model as ecs

from .conformance import _hwsdk, _rules
from .conformance import huaweicloud as conf
from .conftest import plan_stack, shipped_stacks

RULES = _rules.load(conf.RULES)
# the body model of every API a rule names (the translations' calls carry the same)
MODELS = {
    call.api: call.model
    for stack in shipped_stacks("huaweicloud")
    for _, call in conf.translate([r.as_json() for r in plan_stack(stack).resources]).calls
}


def report_of(stack: str) -> conf.Report:
    return conf.check([r.as_json() for r in plan_stack(stack).resources])


def verdict(api: str, request: dict) -> list[str]:
    return conf.judge_call(conf.Call(api, MODELS[api], request, "test"), RULES, "test").problems


# --- the plans -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", shipped_stacks("huaweicloud"))
def test_every_shipped_stack_is_what_huawei_accepts(stack):
    report = report_of(stack)
    assert report.calls and report.problems == []
    assert report.untranslated == [] and report.unread == []


def test_the_shipped_stacks_reach_every_translation():
    seen = {r.type for stack in shipped_stacks("huaweicloud") for r in plan_stack(stack).resources}
    assert set(conf.TRANSLATIONS) <= seen, set(conf.TRANSLATIONS) - seen


# --- the rules are the SDK's words -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.api}:{r.path}")
def test_every_rule_quotes_the_member_documentation_in_the_installed_sdk(rule):
    doc = _hwsdk.member(MODELS[rule.api], rule.doc_path or rule.path).doc
    assert _rules.folded(rule.quote) in _rules.folded(doc)


def test_no_rule_is_written_twice():
    keys = [(r.api, r.path, r.quote, r.when, r.pattern) for r in RULES]
    assert len(set(keys)) == len(keys)
