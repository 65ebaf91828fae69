"""EFA on AWS: the network interfaces each node gets, the NCCL/libfabric environment, the boot check and whether NCCL
can use the fabric.

EFA wiring follows AWS's current recommendation (EC2 User Guide, "Maximize network bandwidth on
accelerated instance types", docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
the primary interface is a plain ENA `interface` on card 0 / device 0, card 0 carries an
`efa-only` device at index 1, and every further card carries an `efa-only` device at index 0.
`efa-only` interfaces take no IP address, so a p5.48xlarge gets all 32 EFA devices without
exhausting the subnet (pulumi-eks makes the same argument). Older tools (terraform-aws-eks,
ParallelCluster) use an `efa` primary and device index 1 on other cards; AWS moved away from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ... import catalog
from ...bootstrap import Part, oneshot_unit, script, service_part
from ...bootstrap.fabric import FabricUsability, nccl_env_part
from ...catalog import releases
from ...spec import ClusterSpec
from .. import image_for
from . import data

InterfaceType = Literal["interface", "efa", "efa-only"]
EFA_RESULT = "/var/lib/gpu-cluster/efa.json"


@dataclass(frozen=True)
class NetworkInterface:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType

    @property
    def is_efa(self) -> bool:
        return self.interface_type in ("efa", "efa-only")


def efa_interfaces(cards: int, efa_devices: int) -> tuple[NetworkInterface, ...]:
    """One EFA per network card, primary ENA first (scheme in the module docstring)."""
    efas = min(cards, efa_devices)
    if efas == 0:
        return (NetworkInterface(0, 0, "interface"),)
    return (
        NetworkInterface(0, 0, "interface"),
        NetworkInterface(0, 1, "efa-only"),
        *(NetworkInterface(card, 0, "efa-only") for card in range(1, efas)),
    )


def interfaces_of(spec: ClusterSpec) -> tuple[NetworkInterface, ...]:
    """The node's interfaces: one EFA per card when the fabric is wired, else the primary ENA alone."""
    if spec.fabric_wired:
        return efa_interfaces(spec.instance.networkCards or 1, spec.instance.fabricDevices)
    return (NetworkInterface(0, 0, "interface"),)


def instance_family(instance_type: str) -> str:
    """`p5en.48xlarge` -> `p5en`, `p6-b200.48xlarge` -> `p6-b200`."""
    return instance_type.split(".", 1)[0]


def nccl_env(instance_type: str) -> tuple[dict[str, str], str]:
    """The NCCL/libfabric environment for an EFA type, and its sources (capabilities `efa:`)."""
    efa = data.efa()
    env = {str(k): str(v) for k, v in efa["env"].items()}
    sources = [str(efa["envSource"])]
    family = efa["families"].get(instance_family(instance_type))
    if family:
        env.update({str(k): str(v) for k, v in family["env"].items()})
        sources.append(str(family["source"]))
    return env, "; ".join(sources)


def _default_image_vouches(spec: ClusterSpec) -> tuple[bool, str]:
    """Whether the image is the catalog's default (whose contents the catalog documents), and its name."""
    default: dict[str, Any] = catalog.load("aws").images["default"]
    entry = catalog.arch_image("aws", spec.instance) or image_for("aws", spec.instance.instanceType)
    if releases.choice("aws", entry, spec.image) is not None:  # auto, latest or a release of the entry's series
        return entry is default, entry.get("description", spec.instance.instanceType)
    if spec.image.removeprefix("ssm:") == default["ssmParameter"]:
        return True, default["description"]
    return False, spec.image


def efa_usability(spec: ClusterSpec, efa_count: int) -> FabricUsability:
    if not efa_count:
        return FabricUsability(False, ("no fabric wired",))
    vouched, image = _default_image_vouches(spec)
    if not vouched:
        return FabricUsability(
            False,
            (
                f"EFA software on {image}: the catalog cannot vouch for a custom image (libfabric with the efa "
                "provider and aws-ofi-nccl are needed; the boot check gpu-cluster-efa reports what it finds)",
            ),
        )
    efa: dict[str, Any] = catalog.load("aws").images["default"]["efa"]
    family = instance_family(spec.instance.instanceType)
    if family not in efa["supportedFamilies"]:
        return FabricUsability(
            False, (f"{family} is not among the instance types {image} supports (its release notes)",)
        )
    return FabricUsability(
        True,
        provides=(
            *(f"{p} from the image, verified at boot" for p in efa["provides"]),
            "NCCL environment in /etc/gpu-cluster/nccl.env",
        ),
    )


def efa_enablement(spec: ClusterSpec, efa_count: int) -> tuple[tuple[Part, ...], FabricUsability]:
    """The fabric parts (NCCL environment, the EFA boot check) and whether NCCL can use the fabric."""
    usability = efa_usability(spec, efa_count)
    if not efa_count:
        return (), usability
    efa = data.efa()
    env, source = nccl_env(spec.instance.instanceType)
    check_env = {
        "EFA_DIR": efa["efaDir"],
        "INSTALLED_PACKAGES": efa["installedPackages"],
        "PLUGIN_DIRS": " ".join(efa["pluginDirs"]),
        "PLUGIN_LIBRARIES": " ".join(efa["pluginLibraries"]),
        "MIN_LIBFABRIC": efa["minimum"]["libfabric"],
        "MIN_OFI_NCCL": efa["minimum"]["awsOfiNccl"],
        "RESULT": EFA_RESULT,
    }
    check_env = {k: str(v) for k, v in check_env.items()}
    check = service_part(
        "efa",
        script_text=script("aws_efa.sh"),
        env=check_env,
        unit=oneshot_unit(
            "gpu-cluster EFA check (libfabric efa provider, aws-ofi-nccl, loader path)",
            name="efa",
            wants=("network-online.target",),
            after=("network-online.target",),
            before=("gpu-cluster-health.service",),
        ),
        summary=f"checks the EFA provider and aws-ofi-nccl at boot ({EFA_RESULT}).",
    )
    return (nccl_env_part(env, source), check), usability
