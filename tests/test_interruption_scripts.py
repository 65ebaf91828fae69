"""The interruption watchers and the drain, run for real as a node gets them (comments stripped, the common loop
inlined, the settings catalog/interruption.yaml gives) against stubbed metadata services (`curl`, answering with the
clouds' documented response shapes), Slurm (`scontrol`, `squeue`) and the AWS CLI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from components import bootstrap
from components.bootstrap.interruption import watcher_env
from components.catalog.interruption import cloud_data

from .hook_helpers import assert_shellcheck_clean, run_hook, stub_bin

CLOUDS = ("aws", "gcp", "azure", "alicloud", "tencentcloud")
NODE = "gpu-node-1"
VM = "llm-train-vmss_3"
EVENT = "C7061BAC-AFDC-4513-B24B-AA5F13A16123"


def curl_stub(answers: Mapping[str, str | None]) -> str:
    """`curl`: logs its arguments; answers the first URL pattern that matches (None: HTTP 404, as curl -f fails)."""
    lines = ['echo "curl $*" >> "$CALLS"', 'case "$*" in']
    for pattern, body in answers.items():
        if body is None:
            lines.append(f"  *{json.dumps(pattern)}*) exit 22 ;;")
        else:
            lines.append(f"  *{json.dumps(pattern)}*) printf '%s' {_shell_quote(body)} ;;")
    lines += ["  *) exit 22 ;;", "esac"]
    return "\n".join(lines) + "\n"


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


SLURM = {
    # scontrol: logged; `requeue` refused for the ids in NOREQUEUE (Slurm: only batch jobs can be requeued)
    "scontrol": 'echo "scontrol $*" >> "$CALLS"\n'
    'if [ "$1" = requeue ]; then case " ${NOREQUEUE:-} " in *" $2 "*) exit 1 ;; esac; fi\n',
    # squeue: the running jobs (JOBS), then, while the drain waits, what is left (LEFT_FOR calls, then nothing)
    "squeue": 'echo "squeue $*" >> "$CALLS"\n'
    'case "$*" in *RUNNING,COMPLETING*)\n'
    '  n=$(($(cat "$WAITS" 2>/dev/null || echo 0) + 1)); echo "$n" > "$WAITS"\n'
    '  [ "$n" -le "${LEFT_FOR:-0}" ] && echo "${JOBS%% *}"; exit 0 ;;\n'
    "esac\n"
    'for j in ${JOBS:-}; do echo "$j"; done\n',
    "hostname": f'[ "$1" = -s ] && echo {NODE}\n',
    "aws": 'echo "aws $*" >> "$CALLS"\n'
    'case "$*" in *describe-auto-scaling-instances*) echo llm-train-aws-asg-5f3c ;; esac\n',
}


def run_watcher(
    tmp_path: Path,
    cloud: str,
    answers: Mapping[str, str | None],
    *,
    managed: bool = True,
    scheduler: str = "slurm",
    **env: str,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """One look (ONCE) of the cloud's watcher, with the drain as the node gets it; the calls made, in order."""
    drain = tmp_path / "gpu-cluster-drain"
    drain.write_text(bootstrap.node_text(bootstrap.script("drain.sh")))
    drain.chmod(0o755)
    watcher = tmp_path / f"interruption_{cloud}.sh"
    watcher.write_text(bootstrap.node_text(bootstrap.script(f"interruption_{cloud}.sh")))
    calls = tmp_path / "calls.log"
    bin_dir = stub_bin(tmp_path, {"curl": curl_stub(answers), **SLURM})
    full = {
        **watcher_env(cloud, managed=managed),
        "ONCE": "1",
        "DRAIN": str(drain),
        "DRAIN_ENV": str(tmp_path / "absent.env"),
        "SCHEDULER": scheduler,
        "STEP_SECONDS": "0",
        "STATE_FILE": str(tmp_path / "run" / "handled"),
        "CALLS": str(calls),
        "WAITS": str(tmp_path / "waits"),
        "JOBS": "101 102",
        **env,
    }
    proc = run_hook(watcher, bin_dir, full)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def slurm_calls(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("scontrol ")]


