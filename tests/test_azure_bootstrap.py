"""Azure node bootstrap: the rendered cloud-init per fabric kind, fabric usability, health self-removal, metrics."""

from __future__ import annotations

import base64
import ipaddress
import subprocess

import pytest
import yaml

from components import catalog
from components.bootstrap.fabric import NCCL_ENV, FabricUsability
from components.errors import ConfigError
from components.layout import azure as azure_layout
from components.layout.azure.fabric import ib_family

from .conftest import plan_values, resources_of, spec_of
from .test_azure_resources import azure_values as values

# NVIDIA sizes only: the AMD one (ND MI300X v5) gets no NCCL parts, see tests/test_gpu_vendor.py
# the default HPC image is x86_64 NVIDIA: its IB parts are for those sizes (ND GB200 v6, arm64: test_arch)
IB_ROWS = [
    r
    for r in catalog.load("azure").types
    if r.fabric == "infiniband" and r.gpu_vendor == "nvidia" and r.arch == "x86_64"
]
CLOUD_CONFIG_KEYS = {"write_files", "runcmd"}
# Azure: "The custom data is limited to 64 KB" (MicrosoftDocs azure-docs articles/virtual-machines/custom-data.md);
# the base64 form is what the API takes.
CUSTOM_DATA_LIMIT = 64 * 1024


def layout_of(**cluster):
    return azure_layout.plan(spec_of(values(**cluster)))


def cloud_config(layout) -> dict:
    text = layout.custom_data
    assert text.startswith("#cloud-config\n")
    body = yaml.safe_load(text.removeprefix("#cloud-config\n"))
    assert set(body) <= CLOUD_CONFIG_KEYS
    for item in body.get("write_files", []):
        assert set(item) == {"path", "permissions", "content"} and item["path"].startswith("/")
        assert item["permissions"] in {"0644", "0755"}
    for cmd in body.get("runcmd", []):
        assert isinstance(cmd, list) and all(isinstance(arg, str) for arg in cmd)
    return body


def files(layout) -> dict[str, str]:
    return {f["path"]: f["content"] for f in cloud_config(layout).get("write_files", [])}


def enabled_units(layout) -> list[str]:
    return [c[-1] for c in cloud_config(layout).get("runcmd", []) if c[:2] == ["systemctl", "enable"]]


