"""Mutation testing for the bootstrap shell scripts (mutmut mutates Python only).

Each mutation below is one textual change to a script: a flipped comparison, a removed line, a changed
constant. The harness applies them one at a time to a copy of the script in a temporary folder and
runs the script's test files against the copy (`tests/mutation/plugin.py` points each test module's
`SCRIPT` at it). A mutant is killed when a test fails, survives when all pass.

Left out of every run, because they would kill every mutant without testing behaviour: the tests that
compare the script text with the shipped one, and shellcheck.

    python3 -m uv run python -m tests.mutation.shell_mutants            # both scripts
    python3 -m uv run python -m tests.mutation.shell_mutants scratch -v  # one script, with each verdict

`old` must occur exactly once in the script: when the script changes under a mutation, the harness
stops and names it (a stale mutation is never skipped silently).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "components" / "bootstrap"


@dataclass(frozen=True)
class Mutation:
    what: str
    old: str
    new: str
    equivalent: str = ""  # why no test can tell it apart, when it survives by construction


@dataclass(frozen=True)
class Target:
    script: Path
    tests: tuple[str, ...]
    deselect: tuple[str, ...]
    mutations: tuple[Mutation, ...]


def removed(line: str, what: str) -> Mutation:
    return Mutation(f"remove: {what}", line, "")


SCRATCH = (
    Mutation("never skip the root disk", '[ "$EXCLUDE_ROOT" = 1 ]', '[ "$EXCLUDE_ROOT" = 0 ]'),
    removed('      [ -e "$dev" ] || continue\n', "skip globs that match nothing"),
    removed('      case "$dev" in *-part[0-9]*) continue ;; esac\n', "skip partitions"),
    Mutation("root disk test flipped", '"$(basename "$real")" = "$root"', '"$(basename "$real")" != "$root"'),
    Mutation("no de-duplication of devices", "done | sort -u", "done | sort"),
    removed('  log "$SCRATCH_PATH already mounted"\n  exit 0\n', "already mounted: stop"),
    removed("mdadm --assemble --scan >/dev/null 2>&1 || true\n", "re-assemble an earlier array"),
    Mutation("existing filesystem test flipped", 'if [ -n "$existing" ]; then', 'if [ -z "$existing" ]; then'),
    Mutation(
        "remount without noatime",
        'mount -o defaults,noatime,nofail "$existing"',
        'mount -o defaults,nofail "$existing"',
    ),
    Mutation(
        "wait while all devices are there",
        '[ "${#devices[@]}" -ge "$EXPECTED_DEVICES" ] && break',
        '[ "${#devices[@]}" -gt "$EXPECTED_DEVICES" ] && break',
    ),
    Mutation("wait only once", 'for _ in $(seq 1 "$WAIT_SECONDS"); do', "for _ in $(seq 1 1); do"),
    Mutation("no-device test off by one", 'if [ "${#devices[@]}" -eq 0 ]; then', 'if [ "${#devices[@]}" -eq 1 ]; then'),
    Mutation("no devices exits 0", '  log "no scratch devices match: $DEVICE_GLOBS"\n  exit 1', '  log "x"\n  exit 0'),
    Mutation("blank mountpoints count as in use", "| grep -v '^[[:space:]]*$' |", "|"),
    Mutation("in-use test flipped", 'if [ -n "$in_use" ]; then', 'if [ -z "$in_use" ]; then'),
    removed('  mount --bind "$in_use" "$SCRATCH_PATH"\n', "bind-mount the image's array"),
    Mutation(
        "single device goes through mdadm",
        'if [ "${#devices[@]}" -eq 1 ]; then',
        'if [ "${#devices[@]}" -eq 2 ]; then',
    ),
    Mutation("RAID1 instead of RAID0", "--level=0", "--level=1"),
    Mutation("RAID of the expected count", '--raid-devices="${#devices[@]}"', '--raid-devices="$EXPECTED_DEVICES"'),
    Mutation("filesystem without the label", 'mkfs.xfs -f -L "$FS_LABEL" "$target"', 'mkfs.xfs -f "$target"'),
    Mutation(
        "new mount without nofail",
        'mount -o defaults,noatime,nofail "$target"',
        'mount -o defaults,noatime "$target"',
    ),
    Mutation("scratch without the sticky bit", 'chmod 1777 "$SCRATCH_PATH"', 'chmod 0777 "$SCRATCH_PATH"'),
    removed('chmod 1777 "$SCRATCH_PATH"\n', "open the scratch to every user"),
    Mutation("mount the raw device", 'target="$MD_DEVICE"', 'target="${devices[0]}"'),
)

HEALTH = (
    Mutation("json_text: quotes not escaped", 'printf \'%s\' "${text//\\"/\\\\\\"}"', "printf '%s' \"$text\""),
    Mutation("json_text: backslashes not escaped", "local text=${1//\\\\/\\\\\\\\}", "local text=$1"),
    removed("    failed=1\n", "a failed check fails the node"),
    Mutation("record: ok test flipped", 'if [ "$2" = true ]; then', 'if [ "$2" != true ]; then'),
    Mutation(
        "wait for the GPUs while all are there",
        '[ "$found" -ge "$EXPECTED_GPUS" ] && break',
        '[ "$found" -gt "$EXPECTED_GPUS" ] && break',
    ),
    Mutation(
        "wait for the GPUs only once",
        'for _ in $(seq 1 "$WAIT_SECONDS"); do\n    found=$(count_gpus)',
        "for _ in $(seq 1 1); do\n    found=$(count_gpus)",
    ),
    Mutation(
        "wait for the fabric while all devices are there",
        '[ "$found" -ge "$EXPECTED_FABRIC_DEVICES" ] && break',
        '[ "$found" -gt "$EXPECTED_FABRIC_DEVICES" ] && break',
    ),
    Mutation(
        "more GPUs than sold pass",
        'if [ "$found" -ne "$EXPECTED_GPUS" ]; then',
        'if [ "$found" -lt "$EXPECTED_GPUS" ]; then',
    ),
    Mutation("GPU model match inverted", 'grep -v -F -- "$GPU_MODEL"', 'grep -F -- "$GPU_MODEL"'),
    Mutation("one wrong GPU model passes", '[ "$wrong" -gt 0 ]', '[ "$wrong" -gt 1 ]'),
    Mutation("one ECC error passes", "$2 > 0)", "$2 > 1)"),
    Mutation("pending retirement ignored", '$3 == "Yes"', '$3 == "No"'),
    Mutation("EFA counts every endpoint type", "fi_info -p efa -t FI_EP_RDM 2>/dev/null", "fi_info -p efa 2>/dev/null"),
    Mutation("IB counts ports that are down", '($2 == "Active")', '($2 != "Active")'),
    Mutation("IB counts Ethernet ports", '$3 == "InfiniBand"', '$3 != "InfiniBand"'),
    Mutation("RDMA counts ports that are down", "PORT_ACTIVE", "PORT_DOWN"),
    removed('        [ -e "$dev/device" ] || continue\n', "count virtual interfaces as NICs"),
    Mutation(
        "TCPX counts NICs that are down",
        '[ "$(cat "$dev/operstate" 2>/dev/null)" = up ]',
        '[ "$(cat "$dev/operstate" 2>/dev/null)" != up ]',
    ),
    Mutation("TCPX counts the host NIC", "echo $((n > 0 ? n - 1 : 0))", "echo $((n))"),
    removed('  [ "$FABRIC_KIND" = none ] && return\n', "no fabric check without fabric"),
    Mutation(
        "missing fabric device passes",
        '  if [ "$found" -ge "$EXPECTED_FABRIC_DEVICES" ]; then\n    record fabric true',
        '  if [ "$found" -ge "$((EXPECTED_FABRIC_DEVICES - 1))" ]; then\n    record fabric true',
    ),
    removed('      case "$dev" in *-part[0-9]*) continue ;; esac\n', "count partitions as NVMe devices"),
    Mutation(
        "missing NVMe device passes",
        'if [ "$n" -ge "$EXPECTED_NVME" ]; then',
        'if [ "$n" -ge "$((EXPECTED_NVME - 1))" ]; then',
    ),
    Mutation(
        "NVMe check runs when none is expected",
        '[ "$EXPECTED_NVME" -gt 0 ] || return',
        '[ "$EXPECTED_NVME" -ge 0 ] || return',
    ),
    Mutation(
        "MIG: more devices pass",
        'if [ "$found" -eq "$EXPECTED_MIG_DEVICES" ]; then',
        'if [ "$found" -ge "$EXPECTED_MIG_DEVICES" ]; then',
    ),
    Mutation(
        "MIG check runs without MIG",
        '[ "$EXPECTED_MIG_DEVICES" -gt 0 ] || return',
        '[ "$EXPECTED_MIG_DEVICES" -ge 0 ] || return',
    ),
    Mutation("DCGM runs at level 0", '[ "$DCGM_LEVEL" -gt 0 ] || return', '[ "$DCGM_LEVEL" -ge 0 ] || return'),
    Mutation("DCGM verdict inverted", 'if dcgmi diag -r "$DCGM_LEVEL"', 'if ! dcgmi diag -r "$DCGM_LEVEL"'),
    Mutation("GPU checks skipped", 'if [ "$EXPECTED_GPUS" -gt 0 ]; then', 'if [ "$EXPECTED_GPUS" -gt 8 ]; then'),
    removed("  check_ecc\n", "ECC check"),
    removed("check_mig\n", "MIG check"),
    Mutation("unhealthy reported healthy", '[ "$failed" = 0 ] || healthy=false', '[ "$failed" = 1 ] || healthy=false'),
    Mutation("JSON list separator", '[ "$i" -gt 0 ] && printf', '[ "$i" -ge 0 ] && printf'),
    Mutation("hook runs on report", 'if [ "$ACTION" = replace ] && [ -x', 'if [ "$ACTION" != replace ] && [ -x'),
    removed('  "$UNHEALTHY_HOOK" || log "the unhealthy hook failed"\n', "run the unhealthy hook"),
    Mutation(
        "unhealthy exits 0", '  log "unhealthy: reported only (action $ACTION)"\nfi\nexit 1', "  log x\nfi\nexit 0"
    ),
    Mutation("healthy exits 1", '  log "healthy"\n  exit 0', '  log "healthy"\n  exit 1'),
)

TARGETS = {
    "scratch": Target(
        BOOTSTRAP / "scratch.sh",
        ("tests/test_scratch_script.py", "tests/test_mutation_scratch_script.py"),
        (
            "tests/test_scratch_script.py::test_script_is_the_one_shipped_in_user_data",
            "tests/test_scratch_script.py::test_shellcheck_clean",
        ),
        SCRATCH,
    ),
    "health": Target(
        BOOTSTRAP / "health.sh",
        ("tests/test_health_script.py", "tests/test_mutation_health_script.py"),
        (
            "tests/test_health_script.py::test_shellcheck_clean",
            "tests/test_health_script.py::test_the_part_installs_the_script_its_settings_and_the_hook",
        ),
        HEALTH,
    ),
}


def mutate(source: str, mutation: Mutation) -> str:
    count = source.count(mutation.old)
    if count != 1:
        raise SystemExit(f"stale mutation {mutation.what!r}: {mutation.old!r} occurs {count} times")
    return source.replace(mutation.old, mutation.new)


def run_tests(target: Target, script_text: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="shell-mutant-") as tmp:
        copy = Path(tmp) / target.script.name
        copy.write_text(script_text)
        env = {
            **os.environ,
            "GPU_CLUSTER_MUTANT_ORIGINAL": str(target.script),
            "GPU_CLUSTER_MUTANT_COPY": str(copy),
        }
        args = [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.mutation.plugin",
        ]
        args += list(target.tests)
        for node in target.deselect:
            args += ["--deselect", node]
        return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def measure(name: str, target: Target, jobs: int, verbose: bool) -> tuple[int, int]:
    source = target.script.read_text()
    baseline = run_tests(target, source)
    if baseline.returncode != 0:
        raise SystemExit(f"{name}: the tests fail on the unmutated copy:\n{baseline.stdout[-3000:]}")
    mutants = [(m, mutate(source, m)) for m in target.mutations]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda mm: run_tests(target, mm[1]), mutants))
    killed = equivalent = 0
    for (mutation, _), proc in zip(mutants, results, strict=True):
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{name}: {mutation.what}: pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}")
        killed += proc.returncode == 1
        equivalent += proc.returncode == 0 and bool(mutation.equivalent)
        verdict = "killed" if proc.returncode else "equivalent" if mutation.equivalent else "SURVIVED"
        if verbose or proc.returncode == 0:
            print(
                f"  {verdict:10} {name}: {mutation.what}" + (f" ({mutation.equivalent})" if mutation.equivalent else "")
            )
    total = len(mutants)
    survived = total - killed - equivalent
    print(
        f"{target.script.relative_to(ROOT)}: {total} mutants, {killed} killed, {survived} survived, "
        f"{equivalent} equivalent: {100 * killed / total:.0f}% killed ({100 * killed / (total - equivalent):.0f}% "
        "of the non-equivalent)"
    )
    return total, killed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scripts", nargs="*", choices=[*TARGETS, []], help="default: all")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every verdict, not only survivors")
    args = parser.parse_args()
    if shutil.which("bash") is None:
        raise SystemExit("bash is needed")
    for name in args.scripts or TARGETS:
        measure(name, TARGETS[name], args.jobs, args.verbose)


if __name__ == "__main__":
    main()