def drained(calls: list[str], reason: str) -> None:
    assert slurm_calls(calls) == [
        f"scontrol update nodename={NODE} state=DRAIN reason=gpu-cluster: {reason}",
        "scontrol requeue 101",
        "scontrol requeue 102",
    ]


def iso(seconds_from_now: int) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- AWS: IMDSv2, Spot instance-action, Auto Scaling target lifecycle state -----------------------------------------

AWS = cloud_data("aws")
HOOK = "gpu-cluster-drain"  # catalog/update.yaml aws hook.name, as the watcher's env gives it
TOKEN = {f"-X PUT {AWS['metadata']}{AWS['tokenPath']}": "tok-1"}


def aws_answers(state: str = "InService", action: str | None = None) -> dict[str, str | None]:
    base = AWS["metadata"]
    return {
        **TOKEN,
        f"{AWS['tokenHeader']}: tok-1 {base}{AWS['lifecyclePath']}": state,
        f"{AWS['tokenHeader']}: tok-1 {base}{AWS['spotPath']}": action,
        f"{AWS['tokenHeader']}: tok-1 {base}{AWS['instanceIdPath']}": "i-0abc123",
        f"{AWS['tokenHeader']}: tok-1 {base}{AWS['regionPath']}": "us-east-1",
    }


def test_aws_without_a_notice_nothing_happens(tmp_path):
    proc, calls = run_watcher(tmp_path, "aws", aws_answers())
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and not [c for c in calls if c.startswith(("aws ", "squeue "))]
    # it asked with the token, for the lifecycle state and the Spot notice
    assert any(AWS["lifecyclePath"] in c and "tok-1" in c for c in calls)
    assert any(AWS["spotPath"] in c and "tok-1" in c for c in calls)


def test_aws_spot_notice_drains_and_requeues_without_a_lifecycle_action(tmp_path):
    when = iso(-1)  # the notice's time: the drain does not wait past it
    action = json.dumps({"action": "terminate", "time": when})
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(action=action))
    assert proc.returncode == 0, proc.stderr
    drained(calls, f"Spot interruption: terminate at {when}")
    assert not [c for c in calls if c.startswith("aws ")]
    assert "job 101 requeued" in proc.stderr


def test_aws_lifecycle_terminated_drains_then_completes_the_hook_with_continue(tmp_path):
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"))
    assert proc.returncode == 0, proc.stderr
    drained(calls, "Auto Scaling: target lifecycle state Terminated")
    assert [c for c in calls if c.startswith("aws ")] == [
        "aws autoscaling describe-auto-scaling-instances --region us-east-1 --instance-ids i-0abc123 "
        "--query AutoScalingInstances[0].AutoScalingGroupName --output text",
        "aws autoscaling complete-lifecycle-action --region us-east-1 --auto-scaling-group-name llm-train-aws-asg-5f3c "
        f"--lifecycle-hook-name {HOOK} --instance-id i-0abc123 --lifecycle-action-result CONTINUE",
    ]
    # the drain came first, then the hook
    assert calls.index(next(c for c in calls if "complete-lifecycle-action" in c)) > calls.index(
        next(c for c in calls if c.startswith("scontrol requeue"))
    )


def test_aws_a_notice_is_drained_once(tmp_path):
    for _ in range(2):
        proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"))
        assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls if "state=DRAIN" in c]) == 1
    assert len([c for c in calls if "complete-lifecycle-action" in c]) == 1


def test_aws_instances_outside_a_group_do_not_watch_the_lifecycle_state(tmp_path):
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"), managed=False)
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and not [c for c in calls if AWS["lifecyclePath"] in c]


# --- the drain itself ------------------------------------------------------------------------------------------------


def test_a_job_that_cannot_be_requeued_is_named_and_the_others_still_are(tmp_path):
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"), NOREQUEUE="101")
    assert proc.returncode == 0, proc.stderr
    assert "job 101 not requeueable" in proc.stderr and "job 102 requeued" in proc.stderr
    assert "scontrol requeue 102" in calls


def test_the_drain_waits_until_the_node_is_idle(tmp_path):
    # the lifecycle deadline is an hour away: jobs still completing twice, then none
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"), LEFT_FOR="2")
    assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls if c.startswith("squeue") and "RUNNING,COMPLETING" in c]) == 3
    assert f"{NODE} idle" in proc.stderr


