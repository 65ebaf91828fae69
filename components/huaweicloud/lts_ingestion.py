"""`monitoring.logs` on Huawei Cloud: which of the nodes' files LTS collects, as one Pulumi dynamic resource.

pulumi-huaweicloud 0.0.12 has LTS log groups and streams but no host group and no host access configuration, so
`LtsIngestion` makes both through Huawei's LTS SDK (huaweicloudsdklts, the only module allowed to use it): an IP host
group of the cluster's ECS instances (an instance's LTS host id is its server id) and an AGENT access configuration
binding the files to the nodes' stream. ICAgent reports a host only once its user data installed it, so create and
update wait for every host first. With an AS group the group is a LABEL group of the custom identifier the stack's
nodes write (`labels`, no host ids, nothing to wait for: hosts come and go) and the configuration an AGENT one as
above. With CCE (`clusterId` set) the group is a LABEL group of the custom identifier CCE's own ICAgent reports and
the configuration a K8S_CCE one of the cluster (`pathType`). Facts and sources: catalog/logs/huaweicloud.yaml
`ingestion`, `customIdentifier` and `kubernetes`.

Credentials are the provider's: the stack's `huaweicloud:` config, else the HW_* environment variables
(catalog `providerCredentials`). They arrive through `configure` in the provider process, never in the pickled
provider or the resource's inputs, so no key reaches the state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, ResourceProvider, UpdateResult

# a new region, log group or stream is a new access configuration (UpdateAccessConfig takes no log_info), and so is a
# new CCE cluster (terraform-provider-huaweicloud's lts_cce_access: cluster_id "Changing this creates a new resource")
REPLACES = ("region", "logGroupId", "logStreamId", "clusterId")
HOST_GROUP_INPUTS = ("hostGroupName", "hostIds", "labels", "tags")
ACCESS_INPUTS = (
    "accessConfigName",
    "paths",
    "singleLineMode",
    "pathType",
    "stdout",
    "stderr",
    "namespaceRegex",
    "tags",
)
# the huaweicloud: config key and the environment variable pulumi-huaweicloud reads instead (the region is an input)
_CONFIG = {
    "accessKey": "HW_ACCESS_KEY",
    "secretKey": "HW_SECRET_KEY",
    "securityToken": "HW_SECURITY_TOKEN",
    "projectId": "HW_PROJECT_ID",
}
POLL_SECONDS = 15
_sleep: Callable[[float], None] = time.sleep  # replaced in the tests


class LtsClient(Protocol):
    """The calls of huaweicloudsdklts.v2.LtsClient used here (each takes the SDK's request model)."""

    def list_host(self, request: Any) -> Any: ...
    def create_host_group(self, request: Any) -> Any: ...
    def update_host_group(self, request: Any) -> Any: ...
    def delete_host_group(self, request: Any) -> Any: ...
    def create_access_config(self, request: Any) -> Any: ...
    def update_access_config(self, request: Any) -> Any: ...
    def delete_access_config(self, request: Any) -> Any: ...


def _tags(model: Any, tags: Mapping[str, str]) -> list[Any]:
    return [model(key=k, value=v) for k, v in sorted(tags.items())]


def _labels(props: Mapping[str, Any]) -> list[str] | None:
    """A LABEL group's custom identifiers (an AS group's or CCE's); None for an IP group, as before."""
    labels = props.get("labels")
    return list(labels) if labels else None


class LtsApi:
    """The host group and access configuration requests, as huaweicloudsdklts 3.1.219's models take them."""

    def __init__(self, client: LtsClient) -> None:
        self.client = client

    def known_hosts(self, host_ids: Sequence[str]) -> set[str]:
        from huaweicloudsdklts.v2 import model

        body = model.GetHostListRequestBody(host_id_list=list(host_ids))
        response = self.client.list_host(model.ListHostRequest(body=body))
        return {str(h.host_id) for h in response.result or ()}

    def create_host_group(self, props: Mapping[str, Any], group_type: str, access_type: str) -> str:
        from huaweicloudsdklts.v2 import model

        body = model.CreateHostGroupRequestBody(
            host_group_name=props["hostGroupName"],
            host_group_type=group_type,
            host_id_list=list(props["hostIds"]) or None,  # a LABEL group (AS, CCE) lists no host
            host_group_tag=_tags(model.HostGroupTag, props["tags"]),
            agent_access_type=access_type,
            labels=_labels(props),
        )
        return str(self.client.create_host_group(model.CreateHostGroupRequest(body=body)).host_group_id)

    def update_host_group(self, host_group_id: str, props: Mapping[str, Any]) -> None:
        from huaweicloudsdklts.v2 import model

        body = model.UpdateHostGroupRequestBody(
            host_group_id=host_group_id,
            host_group_name=props["hostGroupName"],
            host_id_list=list(props["hostIds"]) or None,
            host_group_tag=_tags(model.HostGroupTag, props["tags"]),
            labels=_labels(props),
        )
        self.client.update_host_group(model.UpdateHostGroupRequest(body=body))

    def delete_host_group(self, host_group_id: str) -> None:
        from huaweicloudsdklts.v2 import model

        body = model.DeleteHostGroupRequestBody(host_group_id_list=[host_group_id])
        self.client.delete_host_group(model.DeleteHostGroupRequest(body=body))

    def create_access_config(self, props: Mapping[str, Any], host_group_id: str, access_type: str) -> str:
        from huaweicloudsdklts.v2 import model

        body = model.CreateAccessConfigRequestBody(
            access_config_name=props["accessConfigName"],
            access_config_type=access_type,
            access_config_detail=model.AccessConfigDeatilCreate(
                paths=list(props["paths"]) or None,  # container_stdout takes none ("标准输出不用")
                format=model.AccessConfigFormatCreate(
                    single=model.AccessConfigFormatSingleCreate(mode=props["singleLineMode"], value=None)
                ),
                path_type=props.get("pathType"),
                # container_stdout (CCE): which streams, of which namespaces; absent for files
                stdout=props.get("stdout"),
                stderr=props.get("stderr"),
                namespace_regex=props.get("namespaceRegex"),
            ),
            cluster_id=props.get("clusterId"),
            log_info=model.AccessConfigBaseLogInfoCreate(
                log_group_id=props["logGroupId"], log_stream_id=props["logStreamId"]
            ),
            host_group_info=model.AccessConfigHostGroupIdListCreate(host_group_id_list=[host_group_id]),
            access_config_tag=_tags(model.AccessConfigTag, props["tags"]),
        )
        return str(self.client.create_access_config(model.CreateAccessConfigRequest(body=body)).access_config_id)

    def update_access_config(self, access_config_id: str, host_group_id: str, props: Mapping[str, Any]) -> None:
        from huaweicloudsdklts.v2 import model

        body = model.UpdateAccessConfigRequestBody(
            access_config_id=access_config_id,
            access_config_name=props["accessConfigName"],
            access_config_detail=model.AccessConfigDeatilUpdate(
                paths=list(props["paths"]) or None,  # container_stdout takes none ("标准输出不用")
                format=model.AccessConfigFormatUpdate(
                    single=model.AccessConfigFormatSingle(mode=props["singleLineMode"], value=None)
                ),
                path_type=props.get("pathType"),
                # container_stdout (CCE): which streams, of which namespaces; absent for files
                stdout=props.get("stdout"),
                stderr=props.get("stderr"),
                namespace_regex=props.get("namespaceRegex"),
            ),
            cluster_id=props.get("clusterId"),
            host_group_info=model.AccessConfigHostGroupIdList(host_group_id_list=[host_group_id]),
            access_config_tag=_tags(model.AccessConfigTag, props["tags"]),
        )
        self.client.update_access_config(model.UpdateAccessConfigRequest(body=body))

    def delete_access_config(self, access_config_id: str) -> None:
        from huaweicloudsdklts.v2 import model

        body = model.DeleteAccessConfigRequestBody(access_config_id_list=[access_config_id])
        self.client.delete_access_config(model.DeleteAccessConfigRequest(body=body))


def sdk_client(region: str, settings: Mapping[str, str | None]) -> LtsClient:
    """huaweicloudsdklts's client for `region` (imported here: only the provider process talks to LTS, so a plan
    never loads the SDK's models)."""
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdklts.v2 import LtsClient as SdkClient
    from huaweicloudsdklts.v2.region.lts_region import LtsRegion

    ak, sk = settings.get("accessKey"), settings.get("secretKey")
    if not ak or not sk:
        raise RuntimeError(
            "LTS ingestion: no Huawei Cloud credentials: set huaweicloud:accessKey and huaweicloud:secretKey "
            "(pulumi config set --secret) or HW_ACCESS_KEY and HW_SECRET_KEY, as for pulumi-huaweicloud"
        )
    credentials = BasicCredentials(ak, sk, settings.get("projectId"))
    token = settings.get("securityToken")
    if token:
        credentials = credentials.with_security_token(token)
    client: LtsClient = (
        SdkClient.new_builder().with_credentials(credentials).with_region(LtsRegion.value_of(region)).build()
    )
    return client


class LtsIngestionProvider(ResourceProvider):
    """Create, diff, update and delete of the host group and its access configuration. Picklable by reference: it
    holds plain data only (credentials are set in the provider process by `configure`)."""

    serialize_as_secret_always = False  # it captures no secret: the provider's state is set by configure

    def __init__(self, group_type: str, agent_access_type: str, access_config_type: str, wait_minutes: int) -> None:
        super().__init__()
        self.group_type = group_type
        self.agent_access_type = agent_access_type
        self.access_config_type = access_config_type
        self.wait_minutes = wait_minutes
        self.settings: dict[str, str | None] = {}

    def configure(self, req: ConfigureRequest) -> None:
        for key, env in _CONFIG.items():
            self.settings[key] = req.config.get(f"huaweicloud:{key}") or os.environ.get(env)

    def api(self, region: str) -> LtsApi:
        return LtsApi(sdk_client(region, self.settings))

    def wait_for_hosts(self, api: LtsApi, host_ids: Sequence[str]) -> None:
        """Until LTS lists every host (ICAgent installed and reporting), or fail naming the missing ones. A LABEL group
        (AS, CCE) lists none: its nodes join by their identifier."""
        if not host_ids:
            return
        polls = max(1, self.wait_minutes * 60 // POLL_SECONDS)
        for poll in range(polls + 1):
            missing = sorted(set(host_ids) - api.known_hosts(host_ids))
            if not missing:
                return
            if poll < polls:
                _sleep(POLL_SECONDS)
        raise RuntimeError(
            f"LTS ingestion: after {self.wait_minutes} minutes LTS lists no ICAgent on {', '.join(missing)}: see "
            "the instance's journal (gpu-cluster-icagent) for the install; pulumi up again retries"
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        api = self.api(props["region"])
        self.wait_for_hosts(api, props["hostIds"])
        group_id = api.create_host_group(props, self.group_type, self.agent_access_type)
        try:
            access_id = api.create_access_config(props, group_id, self.access_config_type)
        except Exception:
            api.delete_host_group(group_id)  # create is all or nothing: no group is left behind
            raise
        return CreateResult(access_id, {**props, "hostGroupId": group_id, "accessConfigId": access_id})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in (*REPLACES, *HOST_GROUP_INPUTS, *ACCESS_INPUTS) if olds.get(k) != news.get(k)]
        changed = list(dict.fromkeys(changed))
        replaces = [k for k in changed if k in REPLACES]
        return DiffResult(changes=bool(changed), replaces=replaces, stables=["hostGroupId"], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        api = self.api(news["region"])
        group_id = str(olds["hostGroupId"])
        if any(olds.get(k) != news.get(k) for k in HOST_GROUP_INPUTS):
            self.wait_for_hosts(api, news["hostIds"])
            api.update_host_group(group_id, news)
        if any(olds.get(k) != news.get(k) for k in ACCESS_INPUTS):
            api.update_access_config(_id, group_id, news)
        return UpdateResult({**news, "hostGroupId": group_id, "accessConfigId": _id})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        api = self.api(props["region"])
        api.delete_access_config(_id)  # first: it names the host group
        api.delete_host_group(str(props["hostGroupId"]))


class LtsIngestion(pulumi.dynamic.Resource, module="huaweicloud", name="LtsIngestion"):
    """The nodes' files to the stream: `hostGroupId` and the access configuration's id (the resource's id)."""

    hostGroupId: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        provider: LtsIngestionProvider,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(provider, name, {**props, "hostGroupId": None, "accessConfigId": None}, opts)
