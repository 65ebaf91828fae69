"""slurm.accounting on Azure, through the offline plan: Azure Database for MySQL Flexible Server with private access
only (a subnet delegated to it at a fixed place of the VNet's free half, a private DNS zone linked to the VNet), its
password in the cluster's Slurm Key Vault readable only by the head's own identity, slurmdbd in the head's custom data
with the server's name and TLS filled in; the password hook against stubs; and what is refused."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from components.bootstrap import script
from components.bootstrap.slurm import DB_PASSWORD_ENV, DB_PASSWORD_HOOK_PATH, DBD_TEMPLATE
from components.bootstrap.slurm_conf import DB_HOST_PLACEHOLDER, DB_PASSWORD_TOKEN, render_slurmdbd_conf
from components.errors import ConfigError
from components.layout import azure as layout_azure
from components.layout.azure import slurm as azure_slurm
from components.layout.slurm import accounting_for

from .conftest import one, plan_values, resources_of, spec_of
from .hook_helpers import assert_shellcheck_clean
from .test_azure_slurm import TOKEN, files_of, run_hook, slurm_values, vm

HOOK = Path(__file__).resolve().parent.parent / "components" / "bootstrap" / "azure_db_password.sh"
NAME = "acct-azure"
SECRETS_USER = "/providers/Microsoft.Authorization/roleDefinitions/4633458b-17de-408a-b874-0445c86b69e6"


def values(**cluster):
    return slurm_values(**{"name": "acct", "slurm": {"accounting": True}, "login": {}, **cluster})


@pytest.fixture(scope="module")
def plan():
    return plan_values(values(), stack="acct")


def by_name(plan, suffix: str) -> dict[str, dict]:
    return {r["name"]: r["inputs"] for r in resources_of(plan, suffix)}


def test_the_server_is_mysql_8_burstable_private_only_and_backed_up(plan):
    server = one(plan, "dbformysql:Server")
    inputs = server["inputs"]
    assert (inputs["version"], inputs["location"]) == ("8.0.21", "eastus")
    assert inputs["sku"] == {"name": "Standard_B1ms", "tier": "Burstable"}
    assert inputs["storage"]["storageSizeGB"] == 20 and inputs["storage"]["autoGrow"] == "Enabled"
    assert server["ignoreChanges"] == ["storage.storageSizeGB"]  # the service grows it: no apply shrinks it back
    assert inputs["backup"] == {"backupRetentionDays": 7, "geoRedundantBackup": "Disabled"}
    assert inputs["highAvailability"] == {"mode": "Disabled"}
    assert inputs["network"] == {
        "delegatedSubnetResourceId": f"<id of {NAME}-db-subnet>",
        "privateDnsZoneResourceId": f"<id of {NAME}-db-dns>",
        "publicNetworkAccess": "Disabled",
    }
    assert inputs["administratorLogin"] == "slurm" and inputs["administratorLoginPassword"] == "[secret]"
    database = one(plan, "dbformysql:Database")["inputs"]
    assert (database["databaseName"], database["serverName"]) == ("slurm_acct_db", f"<autoname:{NAME}-db>")
    setting = one(plan, "dbformysql:Configuration")["inputs"]
    assert (setting["configurationName"], setting["value"], setting["source"]) == (
        "innodb_lock_wait_timeout",
        "900",
        "user-override",
    )


def test_a_delegated_subnet_in_the_free_half_moves_no_subnet_and_the_zone_is_linked(plan):
    subnets = by_name(plan, "network:Subnet")
    db = subnets[f"{NAME}-db-subnet"]
    # 10.42.0.0/16 by default: the node subnet is 10.42.0.0/17; Bastion 10.42.128.0/26, login 10.42.128.64/26
    assert db["addressPrefix"] == "10.42.128.128/28"
    assert db["delegations"] == [
        {"name": "mysql-flexible-server", "serviceName": "Microsoft.DBforMySQL/flexibleServers"}
    ]
    plain = by_name(plan_values(slurm_values(name="acct", login={}), stack="acct"), "network:Subnet")
    assert {n: s["addressPrefix"] for n, s in plain.items()} == {
        n: s["addressPrefix"] for n, s in subnets.items() if n != f"{NAME}-db-subnet"
    }
    zone = by_name(plan, "privatedns:PrivateZone")[f"{NAME}-db-dns"]
    assert zone["privateZoneName"] == "acct.private.mysql.database.azure.com" and zone["location"] == "Global"
    link = by_name(plan, "privatedns:VirtualNetworkLink")[f"{NAME}-db-dns-link"]
    assert link["virtualNetwork"] == {"id": f"<id of {NAME}-vnet>"} and link["registrationEnabled"] is False
    # the zone by its name, and created after it (azure/network.private_zone, as for the private endpoints' zones)
    assert link["privateZoneName"] == zone["privateZoneName"]
    registered = {r.name: r for r in plan.resources}
    assert registered[f"{NAME}-db-dns"].urn in registered[f"{NAME}-db-dns-link"].dependencies


def test_only_the_head_s_own_identity_reads_the_password(plan):
    assert one(plan, "randomPassword:RandomPassword")["inputs"] == {
        "length": 32,
        "special": False,  # slurm_dbd.sh writes it into slurmdbd.conf as it is
        "minUpper": 1,  # Azure takes three of four classes: upper, lower and digits are sure
        "minLower": 1,
        "minNumeric": 1,
    }
    secret = by_name(plan, "keyvault:Secret")[f"{NAME}-db-password"]
    assert secret["vaultName"] == f"<name of {NAME}-slurm-vault>"  # the MUNGE key's vault
    assert secret["secretName"] == "slurmdbd-password" and secret["properties"] == "[secret]"
    grants = by_name(plan, "authorization:RoleAssignment")
    readers = {n: g for n, g in grants.items() if g["scope"] == f"<id of {NAME}-db-password>"}
    assert list(readers) == [f"{NAME}-head-role-db-password"]
    reader = readers[f"{NAME}-head-role-db-password"]
    assert reader["principalId"] == f"<principal id of {NAME}-head-identity>"
    assert reader["roleDefinitionId"].endswith(SECRETS_USER)
    # the head carries its own identity (it reads the MUNGE key by a grant of its own); the login node the nodes'
    head = vm(plan, f"{NAME}-head")
    assert head["identity"]["userAssignedIdentities"] == [f"<id of {NAME}-head-identity>"]
    assert vm(plan, f"{NAME}-login")["identity"]["userAssignedIdentities"] == [f"<id of {NAME}-identity>"]
    assert grants[f"{NAME}-head-role-munge-key"]["principalId"] == f"<principal id of {NAME}-head-identity>"


def test_the_head_runs_slurmdbd_over_tls_with_the_server_s_name_and_never_the_password(plan):
    files = files_of(vm(plan, f"{NAME}-head")["osProfile"]["customData"])
    conf = files[DBD_TEMPLATE]
    assert f"StorageHost=<fqdn of {NAME}-db>\n" in conf and DB_HOST_PLACEHOLDER not in conf
    assert "StorageParameters=SSL_CA=/etc/ssl/certs/ca-certificates.crt\n" in conf  # require_secure_transport
    assert f"StoragePass={DB_PASSWORD_TOKEN}\n" in conf  # the head puts the password in at boot
    spec = spec_of(values(), stack="acct")
    env = dict(line.split("=", 1) for line in files[DB_PASSWORD_ENV].splitlines())
    assert {k: v.strip('"') for k, v in env.items()} == {
        **azure_slurm.hook_env(spec),
        "MUNGE_SECRET_NAME": "slurmdbd-password",
    }
    assert files[DB_PASSWORD_HOOK_PATH] == script(HOOK.name)
    everything = base64.b64decode(vm(plan, f"{NAME}-head")["osProfile"]["customData"]).decode()
    assert "[secret]" not in everything
    # nodes and the login node know nothing of the database
    assert "slurmdbd-password" not in base64.b64decode(vm(plan, f"{NAME}-login")["osProfile"]["customData"]).decode()


def test_slurmdbd_conf_asks_for_tls_on_azure_only():
    azure_conf = layout_azure.plan(spec_of(values())).slurm.layout.slurmdbd_conf
    assert "StorageParameters=SSL_CA=/etc/ssl/certs/ca-certificates.crt\n" in azure_conf
    # RDS and Cloud SQL take plain connections by default: their slurmdbd.conf stays as it was
    assert accounting_for("azure").storage_parameters == "SSL_CA=/etc/ssl/certs/ca-certificates.crt"
    assert accounting_for("aws").storage_parameters is None and accounting_for("gcp").storage_parameters is None
    assert "StorageParameters" not in render_slurmdbd_conf("c", accounting_for("aws"))


def test_outputs_and_bill_name_the_database(plan):
    out = plan.run.outputs["slurm"]["accounting"]
    assert out["service"] == "Azure Database for MySQL Flexible Server"
    assert out["address"] == f"<fqdn of {NAME}-db>" and out["passwordSecret"] == f"<id of {NAME}-db-password>"
    items = {i["item"]: i for i in plan.as_json()["summary"]["costs"]["items"]}
    assert items["accountingDatabase"]["hourly"] == 0.022 and items["accountingDatabase"]["per"] == "stack"
    assert items["accountingDatabase"]["name"] == "Slurm accounting database Standard_B1ms"
    assert items["accountingDatabaseStorage"]["price"] == "0.138/GB-month x 20 GB"


def test_policies_pass(plan):
    assert plan.violations() == []


def test_without_accounting_nothing_of_it_is_planned_and_the_head_keeps_the_nodes_identity():
    plain = plan_values(slurm_values(name="acct", login={}), stack="acct")
    assert not resources_of(plain, "dbformysql:") and f"{NAME}-db-dns" not in by_name(plain, "privatedns:PrivateZone")
    assert f"{NAME}-head-identity" not in by_name(plain, "managedidentity:UserAssignedIdentity")
    assert vm(plain, f"{NAME}-head")["identity"]["userAssignedIdentities"] == [f"<id of {NAME}-identity>"]
    assert "accounting" not in plain.run.outputs["slurm"]


def test_with_elastic_partitions_the_head_keeps_one_identity_of_its_own():
    both = plan_values(
        values(nodes=0, slurm={"accounting": True, "partitions": [{"name": "h100", "maxNodes": 2}]}), stack="acct"
    )
    identities = by_name(both, "managedidentity:UserAssignedIdentity")
    assert sorted(identities) == [f"{NAME}-head-identity", f"{NAME}-identity"]
    grants = by_name(both, "authorization:RoleAssignment")
    assert grants[f"{NAME}-head-role-db-password"]["principalId"] == f"<principal id of {NAME}-head-identity>"
    assert grants[f"{NAME}-head-role-slurm-power"]["principalId"] == f"<principal id of {NAME}-head-identity>"


SUB = "/subscriptions/00000000-0000-0000-0000-000000000000"
EXISTING = {
    "vpcId": f"{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1",
    "subnetIds": [f"{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1/subnets/nodes"],
}


@pytest.mark.parametrize(
    ("cluster", "key", "words"),
    [
        (
            {"access": "none", "network": {"existing": EXISTING}},
            "slurm.accounting",
            "Microsoft.DBforMySQL/flexibleServers",
        ),
        ({"login": {}, "network": {"cidr": "10.8.0.0/24"}}, "network.cidr", "accounting database's delegated subnet"),
    ],
    ids=["existing-network", "network-too-small"],
)
def test_what_is_not_built_is_refused_with_its_key(cluster, key, words):
    with pytest.raises(ConfigError) as info:
        layout_azure.plan(spec_of(slurm_values(slurm={"accounting": True}, **cluster)))
    assert info.value.key == f"gpu-cluster:cluster.{key}" and words in str(info.value)


def test_with_encryption_key_the_database_keeps_the_service_s_key_and_the_plan_says_so():
    keyed = plan_values(values(encryption={"key": "auto"}), stack="acct")
    assert "dataEncryption" not in one(keyed, "dbformysql:Server")["inputs"]
    assert any(w.startswith("encryption.key: the Slurm accounting database") for w in keyed.warnings())


# --- the password hook, against stubs -----------------------------------------------------------------------------

PASSWORD = "Pa55w0rdLettersAndDigits12345678"


def test_the_hook_is_the_munge_key_read_pointed_at_the_password_s_secret(tmp_path):
    text = script(HOOK.name)
    # as a node gets it: both libraries inlined, its own settings file by default (not the MUNGE key's)
    assert 'munge_key_bearer.sh"' not in text and 'azure_munge_key.sh"' not in text
    assert text.index('ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/db-password.env}"') < text.index(
        'ENV_FILE="${ENV_FILE:-/etc/gpu-cluster/munge-key.env}"'
    )
    rendered = tmp_path / HOOK.name
    rendered.write_text(text)
    assert_shellcheck_clean(rendered)
    imds = f"""echo '{{"access_token":"{TOKEN}","expires_in":"86399","resource":"https://vault.azure.net"}}'"""
    vault = f"""echo '{{"value":"{PASSWORD}","id":"https://v.vault.azure.net/secrets/slurmdbd-password/1"}}'"""
    proc, calls = run_hook(tmp_path, imds, vault, env={"MUNGE_SECRET_NAME": "slurmdbd-password"}, hook=rendered)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == PASSWORD + "\n"  # slurm_dbd.sh takes the one line
    assert "/secrets/slurmdbd-password?api-version=" in calls
    assert f"STDIN Authorization: Bearer {TOKEN}" in calls  # the token on stdin, never in argv
    assert TOKEN not in "".join(line for line in calls.splitlines() if line.startswith("ARGS"))
    assert PASSWORD not in proc.stderr


def test_the_hook_fails_clearly_without_access(tmp_path):
    rendered = tmp_path / HOOK.name
    rendered.write_text(script(HOOK.name))
    imds = f"""echo '{{"access_token":"{TOKEN}"}}'"""
    proc, _ = run_hook(tmp_path, imds, "exit 22", env={"MUNGE_SECRET_NAME": "slurmdbd-password"}, hook=rendered)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "reading secret slurmdbd-password from" in proc.stderr and TOKEN not in proc.stderr


def test_the_hook_is_shellcheck_clean():
    assert_shellcheck_clean(HOOK)