def test_the_drain_stops_waiting_at_the_deadline(tmp_path):
    action = json.dumps({"action": "stop", "time": iso(-5)})
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(action=action), LEFT_FOR="99")
    assert proc.returncode == 0, proc.stderr
    assert f"deadline: job(s) left on {NODE}: 101" in proc.stderr
    assert len([c for c in calls if "RUNNING,COMPLETING" in c]) == 1


def test_without_a_scheduler_the_drain_only_logs(tmp_path):
    proc, calls = run_watcher(tmp_path, "aws", aws_answers(state="Terminated"), scheduler="none")
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and "no scheduler: nothing to drain" in proc.stderr
    assert any("complete-lifecycle-action" in c for c in calls)  # the group still need not wait for the timeout


# --- GCP: preempted (long-polled), maintenance-event -----------------------------------------------------------------

GCP = cloud_data("gcp")


def gcp_answers(preempted: str = "FALSE", later: str = "FALSE", event: str = "NONE") -> dict[str, str | None]:
    base = f"{GCP['header']} {GCP['metadata']}"
    return {
        f"{base}{GCP['preemptedPath']}?wait_for_change=true&timeout_sec={GCP['pollSeconds']}": later,
        f"{base}{GCP['preemptedPath']}": preempted,
        f"{base}{GCP['maintenancePath']}": event,
    }


def test_gcp_without_a_notice_nothing_happens_and_it_long_polls(tmp_path):
    proc, calls = run_watcher(tmp_path, "gcp", gcp_answers())
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls)
    assert any("wait_for_change=true" in c and "Metadata-Flavor: Google" in c for c in calls)


@pytest.mark.parametrize("answers", [gcp_answers(preempted="TRUE"), gcp_answers(later="TRUE")])
def test_gcp_preemption_drains_and_requeues(tmp_path, answers):
    proc, calls = run_watcher(tmp_path, "gcp", answers)
    assert proc.returncode == 0, proc.stderr
    drained(calls, "Compute Engine preempted this VM")


def test_gcp_a_terminating_maintenance_drains_a_migrating_one_does_not(tmp_path):
    proc, calls = run_watcher(tmp_path, "gcp", gcp_answers(event="TERMINATE_ON_HOST_MAINTENANCE"))
    assert proc.returncode == 0, proc.stderr
    drained(calls, "host maintenance TERMINATE_ON_HOST_MAINTENANCE")
    other = tmp_path / "other"
    other.mkdir()
    proc, calls = run_watcher(other, "gcp", gcp_answers(event="MIGRATE_ON_HOST_MAINTENANCE"))
    assert proc.returncode == 0 and not slurm_calls(calls)


# --- Azure: Scheduled Events, approved with StartRequests -----------------------------------------------------------

AZ = cloud_data("azure")


def az_event(**fields: object) -> dict[str, object]:
    """One event as the Scheduled Events document has it (learn.microsoft.com ... linux/scheduled-events)."""
    return {
        "EventId": EVENT,
        "EventType": "Preempt",
        "ResourceType": "VirtualMachine",
        "Resources": [VM],
        "EventStatus": "Scheduled",
        "NotBefore": (datetime.now(UTC) - timedelta(seconds=1)).strftime("%a, %d %b %Y %H:%M:%S GMT"),
        "Description": "",
        "EventSource": "Platform",
        "DurationInSeconds": -1,
        **fields,
    }


def az_answers(*events: dict[str, object]) -> dict[str, str | None]:
    url = f"{AZ['metadata']}{AZ['eventsPath']}?api-version={AZ['eventsApiVersion']}"
    name = f"{AZ['metadata']}{AZ['instanceNamePath']}?api-version={AZ['instanceApiVersion']}&format=text"
    return {
        "-X POST -d": "",
        f"{AZ['header']} {name}": VM,
        f"{AZ['header']} {url}": json.dumps({"DocumentIncarnation": 2, "Events": list(events)}),
    }


def posted(calls: list[str]) -> list[dict[str, object]]:
    out = []
    for c in calls:
        if "-X POST" in c:
            body = c.split("-d ", 1)[1].rsplit(" http", 1)[0]
            out.append(json.loads(body))
    return out


