"""The Pulumi program: read stack config, build the spec, create one GpuCluster, export its outputs."""

import pulumi

from components.cluster import GpuCluster
from components.config import spec_from_pulumi

spec = spec_from_pulumi()
cluster = GpuCluster(spec.name, spec)
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
