"""The provider entry point of the multi-language package (PulumiPlugin.yaml `main`).

The Pulumi CLI runs this file to host `GpuCluster` (`GpuClusterProvider`: the schema inferred from
`components/provider.py`, finished there; print it with `gpu-cluster schema`). Not the stack program: that is the
repository's `__main__.py`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the `components` package beside this folder

from pulumi.provider import main

from components.provider import GpuClusterProvider, package_version

if __name__ == "__main__":
    main(GpuClusterProvider(package_version()), sys.argv[1:])