def test_azure_without_events_nothing_happens(tmp_path):
    proc, calls = run_watcher(tmp_path, "azure", az_answers())
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and not posted(calls)
    assert any(f"api-version={AZ['eventsApiVersion']}" in c and "Metadata: true" in c for c in calls)


@pytest.mark.parametrize("kind", ["Preempt", "Terminate", "Reboot", "Redeploy"])
def test_azure_an_event_that_stops_this_vm_drains_then_is_approved(tmp_path, kind):
    proc, calls = run_watcher(tmp_path, "azure", az_answers(az_event(EventType=kind)))
    assert proc.returncode == 0, proc.stderr
    drained(calls, f"Azure Scheduled Event(s) {kind} for {VM}")
    assert posted(calls) == [{"StartRequests": [{"EventId": EVENT}]}]


@pytest.mark.parametrize(
    "event",
    [
        az_event(Resources=["llm-train-vmss_7"]),  # another VM of the scale set
        az_event(EventType="Freeze"),  # a pause of seconds: left to the platform
        az_event(EventStatus="Started"),  # already happening
    ],
)
def test_azure_events_that_are_not_ours_to_drain_for_are_left_alone(tmp_path, event):
    proc, calls = run_watcher(tmp_path, "azure", az_answers(event))
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and not posted(calls)


# --- Alibaba and Tencent: spot termination-time ---------------------------------------------------------------------

ALI = cloud_data("alicloud")
TEN = cloud_data("tencentcloud")


def ali_answers(when: str | None) -> dict[str, str | None]:
    return {
        f"-X PUT {ALI['metadata']}{ALI['tokenPath']}": "ali-tok",
        f"{ALI['tokenHeader']}: ali-tok {ALI['metadata']}{ALI['spotPath']}": when,
    }


def test_alicloud_without_a_notice_nothing_happens(tmp_path):
    proc, calls = run_watcher(tmp_path, "alicloud", ali_answers(None))
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and any(ALI["spotPath"] in c and "ali-tok" in c for c in calls)


def test_alicloud_spot_reclaim_drains_and_requeues(tmp_path):
    when = iso(-1)
    proc, calls = run_watcher(tmp_path, "alicloud", ali_answers(when))
    assert proc.returncode == 0, proc.stderr
    drained(calls, f"spot instance reclaimed at {when}")


def ten_answers(when: str | None) -> dict[str, str | None]:
    return {f"{TEN['metadata']}{TEN['spotPath']}": when}


def test_tencentcloud_without_a_notice_nothing_happens(tmp_path):
    proc, calls = run_watcher(tmp_path, "tencentcloud", ten_answers(None))
    assert proc.returncode == 0, proc.stderr
    assert not slurm_calls(calls) and any(TEN["spotPath"] in c for c in calls)


def test_tencentcloud_spot_reclaim_drains_until_its_utc8_time(tmp_path):
    # the reclaim time as the documented example writes it, in UTC+8, 3 seconds ahead; jobs never leave
    cst = timezone(timedelta(hours=8))
    when = (datetime.now(cst) + timedelta(seconds=3)).strftime("%Y-%m-%d %H:%M:%S")
    proc, calls = run_watcher(tmp_path, "tencentcloud", ten_answers(when), LEFT_FOR="999", STEP_SECONDS="0.5")
    assert proc.returncode == 0, proc.stderr
    drained(calls, f"spot instance reclaimed at {when} (UTC+0800)")
    # it waited (read as 8 hours ago it would not have) and stopped at the time (read as UTC, 8 hours later, it
    # would still be waiting at the hook's timeout)
    assert len([c for c in calls if "RUNNING,COMPLETING" in c]) > 1
    assert "deadline: job(s) left" in proc.stderr


# --- every script: shellcheck, as in the repository and as the node gets it ----------------------------------------


@pytest.mark.parametrize("name", ["drain.sh", "interruption_common.sh", *(f"interruption_{c}.sh" for c in CLOUDS)])
def test_shellcheck_clean_in_the_repository_and_on_the_node(tmp_path, name):
    assert_shellcheck_clean(Path(bootstrap.__file__).parent / name)
    if name != "interruption_common.sh":
        node = tmp_path / name
        node.write_text(bootstrap.node_text(bootstrap.script(name)))
        assert_shellcheck_clean(node)
