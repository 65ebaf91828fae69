"""Cloud SQL (slurm.accounting on GCP) as the Terraform Google provider sends it, for the sqladmin.v1 discovery
document: the instance, its database and its user (sql/resource_sql_database_instance.go, resource_sql_database.go,
resource_sql_user.go; field names from the provider schema's `expand*` functions)."""

from __future__ import annotations

from typing import Any

from .gcp_requests import Context, Src
from .gcp_schema import Request

API = "sqladmin.v1"


def _backup(b: Src) -> dict[str, Any]:
    # expandBackupConfiguration: the same names; backup_retention_settings -> backupRetentionSettings
    body = b.same({}, "enabled", "binaryLogEnabled", "startTime", "location", "pointInTimeRecoveryEnabled",
                  "transactionLogRetentionDays")  # fmt: skip
    retention = b.sub("backupRetentionSettings")
    if retention is not None:
        body["backupRetentionSettings"] = retention.same({}, "retainedBackups", "retentionUnit")
        retention.done()
    b.done()
    return body


def _settings(s: Src) -> dict[str, Any]:
    # expandSqlDatabaseInstanceSettings: disk_type -> dataDiskType, disk_size -> dataDiskSizeGb, disk_autoresize ->
    # storageAutoResize; the other fields under their own names
    body = s.same({}, "tier", "edition", "availabilityType", "deletionProtectionEnabled", "userLabels")
    body.update(s.renamed({}, {"diskType": "dataDiskType", "diskSize": "dataDiskSizeGb",
                                "diskAutoresize": "storageAutoResize"}))  # fmt: skip
    where = s.sub("locationPreference")
    if where is not None:
        body["locationPreference"] = where.same({}, "zone", "secondaryZone")
        where.done()
    ip = s.sub("ipConfiguration")
    if ip is not None:
        body["ipConfiguration"] = ip.same({}, "ipv4Enabled", "privateNetwork", "allocatedIpRange", "sslMode")
        ip.done()
    backup = s.sub("backupConfiguration")
    if backup is not None:
        body["backupConfiguration"] = _backup(backup)
    flags = []
    for flag in s.subs("databaseFlags"):
        flags.append(flag.same({}, "name", "value"))
        flag.done()
    if flags:
        body["databaseFlags"] = flags
    s.done()
    return body


def instance(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resourceSqlDatabaseInstanceCreate: POST projects/P/instances with name, region, databaseVersion, settings
    (deletion_protection is the provider's own guard, never sent)."""
    s = Src(i, ctx)
    project = s.pop("project") or ctx.project
    body: dict[str, Any] = {"name": ctx.name(s.pop("name")), "project": project}
    body.update(s.same({}, "region", "databaseVersion"))
    settings = s.sub("settings")
    if settings is not None:
        body["settings"] = _settings(settings)
    s.drop("deletionProtection")
    s.done()
    return [Request(API, "sql.instances.insert", {"project": project}, body, "resource_sql_database_instance.go")]


def database(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resourceSqlDatabaseCreate: POST projects/P/instances/I/databases {name, instance, project, charset,
    collation}."""
    s = Src(i, ctx)
    project = s.pop("project") or ctx.project
    inst = ctx.resolve(s.pop("instance"))
    body: dict[str, Any] = {"name": s.pop("name"), "instance": inst, "project": project}
    body.update(s.same({}, "charset", "collation"))
    s.drop("deletionPolicy")
    s.done()
    params = {"project": project, "instance": inst}
    return [Request(API, "sql.databases.insert", params, body, "resource_sql_database.go")]


def user(i: dict[str, Any], ctx: Context) -> list[Request]:
    """resourceSqlUserCreate: POST projects/P/instances/I/users {name, instance, password, host, type}."""
    s = Src(i, ctx)
    project = s.pop("project") or ctx.project
    inst = ctx.resolve(s.pop("instance"))
    body: dict[str, Any] = {"name": s.pop("name"), "instance": inst, "project": project}
    body.update(s.same({}, "password", "host", "type"))
    s.drop("deletionPolicy")
    s.done()
    params = {"project": project, "instance": inst}
    return [Request(API, "sql.users.insert", params, body, "resource_sql_user.go")]


SQL_TRANSLATORS = {
    "gcp:sql/databaseInstance:DatabaseInstance": instance,
    "gcp:sql/database:Database": database,
    "gcp:sql/user:User": user,
}
