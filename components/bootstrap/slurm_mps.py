"""slurm.mps on the GPU nodes: the MPS control daemon that gres/mps jobs share a GPU through, one per GPU, started by
slurmd's Prolog for a gres/mps job and stopped for a whole-GPU one (slurm_mps.sh; Slurm's gres.html, "MPS
Management", leaves the daemon to a prolog)."""

from __future__ import annotations

from . import File, Part, script
from .slurm_conf import MPS_EPILOG, MPS_PROGRAM, MPS_PROLOG, MPS_STATE, MPS_TASK_PROLOG, SlurmLayout

# nvidia-cuda-mps-control: "Typically stored under /usr/bin" (NVIDIA MPS docs, Appendix: Tools and Interface
# Reference). Its pipe and log directories are made by systemd (RuntimeDirectory, LogsDirectory); -d daemonises and
# writes nvidia-cuda-mps-control.pid in CUDA_MPS_PIPE_DIRECTORY, which systemd waits for, so the Prolog returns once a
# job's CUDA programs can reach it; `quit` is NVIDIA's way to stop it. The GPU is named by NVML's index, which CUDA
# follows with CUDA_DEVICE_ORDER=PCI_BUS_ID (gres.html, "GPU Management").
MPS_CONTROL = "/usr/bin/nvidia-cuda-mps-control"
UNIT = f"""[Unit]
Description=gpu-cluster CUDA MPS control daemon of GPU %i (slurm.mps)

[Service]
Type=forking
Environment=CUDA_VISIBLE_DEVICES=%i CUDA_DEVICE_ORDER=PCI_BUS_ID
Environment=CUDA_MPS_PIPE_DIRECTORY={MPS_STATE}/gpu%i CUDA_MPS_LOG_DIRECTORY=/var/log/gpu-cluster-mps/gpu%i
RuntimeDirectory={MPS_STATE.removeprefix("/run/")}/gpu%i
LogsDirectory=gpu-cluster-mps/gpu%i
ExecStart={MPS_CONTROL} -d
PIDFile={MPS_STATE}/gpu%i/nvidia-cuda-mps-control.pid
ExecStop=/bin/sh -c 'echo quit | {MPS_CONTROL}'
"""


def mps_part(layout: SlurmLayout) -> tuple[Part, ...]:
    """The GPU node's MPS programs and daemon unit; nothing without slurm.mps."""
    if not layout.mps:
        return ()
    links = (MPS_PROLOG, MPS_TASK_PROLOG, MPS_EPILOG)
    return (
        Part(
            "slurm-mps",
            files=(
                File(MPS_PROGRAM, script("slurm_mps.sh"), "0755"),
                File("/etc/systemd/system/gpu-cluster-mps@.service", UNIT),
            ),
            commands=(("systemctl", "daemon-reload"), *(("ln", "-sf", MPS_PROGRAM, link) for link in links)),
            summary="starts a GPU's CUDA MPS daemon for the gres/mps jobs on it (slurmd's Prolog), stops it for a "
            "whole-GPU job",
        ),
    )
