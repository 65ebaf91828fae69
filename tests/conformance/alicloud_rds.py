"""Alibaba Cloud requests, part 4: `slurm.accounting` (the ApsaraDB RDS for MySQL instance, its backup policy, database,
account and the account's privilege), as the provider sends them (see alicloud_requests), judged by the RDS Tea models
(alibabacloud_rds20140815, API 2014-08-15).

Sources: aliyun/terraform-provider-alicloud @81c43b67: alicloud/resource_alicloud_db_instance.go
(buildDBCreateRequest for CreateDBInstance, then resourceAliCloudDBInstanceUpdate on the new resource: ModifyParameter
from service_alicloud_rds.go ModifyParameters, ModifySecurityIps, tags through setInstanceTags' TagResources),
alicloud/resource_alicloud_db_backup_policy.go (Update -> service_alicloud_rds.go ModifyDBBackupPolicy, its data
backup request), alicloud/resource_alicloud_db_database.go (resourceAliCloudRdsDatabaseCreate),
alicloud/resource_alicloud_rds_account.go (resourceAliCloudRdsAccountCreate: alicloud_db_account is the same
resource, provider.go), alicloud/resource_alicloud_db_account_privilege.go (service_alicloud_rds.go
GrantAccountPrivilege, one call per database).
"""

from __future__ import annotations

import json
from typing import Any

from alibabacloud_rds20140815 import models as rds

from .alicloud_requests import Call, Inputs, drop_none, tag_list, tags_of

INSTANCE = "alicloud/resource_alicloud_db_instance.go"
SERVICE = "alicloud/service_alicloud_rds.go"
NEW = "<the new DB instance>"
# resource_alicloud_db_backup_policy.go / ModifyDBBackupPolicy: the backup window it sends when none is set
BACKUP_TIME = "02:00Z-03:00Z"


def db_instance(i: Inputs, region: str) -> list[Call]:
    tags = tags_of(i)
    vswitch = i.ok("vswitchId")
    ips = i.ok("securityIps") or []
    create = drop_none(
        {
            "RegionId": region,
            "Engine": i.get("engine"),
            "EngineVersion": i.get("engineVersion"),
            "DBInstanceStorage": i.get("instanceStorage"),
            "DBInstanceClass": i.get("instanceType"),
            # buildDBCreateRequest: always the intranet (a public address is alicloud_db_connection's)
            "DBInstanceNetType": "Intranet",
            "DBInstanceDescription": i.get("instanceName"),
            "DBInstanceStorageType": i.ok("dbInstanceStorageType"),
            "Tag": tag_list(tags) or None,
            "RoleARN": i.ok("roleArn"),
            "EncryptionKey": i.ok("encryptionKey"),
            "ZoneId": i.ok("zoneId"),
            "VSwitchId": vswitch,
            "VPCId": "<the vSwitch's VPC (DescribeVSwitchAttributes)>" if vswitch else None,
            "InstanceNetworkType": "VPC" if vswitch else "Classic",
            "PayType": i.get("instanceChargeType") or "Postpaid",  # schema Default Postpaid
            # "127.0.0.1" (LOCAL_HOST_IP) when none is given
            "SecurityIPList": ",".join(ips) if ips else "127.0.0.1",
            "Category": i.ok("category"),
        }
    )
    calls = [Call("rds:CreateDBInstance", rds.CreateDBInstanceRequest, create, f"{INSTANCE} buildDBCreateRequest")]
    if params := i.ok("parameters"):
        config = {p["name"]: p["value"] for p in params}
        calls.append(
            Call(
                "rds:ModifyParameter",
                rds.ModifyParameterRequest,
                # force_restart: schema Default false, sent with d.Get
                {
                    "RegionId": region,
                    "DBInstanceId": NEW,
                    "Forcerestart": bool(i.get("forceRestart")),
                    "Parameters": json.dumps(config),
                },
                f"{SERVICE} ModifyParameters",
            )
        )
    # deletion_protection false on a new resource: no change, no ModifyDBInstanceDeletionProtection
    i.get("deletionProtection")
    if ips:
        calls.append(
            Call(
                "rds:ModifySecurityIps",
                rds.ModifySecurityIpsRequest,
                {"RegionId": region, "DBInstanceId": NEW, "SecurityIps": ",".join(ips)},
                f"{INSTANCE} resourceAliCloudDBInstanceUpdate (security_ips)",
            )
        )
    if tags:
        request = {"RegionId": region, "ResourceType": "INSTANCE", "ResourceId": [NEW], "Tag": tag_list(tags)}
        calls.append(
            Call("rds:TagResources", rds.TagResourcesRequest, request, f"{SERVICE} setInstanceTags", tags=tags)
        )
    return calls


def backup_policy(i: Inputs, region: str) -> list[Call]:
    """The data backup request only: no log-backup input is set (enable_backup_log is Computed, never sent unasked).
    The provider reads the instance (DescribeDBInstance) to choose engine-specific parameters; a MySQL cloud-disk
    Basic Edition instance takes none of them."""
    periods = i.ok("preferredBackupPeriods") or []
    request: dict[str, Any] = {
        "RegionId": region,
        "DBInstanceId": i.get("instanceId"),
        "PreferredBackupPeriod": ",".join(periods),
        "PreferredBackupTime": i.ok("preferredBackupTime") or BACKUP_TIME,
        "BackupRetentionPeriod": str(i.ok("backupRetentionPeriod") or 7),
        "CompressType": "",
        "BackupPolicyMode": "DataBackupPolicy",
        "ReleasedKeepPolicy": "",
        "Category": "",  # not a MySQL local-disk instance: Category is sent, empty when unset
    }
    src = f"{SERVICE} ModifyDBBackupPolicy (updateForData)"
    return [Call("rds:ModifyBackupPolicy", rds.ModifyBackupPolicyRequest, request, src)]


def database(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "DBInstanceId": i.get("instanceId"),
            "DBName": i.ok("dataBaseName") or i.ok("name"),
            "CharacterSetName": i.ok("characterSet") or "utf8",  # schema Default "utf8"
            "DBDescription": i.ok("description"),
        }
    )
    src = "alicloud/resource_alicloud_db_database.go resourceAliCloudRdsDatabaseCreate"
    return [Call("rds:CreateDatabase", rds.CreateDatabaseRequest, request, src)]


def account(i: Inputs, region: str) -> list[Call]:
    request = drop_none(
        {
            "RegionId": region,
            "DBInstanceId": i.ok("dbInstanceId") or i.ok("instanceId"),
            "AccountName": i.ok("accountName") or i.ok("name"),
            "AccountPassword": i.ok("accountPassword") or i.ok("password"),
            "AccountType": i.ok("accountType") or i.ok("type"),
            "AccountDescription": i.ok("accountDescription") or i.ok("description"),
        }
    )
    src = "alicloud/resource_alicloud_rds_account.go resourceAliCloudRdsAccountCreate"
    return [Call("rds:CreateAccount", rds.CreateAccountRequest, request, src)]


def account_privilege(i: Inputs, region: str) -> list[Call]:
    src = f"{SERVICE} GrantAccountPrivilege"
    privilege = i.ok("privilege") or "ReadOnly"  # schema Default ReadOnly
    return [
        Call(
            "rds:GrantAccountPrivilege",
            rds.GrantAccountPrivilegeRequest,
            {
                "RegionId": region,
                "DBInstanceId": i.get("instanceId"),
                "AccountName": i.get("accountName"),
                "DBName": name,
                "AccountPrivilege": privilege,
            },
            src,
        )
        for name in i.get("dbNames") or []
    ]
