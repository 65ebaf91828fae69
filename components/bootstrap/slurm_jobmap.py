"""Per-job GPU metrics on Slurm GPU nodes: a loop service (slurm_jobmap.sh) writes, every few seconds, which Slurm
jobs use each GPU of the node into the DCGM exporter's HPC job mapping directory, and a drop-in gives the exporter
that directory; its GPU metrics then carry the label `hpc_job` (the Grafana dashboard's `job` variable).

Why this way (the options weighed):

- Not slurmd's Prolog/Epilog. With the real slurmd 22.05 here a Prolog glob that matches nothing (an empty or absent
  directory) or an absolute program path missing on the node fails the Prolog: the node is DRAINED and the job
  requeued held. Adding one to nodes.conf (the in-place channel) would drain every node the rolling update has not
  replaced yet.
- Not the controller (`squeue -w <node> -t R` and `scontrol show job -d <id>`, whose `GRES=gpu:h100:1(IDX:0)` names
  the indexes): every node asking every 15 s is 1000 / 15 = 67 job-information requests a second to slurmctld at 1000
  nodes (more with one `show job` per job), each answered under its job read lock, beside the scheduler's own work;
  and a gres/mps job shows `GRES=mps:50(IDX:1)`, a shard job yet another form: one parser per GRES kind.
- Not `scontrol listpids`: it is local (it asks the node's slurmstepd sockets), but it finds them by the node's name
  from slurm.conf, which a dynamic node (`slurmd -Z`) is not in: with the real 22.05 slurmd -Z here it fails
  ("stepd_available: Couldn't find nodename", "No job steps exist on this node") while jobs run.
- Chosen: the processes root's slurmstepd started (the batch script, each step's tasks). Slurm sets their environment:
  SLURM_JOB_ID, and SLURM_JOB_GPUS / SLURM_STEP_GPUS, the node's global GPU indexes, not relative to the device cgroup
  (sbatch(1), srun(1)). Observed with the real 22.05 daemons here: a `--gres=gpu:h100:1` job has SLURM_JOB_GPUS=0, its
  srun step's task SLURM_STEP_GPUS=0, a `--gres=mps:50` job SLURM_JOB_GPUS=1 (its GPU), so jobs sharing a GPU through
  MPS are all named in its file. A step's task is read by SLURM_STEP_GPUS, which Slurm sets over what srun passed on
  from the batch script (or the user exported); the batch script, which has no step id, by SLURM_JOB_GPUS. A job's
  own processes could still claim other GPUs (by rewriting their environment): the label is for dashboards, not
  accounting (sacct, scontrol are). No request leaves the node; the cost is two pgrep and one read per task.
- Not on MIG instances (gpuPartition as `gpu:<profile>` GRES): Slurm's index there counts the node's MIG instances,
  while the exporter keys an instance by `<GPU>.<GPU instance id>` (hpc.go); mapping one to the other needs NVML's
  instance order, which no GPU here can show, so those nodes get no job map rather than a wrong one (layout/slurm.py
  `job_map`).
"""

from __future__ import annotations

from ..catalog.slurm import data
from . import File, Part, node_text, script
from .metrics import job_map_dropin
from .slurm_conf import SlurmLayout

JOBMAP = "slurm-jobmap"
PROGRAM = f"/usr/local/sbin/gpu-cluster-{JOBMAP}"


def jobmap_part(layout: SlurmLayout) -> tuple[Part, ...]:
    """The GPU node's job map writer and the exporter's drop-in; nothing without `layout.job_map`. The files are
    written before any command runs (cloud_init, startup_script), so the exporter starts with the drop-in."""
    if not layout.job_map:
        return ()
    rule = data()["jobMap"]
    directory, every = str(rule["directory"]), int(rule["everySeconds"])
    unit = (
        "[Unit]\n"
        "Description=gpu-cluster: the Slurm jobs of each GPU, for the DCGM exporter's hpc_job label\n\n"
        "[Service]\n"
        f"Environment=JOBMAP_DIR={directory} EVERY={every}\n"
        f"ExecStart={PROGRAM}\n"
        "Restart=always\n"
        f"RestartSec={every}\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
    return (
        Part(
            JOBMAP,
            files=(
                # without its comments: EC2 and Alibaba take 16 KB of user data (bootstrap.node_text)
                File(PROGRAM, node_text(script("slurm_jobmap.sh")), "0755"),
                File(f"/etc/systemd/system/gpu-cluster-{JOBMAP}.service", unit),
                job_map_dropin(directory),
            ),
            commands=(
                ("systemctl", "daemon-reload"),
                ("systemctl", "enable", "--now", f"gpu-cluster-{JOBMAP}.service"),
            ),
            summary=f"writes the Slurm jobs of each GPU to {directory} every {every} s; the DCGM exporter's metrics "
            "carry them as the label hpc_job",
        ),
    )
