"""The gpu-cluster policy pack: `pulumi preview --policy-pack policy [--policy-pack-config policy/config.json]`.

Each rule of `components.policy` becomes a stack validation policy with the rule's default
enforcement level; `gpu-cluster plan` runs the very same rules on its recorded resources.
Constructing `PolicyPack` starts the policy server, so this file only wires the rules up.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policy.pack import stack_policies

PolicyPack(name="gpu-cluster", policies=stack_policies(), enforcement_level=None)
