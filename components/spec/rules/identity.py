"""Who logs in and how: the SSH key and admin user the cloud accepts, `access`, `identity` and `login`
(catalog/capabilities/<cloud>.yaml)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

from ... import catalog
from ...catalog import Cloud
from ...catalog.capabilities import Capabilities, capabilities
from ...errors import CLUSTER_KEY, ConfigError, Finding
from ..context import Context
from ..messages import describe
from ..model import ClusterConfig, LoginConfig

# What the offline plan uses for a `secure:` SSH key it cannot decrypt (never checked further).
SECRET_KEY_STAND_IN = "ssh-ed25519 AAAAsecretplaceholder"


def rsa_bits(public_key: str) -> int | None:
    """The modulus size of an `ssh-rsa` public key (RFC 4253 wire format), None when it does not parse."""
    try:
        blob = base64.b64decode(public_key.split()[1], validate=True)
        fields: list[bytes] = []
        pos = 0
        for _ in range(3):  # string "ssh-rsa", mpint e, mpint n
            size = int.from_bytes(blob[pos : pos + 4], "big")
            fields.append(blob[pos + 4 : pos + 4 + size])
            pos += 4 + size
    except (ValueError, IndexError):
        return None
    if fields[0] != b"ssh-rsa" or not fields[2]:
        return None
    return int.from_bytes(fields[2], "big").bit_length()


def _check_login_user(cloud: Cloud, cfg: ClusterConfig, caps: Capabilities) -> None:
    """The key types and admin names the cloud accepts (data: catalog/capabilities/<cloud>.yaml)."""
    k = f"{CLUSTER_KEY}."
    key = cfg.ssh_public_key
    if key is not None and key != SECRET_KEY_STAND_IN:
        kind = key.split()[0]
        if kind not in caps.ssh_key_types:
            raise ConfigError(
                f"{k}sshPublicKey",
                f"a {kind} key, but {cloud} accepts only {', '.join(caps.ssh_key_types)} ({caps.ssh_keys_source})",
            )
        bits = rsa_bits(key) if kind == "ssh-rsa" else None
        if kind == "ssh-rsa" and (bits is None or (caps.rsa_min_bits and bits < caps.rsa_min_bits)):
            size = "an unreadable" if bits is None else f"a {bits}-bit"
            raise ConfigError(
                f"{k}sshPublicKey",
                f"{size} RSA key; {cloud} needs at least {caps.rsa_min_bits or 1024} bits ({caps.ssh_keys_source})",
            )
    if cfg.admin_user.lower() in caps.forbidden_admin_users:
        raise ConfigError(
            f"{k}adminUser",
            f"{cfg.admin_user!r} is an admin name {cloud} refuses; pick another ({caps.admin_users_source})",
        )


def _login_user(ctx: Context) -> Iterator[ConfigError]:
    try:
        _check_login_user(ctx.cloud, ctx.cfg, capabilities(ctx.cloud))
    except ConfigError as exc:
        yield exc


def check_access(cloud: Cloud, cfg: ClusterConfig, findings: list[Finding]) -> tuple[str, LoginConfig | None]:
    """`access`, `identity` and `login` against what the cloud offers (its capabilities data)."""
    k = f"{CLUSTER_KEY}."
    caps = capabilities(cloud)
    access = caps.resolve_access(cfg.access)
    if access not in caps.access_methods:
        offered = ", ".join([f"auto ({caps.access_default})", *caps.access_methods])
        raise ConfigError(f"{k}access", f"got {cfg.access!r}; {cloud} offers: {offered}")
    ident = caps.identity
    for i, policy in enumerate(cfg.identity.policies):
        if not ident.policy_ok(policy):
            raise ConfigError(f"{k}identity.policies[{i}]", f"got {describe(policy)}; expected {ident.policy_hint}")
    if cfg.identity.existing is not None and not ident.existing_ok(cfg.identity.existing):
        raise ConfigError(
            f"{k}identity.existing", f"got {describe(cfg.identity.existing)}; expected {ident.existing_hint}"
        )
    login = None
    if cfg.login is not None:
        login_type = cfg.login.instance_type or caps.login_default_type
        if catalog.find(cloud, login_type):
            raise ConfigError(
                f"{k}login.instanceType",
                f"{login_type} is a GPU type; a login node is a small CPU VM such as {caps.login_default_type}",
            )
        login = cfg.login.model_copy(update={"instance_type": login_type})
    net = cfg.network
    reachable_from_outside = net.public_ip or (login is not None and login.public_ip)
    if access == "ssh":
        if not net.ssh_cidrs:
            findings.append(
                Finding("warning", f"{k}access", "ssh, but network.sshCidrs is empty: no address may reach port 22")
            )
        elif not reachable_from_outside:
            findings.append(
                Finding(
                    "warning",
                    f"{k}access",
                    "ssh from network.sshCidrs, but neither the nodes nor a login node have a public IP: "
                    "no working login path (use access: auto, or login: {publicIp: true})",
                )
            )
        if cfg.ssh_public_key is None and cloud != "gcp":  # GCP: OS Login keys live in the user's profile
            findings.append(Finding("warning", f"{k}sshPublicKey", "not set, but access is ssh: nobody can log in"))
    elif access == "none" and login is None:
        findings.append(Finding("info", f"{k}access", "none: the plan builds no way to log in to the nodes"))
    if login is not None and login.public_ip and not net.ssh_cidrs:
        findings.append(
            Finding("warning", f"{k}login.publicIp", "true, but network.sshCidrs is empty: the login node is closed")
        )
    return access, login
