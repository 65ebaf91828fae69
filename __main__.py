"""The Pulumi program: read stack config as `GpuClusterArgs`, validate, create one GpuCluster, export its outputs."""

import pulumi

from components.cluster import GpuCluster
from components.config import spec_from_pulumi
from components.errors import ConfigError

try:
    # GpuClusterArgs.from_config -> to_spec -> build_spec: the path typed args from Python take too
    spec = spec_from_pulumi()
    cluster = GpuCluster(spec.name, spec)
except ConfigError as exc:
    # RunError: the CLI prints this one line, not the program text and a stack trace
    raise pulumi.RunError(str(exc)) from None
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
