"""Translators for CloudWatch Logs and SNS (monitoring.logs and monitoring.notify: see `aws_translate`).

Importing this module registers them in `aws_translate.TRANSLATORS`.
"""

from __future__ import annotations

from .aws_translate import Resource, translates


@translates("aws:cloudwatch/logGroup:LogGroup")
def _log_group(r: Resource) -> None:
    """logs/group.go resourceGroupCreate: CreateLogGroup (name, KMS key, class, tags), then PutRetentionPolicy when
    retention_in_days is set (0 or unset: kept forever, no call)."""
    i = r.inputs
    name = r.physical(maxlen=512)
    params = {
        "logGroupName": name,
        "kmsKeyId": i.get("kmsKeyId"),
        "logGroupClass": i.get("logGroupClass"),
        "deletionProtectionEnabled": i.get("deletionProtectionEnabled"),
        "tags": i.get("tags"),
    }
    r.call("logs", "CreateLogGroup", params, "logs/group.go resourceGroupCreate")
    if days := i.get("retentionInDays"):
        params = {"logGroupName": name, "retentionInDays": days}
        r.call("logs", "PutRetentionPolicy", params, "logs/group.go resourceGroupCreate (PutRetentionPolicy)")


# the topic attributes the registered inputs set (sns/topic.go topicAttributeMap)
_TOPIC_ATTRIBUTES = {"displayName": "DisplayName", "kmsMasterKeyId": "KmsMasterKeyId", "policy": "Policy"}


@translates("aws:sns/topic:Topic")
def _topic(r: Resource) -> None:
    """sns/topic.go resourceTopicCreate: CreateTopic with the attributes as strings and the tags (a standard topic:
    no FifoTopic attribute). pulumi-aws names a topic with at most 256 characters."""
    i = r.inputs
    attributes = {name: str(value) for key, name in _TOPIC_ATTRIBUTES.items() if (value := i.get(key)) is not None}
    params = {"Name": r.physical(maxlen=256), "Attributes": attributes or None, "Tags": i.get("tags")}
    if params["Tags"] is not None:
        params["Tags"] = [{"Key": k, "Value": v} for k, v in params["Tags"].items()]
    r.call("sns", "CreateTopic", params, "sns/topic.go resourceTopicCreate")


@translates("aws:sns/topicSubscription:TopicSubscription")
def _subscription(r: Resource) -> None:
    """sns/topic_subscription.go resourceTopicSubscriptionCreate: Subscribe with ReturnSubscriptionArn (an email
    subscription is pending until its address confirms it)."""
    i = r.inputs
    params = {
        "TopicArn": i.get("topic"),
        "Protocol": i.get("protocol"),
        "Endpoint": i.get("endpoint"),
        "ReturnSubscriptionArn": True,
    }
    r.call("sns", "Subscribe", params, "sns/topic_subscription.go resourceTopicSubscriptionCreate")


@translates("aws:sns/topicPolicy:TopicPolicy")
def _topic_policy(r: Resource) -> None:
    """sns/topic_policy.go resourceTopicPolicyUpsert: SetTopicAttributes Policy (the document normalized)."""
    i = r.inputs
    params = {"TopicArn": i.get("arn"), "AttributeName": "Policy", "AttributeValue": i.get("policy")}
    r.call("sns", "SetTopicAttributes", params, "sns/topic_policy.go resourceTopicPolicyUpsert")


@translates("aws:amp/workspace:Workspace")
def _amp_workspace(r: Resource) -> None:
    """amp/workspace.go resourceWorkspaceCreate: CreateWorkspace with the alias, the KMS key and the tags (no logging
    configuration is set: no CreateLoggingConfiguration)."""
    i = r.inputs
    params = {"alias": i.get("alias"), "kmsKeyArn": i.get("kmsKeyArn"), "tags": i.get("tags")}
    r.call("amp", "CreateWorkspace", params, "amp/workspace.go resourceWorkspaceCreate")


@translates("aws:amp/ruleGroupNamespace:RuleGroupNamespace")
def _amp_rules(r: Resource) -> None:
    """amp/rule_group_namespace.go resourceRuleGroupNamespaceCreate: CreateRuleGroupsNamespace (data as bytes)."""
    i = r.inputs
    params = {
        "workspaceId": i.get("workspaceId"),
        "name": i.get("name"),
        "data": (i.get("data") or "").encode(),
        "tags": i.get("tags"),
    }
    r.call("amp", "CreateRuleGroupsNamespace", params, "amp/rule_group_namespace.go resourceRuleGroupNamespaceCreate")


@translates("aws:amp/alertManagerDefinition:AlertManagerDefinition")
def _amp_alert_manager(r: Resource) -> None:
    """amp/alert_manager_definition.go resourceAlertManagerDefinitionCreate: CreateAlertManagerDefinition."""
    i = r.inputs
    params = {"workspaceId": i.get("workspaceId"), "data": (i.get("definition") or "").encode()}
    r.call(
        "amp",
        "CreateAlertManagerDefinition",
        params,
        "amp/alert_manager_definition.go resourceAlertManagerDefinitionCreate",
    )