def env_file(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("row", IB_ROWS, ids=lambda r: r.instanceType)
def test_every_infiniband_size_gets_the_nccl_environment_and_the_ib_check_on_the_default_image(row):
    layout = layout_of(gpu=None, instanceType=row.instanceType)
    written = files(layout)
    family, data = ib_family(row.instanceType) or ("", {})
    assert family in {"ndv4", "ndv5"}
    env = env_file(written[NCCL_ENV])
    assert env["NCCL_TOPO_FILE"] == data["topoFile"] == f"/opt/microsoft/{family}-topo.xml"
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert f"EXPECTED_IB_DEVICES={row.fabricDevices}" in written["/etc/systemd/system/gpu-cluster-azure-ib.service"]
    assert "/usr/local/sbin/gpu-cluster-azure-ib" in written
    health = env_file(written["/etc/gpu-cluster/health.env"])
    assert health["FABRIC_KIND"] == '"infiniband"' and health["EXPECTED_FABRIC_DEVICES"] == f'"{row.fabricDevices}"'
    assert layout.fabric_usability.usable is True and layout.fabric_usability.missing == ()
    assert any(data["topoFile"] in p for p in layout.fabric_usability.provides)
    # order: scratch, fabric (env, IB check), health, metrics, then the health endpoint
    units = enabled_units(layout)
    assert units.index("gpu-cluster-azure-ib.service") < units.index("gpu-cluster-health.service")
    assert units[-1] == "gpu-cluster-health-http.socket"
    assert len(layout.custom_data_b64) < CUSTOM_DATA_LIMIT


def test_the_family_patterns_are_the_images_own():
    assert ib_family("Standard_ND96asr_v4")[0] == "ndv4"
    assert ib_family("Standard_ND96amsr_A100_v4")[0] == "ndv4"
    assert ib_family("Standard_ND96isr_H100_v5")[0] == "ndv5"
    assert ib_family("Standard_ND96isr_H200_v5")[0] == "ndv5"
    assert ib_family("Standard_NC80adis_H100_v5") is None
    assert ib_family("Standard_ND96isr_MI300X_v5") is None  # AMD: not an NCCL family


@pytest.mark.parametrize("itype", ["Standard_NC4as_T4_v3", "Standard_NC96ads_A100_v4"])
def test_sizes_without_infiniband_get_no_fabric_parts(itype):
    layout = layout_of(gpu=None, instanceType=itype)
    written = files(layout)
    assert NCCL_ENV not in written and "/usr/local/sbin/gpu-cluster-azure-ib" not in written
    assert layout.fabric_usability == FabricUsability(False, ("no fabric wired",))
    assert env_file(written["/etc/gpu-cluster/health.env"])["FABRIC_KIND"] == '"none"'


def test_fabric_none_on_an_ib_size_is_not_usable_and_not_enabled():
    layout = layout_of(fabric="none")
    assert layout.fabric_usability == FabricUsability(False, ("no fabric wired",))
    assert NCCL_ENV not in files(layout)


@pytest.mark.parametrize(
    "image",
    ["Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest", "/subscriptions/x/resourceGroups/g/images/mine"],
)
def test_a_custom_image_is_not_vouched_for(image):
    layout = layout_of(image=image)
    usability = layout.fabric_usability
    assert usability.usable is False and image in usability.missing[0]
    assert "not the catalog's HPC image" in usability.describe()
    # the environment and the boot check are still written: the check says what the image lacks
    assert NCCL_ENV in files(layout)


def test_the_default_urn_given_explicitly_is_the_same_image():
    assert layout_of(image="microsoft-dsvm:ubuntu-hpc:2204:latest").fabric_usability.usable is True


def test_managed_replace_gets_the_extension_the_repairs_and_the_hook():
    layout = layout_of()
    assert layout.spec.health_action == "replace"
    ext = layout.health_extension
    assert ext is not None
    assert (ext.publisher, ext.type, ext.type_handler_version) == (
        "Microsoft.ManagedServices",
        "ApplicationHealthLinux",
        "2.0",
    )
    assert dict(ext.settings) == {"protocol": "http", "port": 9401, "requestPath": "health", "gracePeriod": 1800}
    assert layout.automatic_repairs == azure_layout.AutomaticRepairs("PT30M", "Replace")
    written = files(layout)
    assert "/usr/local/sbin/gpu-cluster-unhealthy" in written
    assert "ListenStream=127.0.0.1:9401" in written["/etc/systemd/system/gpu-cluster-health-http.socket"]
    assert "Accept=yes" in written["/etc/systemd/system/gpu-cluster-health-http.socket"]
    assert "StandardInput=socket" in written["/etc/systemd/system/gpu-cluster-health-http@.service"]


def test_managed_report_keeps_the_extension_but_never_repairs():
    layout = layout_of(health={"action": "report"})
    assert layout.health_extension is not None and layout.automatic_repairs is None
    assert "/usr/local/sbin/gpu-cluster-unhealthy" not in files(layout)


def test_instances_report_only_and_replace_is_refused_with_the_key():
    layout = layout_of(nodeGroup="instances")
    assert layout.spec.health_action == "report"
    assert (layout.health_extension, layout.automatic_repairs) == (None, None)
    written = files(layout)
    assert "/usr/local/sbin/gpu-cluster-health" in written and "/usr/local/sbin/gpu-cluster-unhealthy" not in written
    assert "/etc/systemd/system/gpu-cluster-health-http.socket" not in written
    with pytest.raises(ConfigError) as info:
        layout_of(nodeGroup="instances", health={"action": "replace"})
    assert info.value.key == "gpu-cluster:cluster.health.action"


def test_health_disabled_means_no_unit_no_extension():
    layout = layout_of(health={"enabled": False})
    assert layout.health_extension is None and layout.automatic_repairs is None
    assert "/usr/local/sbin/gpu-cluster-health" not in files(layout)


def test_health_counts_local_nvme_through_one_glob_only():
    health = env_file(files(layout_of())["/etc/gpu-cluster/health.env"])
    assert health["EXPECTED_NVME"] == '"8"'
    assert health["NVME_GLOBS"] == '"/dev/disk/by-id/nvme-Microsoft_NVMe_Direct_Disk_*"'


@pytest.mark.parametrize(("placement", "applied"), [("cluster", "cluster"), ("spread", "none"), ("none", "none")])
def test_placement_applied_is_what_the_resources_apply(placement, applied):
    layout = layout_of(placement=placement)
    assert layout.placement_applied == applied
    assert layout.proximity_placement_group is (applied == "cluster")


def test_every_embedded_shell_script_is_shellcheck_clean(tmp_path):
    layout = layout_of()
    scripts = {p: c for p, c in files(layout).items() if c.startswith("#!/bin/bash")}
    assert {"/usr/local/sbin/gpu-cluster-azure-ib", "/usr/local/sbin/gpu-cluster-health-http"} <= set(scripts)
    for i, content in enumerate(scripts.values()):
        path = tmp_path / f"s{i}.sh"
        path.write_text(content)
        proc = subprocess.run(["shellcheck", "-S", "warning", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


# --- metrics: 9400 / 9100 reachable from inside the VNet only ------------------------------------------


def _admits_from_outside(rule, port: int, vnet: str) -> bool:
    if rule.direction != "Inbound" or rule.access != "Allow" or rule.protocol == "Udp":
        return False
    if rule.port != "*" and str(port) not in rule.port.split(","):
        lo, _, hi = rule.port.partition("-")
        if not (hi and int(lo) <= port <= int(hi)):
            return False
    inside = ipaddress.ip_network(vnet)
    for source in rule.sources:
        if source == "VirtualNetwork":
            continue
        try:
            if ipaddress.ip_network(source, strict=False).subnet_of(inside):  # type: ignore[arg-type]
                continue
        except ValueError:
            pass
        return True
    return False


@pytest.mark.parametrize(
    "cluster",
    [
        {},
        {"network": {"sshCidrs": ["0.0.0.0/0"]}, "access": "ssh"},
        {"network": {"sshCidrs": ["203.0.113.0/24"], "publicIp": True}, "access": "ssh"},
        {"login": {"publicIp": True}, "network": {"sshCidrs": ["198.51.100.0/24"]}, "access": "ssh"},
        {"nodeGroup": "instances"},
    ],
)
def test_no_nsg_rule_admits_the_metrics_ports_from_outside_the_vnet(cluster):
    layout = layout_of(**cluster)
    assert {e.port for e in layout.metrics_endpoints} == {9400, 9100}
    rules = list(layout.security_rules) + (list(layout.login.security_rules) if layout.login else [])
    for port in (9400, 9100):
        assert not [r.name for r in rules if _admits_from_outside(r, port, layout.vnet_cidr)]
    # and everything else from the internet is denied explicitly
    assert any(r.access == "Deny" and r.sources == ("Internet",) and r.port == "*" for r in layout.security_rules)


def test_monitoring_off_lists_no_endpoints():
    layout = layout_of(monitoring={"dcgmExporter": False})
    assert layout.metrics_endpoints == ()
    assert "/etc/systemd/system/gpu-cluster-dcgm-exporter.service" not in files(layout)


# --- the registered resources -------------------------------------------------------------------------


def test_the_scale_set_carries_the_extension_and_repairs_and_the_nodes_no_new_role(stack_plan):
    plan = stack_plan("azure-h100")
    vmss = resources_of(plan, "compute:VirtualMachineScaleSet")[0]["inputs"]
    assert vmss["automaticRepairsPolicy"] == {"enabled": True, "gracePeriod": "PT30M", "repairAction": "Replace"}
    (ext,) = vmss["virtualMachineProfile"]["extensionProfile"]["extensions"]
    assert ext["publisher"] == "Microsoft.ManagedServices" and ext["type"] == "ApplicationHealthLinux"
    assert ext["settings"]["port"] == 9401 and ext["settings"]["requestPath"] == "health"
    # least privilege: the repair is the scale set's own; the node identity gets no role for it
    assert resources_of(plan, "authorization:RoleAssignment") == []
    text = base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()
    assert NCCL_ENV in text and "/opt/microsoft/ndv5-topo.xml" in text
    metrics = plan.run.outputs["metrics"]
    assert [(e["name"], e["port"], e["path"]) for e in metrics["endpoints"]] == [
        ("dcgm-exporter", 9400, "/metrics"),
        ("node-exporter", 9100, "/metrics"),
    ]
    assert "az vmss nic list" in metrics["scrape"]
    assert plan.run.outputs["placementApplied"] == "cluster"


def test_the_dev_box_scale_set_repairs_too_but_gets_no_fabric_parts(stack_plan):
    plan = stack_plan("azure-dev")
    vmss = resources_of(plan, "compute:VirtualMachineScaleSet")[0]["inputs"]
    assert vmss["automaticRepairsPolicy"]["enabled"] is True  # managed: replace by default
    assert NCCL_ENV not in base64.b64decode(vmss["virtualMachineProfile"]["osProfile"]["customData"]).decode()


def test_instances_register_no_extension_and_no_repairs():
    plan = plan_values(values(nodeGroup="instances"))
    vms = [r for r in resources_of(plan, "compute:VirtualMachine") if "-node-" in r["name"]]
    assert len(vms) == 2 and resources_of(plan, "compute:VirtualMachineScaleSet") == []
    assert all("extensionProfile" not in vm["inputs"] for vm in vms)
    text = base64.b64decode(vms[0]["inputs"]["osProfile"]["customData"]).decode()
    assert NCCL_ENV in text and "path: /usr/local/sbin/gpu-cluster-unhealthy" not in text
    assert plan.run.outputs["metrics"]["scrape"].startswith("the privateIps output")


def test_the_diff_rules_say_what_the_new_bootstrap_does_to_deployed_nodes():
    from components.diff.rules import classify, default_rules

    rules = default_rules()
    scale_set = rules.rule("azure-native:compute:VirtualMachineScaleSet")
    vm = rules.rule("azure-native:compute:VirtualMachine")
    # the scale set model changes in place; running instances keep the old one until reimaged / replaced
    assert classify(scale_set, "virtualMachineProfile.osProfile.customData") == "refresh"
    assert classify(scale_set, "virtualMachineProfile.extensionProfile.extensions[0].settings") == "refresh"
    assert classify(scale_set, "automaticRepairsPolicy.enabled") == "update"
    # a single VM's custom data cannot be updated
    assert classify(vm, "osProfile.customData") == "replace"
