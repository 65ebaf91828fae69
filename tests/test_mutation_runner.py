"""What mutation testing of components/plan/runner.py found unpinned (README "Mutation testing").

The mock runner runs a tiny Pulumi program (two components, a custom resource of a type the AWS mocks answer,
one they do not, one with an explicit provider): the engine's URNs with the whole chain of ancestor types, the
recorded inputs (secrets masked, whole numbers as ints), options, providers and aliases, the mock answers
(`{name}`, `{region}`), invokes, warnings and stack outputs.
"""

from __future__ import annotations

import logging

import pytest

from components.plan import runner
from components.plan.stackfile import StackFile

PROGRAM = """
import pulumi
from pulumi.runtime import invoke


class Comp(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("pkg:index:Comp", name, None, opts)


outer = Comp("outer")
inner = Comp("inner", pulumi.ResourceOptions(parent=outer))
web = pulumi.CustomResource(
    "aws:ec2/instance:Instance",
    "web",
    {
        "instanceType": "t3.micro",
        "count": 2.0,
        "ratio": 2.5,
        "password": pulumi.Output.secret("hunter2"),
        "nested": {"list": [1.0, "a", {"deep": 4.0}], "flag": True},
        "privateIp": None,
        "arn": None,
    },
    pulumi.ResourceOptions(
        parent=inner,
        protect=True,
        retain_on_delete=True,
        ignore_changes=["instanceType", "count"],
        aliases=[
            "urn:pulumi:dev::demo::legacy:index:Web::web",
            pulumi.Alias(name="old-web"),
            pulumi.Alias(type_="aws:ec2/instance:Old"),
            pulumi.Alias(parent=outer),
            pulumi.Alias(parent=None),
        ],
    ),
)
plain = pulumi.CustomResource("test:index:Thing", "plain", {"ref": web.id, "name": None})
prov = pulumi.ProviderResource("aws", "prov", {"region": "eu-west-1"})
named = pulumi.CustomResource(
    "aws:s3/bucket:Bucket", "named", {"name": "given", "arn": None}, pulumi.ResourceOptions(provider=prov)
)
zones = invoke("aws:index/getAvailabilityZones:getAvailabilityZones", {}).value
invoke("test:index/none:none", {})
pulumi.log.warn("careful")
pulumi.export("zone", zones["names"][0])
pulumi.export("ip", web.privateIp)
pulumi.export("arn", web.arn)
pulumi.export("plainName", plain.name)
pulumi.export("named", [named.name, named.arn])
pulumi.export("token", pulumi.Config("demo").require_secret("token"))
pulumi.export("n", 3.0)
pulumi.export("list", [1.0, {"x": 2.0}])
pulumi.export("dryRun", pulumi.runtime.is_dry_run())
pulumi.export("tokenIsSecret", pulumi.runtime.config.is_config_secret("demo:token"))
if __name__ == "__main__":
    pulumi.export("main", True)
"""

STACK_URN = "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev"
OUTER = "urn:pulumi:dev::demo::pkg:index:Comp::outer"
INNER = "urn:pulumi:dev::demo::pkg:index:Comp$pkg:index:Comp::inner"
WEB = "urn:pulumi:dev::demo::pkg:index:Comp$pkg:index:Comp$aws:ec2/instance:Instance::web"
PLAIN = "urn:pulumi:dev::demo::test:index:Thing::plain"
NAMED = "urn:pulumi:dev::demo::aws:s3/bucket:Bucket::named"
PROV = "urn:pulumi:dev::demo::pulumi:providers:aws::prov"


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[runner.ProgramRun, runner.RecordingMonitor]:
    """The program's run, once per test (~20 ms): mutmut runs only the tests it saw reach a mutated function."""
    folder = tmp_path_factory.mktemp("program")
    (folder / "__main__.py").write_text(PROGRAM)
    stack = StackFile("demo", "dev", folder / "Pulumi.dev.yaml", {"demo:token": "abc"}, ("demo:token",))
    monitor = runner.RecordingMonitor(runner.PlanMocks("eu-west-1"))
    return runner.run_program(folder / "__main__.py", stack, "eu-west-1", monitor), monitor


