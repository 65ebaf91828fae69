"""The provider entry point of the multi-language package (PulumiPlugin.yaml `main`).

The Pulumi CLI runs this file to host `GpuCluster` with `component_provider_host`; the schema is inferred
from `components/provider.py` (print it with `gpu-cluster schema`). Not the stack program: that is the
repository's `__main__.py`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the `components` package beside this folder

from pulumi.provider.experimental import component_provider_host

from components.provider import PACKAGE, GpuCluster, package_version

if __name__ == "__main__":
    component_provider_host([GpuCluster], PACKAGE, version=package_version())
