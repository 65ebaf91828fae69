"""The MIG part: partition every GPU into `gpuPartition` instances at boot, before the health check."""

from __future__ import annotations

from . import Part, oneshot_unit, script, service_part


def mig_part(partition: tuple[str, int] | None) -> Part:
    if partition is None:
        return Part("mig")
    profile, count = partition
    return service_part(
        "mig",
        script_text=script("mig.sh"),
        env={"MIG_PROFILE": profile, "MIG_COUNT": str(count)},
        unit=oneshot_unit(
            f"gpu-cluster MIG partitioning ({profile} x {count} per GPU)",
            name="mig",
            after=["nvidia-persistenced.service"],
            before=["gpu-cluster-health.service"],
        ),
        summary=f"partitions every GPU into {count} x MIG {profile}.",
    )
