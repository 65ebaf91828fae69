"""The cross-field rules, one module per concern, and `CROSS_RULES`: the order their errors are reported in.

Each rule reads the keys it names and yields one ConfigError per problem; all run, so a config with three
mistakes hears of three. `_instance_type` stores the resolved type in the context, which the rules after it read.
"""

from __future__ import annotations

from ..context import Check
from .budget import _budget
from .capacity import _capacity, _capacity_offers
from .encryption import _encryption
from .identity import _login_user
from .instance import (
    _cpu_arch,
    _fabric,
    _gpu_partition,
    _gpu_vendor,
    _instance_type,
    _other_cloud_blocks,
    _zone,
    _zone_known,
)
from .monitoring import _monitoring
from .names import _derived_names, _name, _tags
from .network import _existing_network, _network
from .nodes import _image, _node_counts, _node_group, _node_group_default
from .scaling import _scaling
from .scheduler import _scheduler, _slurm_names
from .serve import _serve
from .sharing import _gpu_sharing, _slurm_gres
from .storage import _mount_paths, _scratch, _shared_storage
from .update import _update

CROSS_RULES: tuple[Check, ...] = (
    _name,
    _derived_names,
    _zone,
    _other_cloud_blocks,
    _instance_type,
    _zone_known,
    _node_group_default,
    _node_counts,
    _node_group,
    _fabric,
    _scratch,
    _shared_storage,
    _mount_paths,
    _capacity,
    _capacity_offers,
    _image,
    _network,
    _tags,
    _login_user,
    _gpu_partition,
    _existing_network,
    _scheduler,
    _slurm_names,
    _gpu_sharing,
    _slurm_gres,
    _gpu_vendor,
    _cpu_arch,
    _scaling,
    _serve,
    _update,
    _encryption,
    _budget,
    _monitoring,
)