def by_name(run: runner.ProgramRun) -> dict[str, runner.Registered]:
    return {r.name: r for r in run.resources}


def test_urns_carry_every_ancestor_type_and_no_stack(ran):
    run, _ = ran
    got = by_name(run)
    assert [r.urn for r in run.resources] == sorted([OUTER, INNER, WEB, PLAIN, NAMED, PROV])
    assert (got["outer"].urn, got["inner"].urn, got["web"].urn, got["plain"].urn) == (OUTER, INNER, WEB, PLAIN)
    assert (got["outer"].parent, got["inner"].parent, got["web"].parent) == (STACK_URN, OUTER, INNER)
    assert got["plain"].parent == STACK_URN
    assert [r.type for r in run.resources if r.type == "pulumi:pulumi:Stack"] == []


def test_inputs_are_recorded_with_secrets_masked_and_whole_numbers_as_ints(ran):
    web = by_name(ran[0])["web"]
    assert web.inputs == {
        "instanceType": "t3.micro",
        "count": 2,
        "ratio": 2.5,
        "password": "[secret]",
        "nested": {"list": [1, "a", {"deep": 4}], "flag": True},
    }
    assert type(web.inputs["count"]) is int and type(web.inputs["nested"]["list"][2]["deep"]) is int
    assert type(web.inputs["ratio"]) is float and web.inputs["nested"]["flag"] is True
    assert by_name(ran[0])["plain"].inputs == {"ref": "<id of web>"}  # a resource's id as the mocks answer it


def test_options_and_kinds_are_recorded(ran):
    got = by_name(ran[0])
    web, plain, outer = got["web"], got["plain"], got["outer"]
    assert (web.custom, plain.custom, outer.custom) == (True, True, False)
    assert (web.protect, web.retain_on_delete, web.ignore_changes) == (True, True, ("instanceType", "count"))
    assert (plain.protect, plain.retain_on_delete, plain.ignore_changes, plain.aliases) == (False, False, (), ())
    assert got["named"].provider == f"{PROV}::<id of prov>" and got["prov"].inputs["region"] == "eu-west-1"


def test_aliases_resolve_to_urns_with_the_resources_own_parts_where_unset(ran):
    assert by_name(ran[0])["web"].aliases == tuple(
        sorted(
            {
                "urn:pulumi:dev::demo::pkg:index:Comp$pkg:index:Comp$aws:ec2/instance:Instance::old-web",  # name
                "urn:pulumi:dev::demo::pkg:index:Comp$pkg:index:Comp$aws:ec2/instance:Old::web",  # type
                "urn:pulumi:dev::demo::pkg:index:Comp$aws:ec2/instance:Instance::web",  # parent
                "urn:pulumi:dev::demo::legacy:index:Web::web",  # a URN as given
                "urn:pulumi:dev::demo::aws:ec2/instance:Instance::web",  # no parent
            }
        )
    )


def test_as_json_names_every_field(ran):
    web = by_name(ran[0])["web"]
    assert web.as_json() == {
        "urn": WEB,
        "type": "aws:ec2/instance:Instance",
        "name": "web",
        "parent": INNER,
        "custom": True,
        "inputs": web.inputs,
        "protect": True,
        "retainOnDelete": True,
        "aliases": list(web.aliases),
        "ignoreChanges": ["instanceType", "count"],
    }