@translates("aws:amp/scraper:Scraper")
def _amp_scraper(r: Resource) -> None:
    """amp/scraper.go resourceScraperCreate: CreateScraper with the alias, the scrape configuration as its blob, the
    EKS source, the workspace destination and the tags (no role configuration: the workspace is this account's)."""
    i = r.inputs
    source = i.obj("source")
    eks = source.obj("eks") if source else None
    destination = i.obj("destination")
    amp = destination.obj("amp") if destination else None
    params = {
        "alias": i.get("alias"),
        "scrapeConfiguration": {"configurationBlob": (i.get("scrapeConfiguration") or "").encode()},
        "source": {
            "eksConfiguration": {
                "clusterArn": eks.get("clusterArn"),
                "subnetIds": eks.get("subnetIds"),
                "securityGroupIds": eks.get("securityGroupIds"),
            }
        }
        if eks
        else None,
        "destination": {"ampConfiguration": {"workspaceArn": amp.get("workspaceArn")}} if amp else None,
        "tags": i.get("tags"),
    }
    r.call("amp", "CreateScraper", params, "amp/scraper.go resourceScraperCreate")


# Amazon Managed Grafana (monitoring.grafanaAdmins): internal/service/grafana/*.go in the Terraform AWS provider


@translates("aws:grafana/workspace:Workspace")
def _grafana_workspace(r: Resource) -> None:
    """grafana/workspace.go resourceWorkspaceCreate: CreateWorkspace (a ClientToken of its own; each set argument
    as its request member: data_sources as workspaceDataSources, role_arn as workspaceRoleArn, name as
    workspaceName, description as workspaceDescription, grafana_version as grafanaVersion)."""
    i = r.inputs
    params = {
        "accountAccessType": i.get("accountAccessType"),
        "authenticationProviders": i.get("authenticationProviders"),
        "clientToken": "terraform-20261203000000000000000001",  # resource.UniqueId(): "terraform-" + 26 digits
        "permissionType": i.get("permissionType"),
        "tags": i.get("tags"),
        "organizationRoleName": i.get("organizationRoleName"),
        "stackSetName": i.get("stackSetName"),
        "workspaceDataSources": i.get("dataSources"),
        "workspaceDescription": i.get("description"),
        "workspaceName": i.get("name"),
        "workspaceNotificationDestinations": i.get("notificationDestinations"),
        "workspaceOrganizationalUnits": i.get("organizationalUnits"),
        "workspaceRoleArn": i.get("roleArn"),
        "grafanaVersion": i.get("grafanaVersion"),
        "kmsKeyId": i.get("kmsKeyId"),
    }
    r.call("grafana", "CreateWorkspace", params, "grafana/workspace.go resourceWorkspaceCreate")


@translates("aws:grafana/roleAssociation:RoleAssociation")
def _grafana_role_association(r: Resource) -> None:
    """grafana/role_association.go resourceRoleAssociationUpsert: UpdatePermissions, one ADD instruction for the
    user ids (type SSO_USER) and one for the group ids (SSO_GROUP)."""
    i = r.inputs
    role = i.get("role")
    batch = [
        {"action": "ADD", "role": role, "users": [{"id": u, "type": kind} for u in ids]}
        for ids, kind in ((i.get("userIds") or [], "SSO_USER"), (i.get("groupIds") or [], "SSO_GROUP"))
        if ids
    ]
    params = {"workspaceId": i.get("workspaceId"), "updateInstructionBatch": batch}
    r.call("grafana", "UpdatePermissions", params, "grafana/role_association.go resourceRoleAssociationUpsert")


@translates("aws:grafana/workspaceServiceAccount:WorkspaceServiceAccount")
def _grafana_service_account(r: Resource) -> None:
    """grafana/workspace_service_account.go Create: CreateWorkspaceServiceAccount (fwflex.Expand of the model)."""
    i = r.inputs
    params = {"name": i.get("name"), "grafanaRole": i.get("grafanaRole"), "workspaceId": i.get("workspaceId")}
    r.call("grafana", "CreateWorkspaceServiceAccount", params, "grafana/workspace_service_account.go Create")


@translates("aws:grafana/workspaceServiceAccountToken:WorkspaceServiceAccountToken")
def _grafana_token(r: Resource) -> None:
    """grafana/workspace_service_account_token.go Create: CreateWorkspaceServiceAccountToken (fwflex.Expand)."""
    i = r.inputs
    params = {
        "name": i.get("name"),
        "secondsToLive": i.get("secondsToLive"),
        "serviceAccountId": i.get("serviceAccountId"),
        "workspaceId": i.get("workspaceId"),
    }
    r.call("grafana", "CreateWorkspaceServiceAccountToken", params, "grafana/workspace_service_account_token.go Create")