def test_outputs_resolve_mock_answers_and_mask_secrets(ran):
    assert ran[0].outputs == {
        "zone": "<first available zone in eu-west-1>",  # an invoke answer with {region}
        "ip": "<private ip of web>",  # a resource answer with {name}
        "arn": "<arn of web>",
        "plainName": "<autoname:plain>",
        "named": ["given", "<arn of named>"],  # an input the program sets wins over the mocks' default name
        "token": "[secret]",
        "n": 3,
        "list": [1, {"x": 2}],
        "dryRun": False,  # an up, not a preview
        "tokenIsSecret": True,  # the stack's secure: keys stay secret to the program
        "main": True,  # run as `pulumi up` runs it
    }
    assert type(ran[0].outputs["n"]) is int


def test_invokes_are_recorded_and_an_unanswered_one_is_a_warning(ran):
    run, monitor = ran
    assert [token for token, _ in monitor.invokes] == [
        "aws:index/getAvailabilityZones:getAvailabilityZones",
        "test:index/none:none",
    ]
    assert run.warnings == ["careful", "offline plan: no mock answer for invoke test:index/none:none"]
    assert monitor.mocks.unanswered == ["test:index/none:none"]
    assert "web" in run.program_globals and "zones" in run.program_globals
    # what the SDK's mock monitor answers resource lookups with
    web = monitor.resources[WEB]
    assert (web.urn, web.id, web.state["privateIp"]) == (WEB, "<id of web>", "<private ip of web>")


def test_a_second_run_starts_from_a_fresh_stack_and_keeps_warnings_off_the_root_logger(ran, tmp_path, caplog):
    (tmp_path / "__main__.py").write_text(
        "import pulumi\nfrom pulumi.runtime import invoke\n"
        'pulumi.log.warn("again")\n'
        'pulumi.export("zone", invoke("aws:index/getAvailabilityZones:getAvailabilityZones", {}).value["names"][0])\n'
    )
    stack = StackFile("demo", "other", tmp_path / "Pulumi.other.yaml", {}, ())
    root_handlers = list(logging.getLogger().handlers)
    with caplog.at_level(logging.WARNING):
        again = runner.run_program(tmp_path / "__main__.py", stack, "us-east-1")
    assert (again.resources, again.warnings) == ([], ["again"])
    assert again.outputs == {"zone": "<first available zone in us-east-1>"}  # the stack's region
    assert "again" not in caplog.text and logging.getLogger().handlers == root_handlers


def test_mock_calls_fill_their_arguments_and_region():
    mocks = runner.PlanMocks("ap-south-1")
    from pulumi.runtime import mocks as pulumi_mocks

    answer = mocks.call(
        pulumi_mocks.MockCallArgs("aws:ssm/getParameter:getParameter", {"name": "/p"}, "")  # type: ignore[call-arg]
    )
    assert answer == {"name": "/p", "type": "String", "value": "<resolved at deploy: ssm:/p>", "version": 1}
    assert mocks.call(pulumi_mocks.MockCallArgs("x:y:z", {}, "")) == {}  # type: ignore[call-arg]
    assert mocks.unanswered == ["x:y:z"]
    assert runner._fill(["{region}", {"k": ["{name}"]}, 5], name="n", region="r") == ["r", {"k": ["n"]}, 5]


def test_mock_answers_must_be_reference_placeholders_at_any_depth():
    runner._check_references("t:index:T", {"a": ["<id of {name}>", {"b": "<autoname:{name}>"}], "c": 1, "d": "x"})
    runner._check_references("t:index:T", {"zone": "<zone in {region} of {name}>"})  # the region is filled too
    for bad in ({"a": "{name}-x"}, {"a": ["<id of {name}>", "{name}"]}, {"a": {"b": "<{name}>"}}):
        with pytest.raises(ValueError, match=r"^mocks: t:index:T: .* is not a reference placeholder"):
            runner._check_references("t:index:T", bad)
    assert {"resources", "invokes"} == set(runner._mock_answers())
    assert runner._mock_answers()["resources"]["aws:ec2/keyPair:KeyPair"] == {"keyName": "<autoname:{name}>"}
