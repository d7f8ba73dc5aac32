"""URLs served by obstore: which URLs, and fsspec ``storage_options`` mapped
onto obstore's store options.

The setting ``url_store`` (:mod:`zarrdask.config`) chooses what serves an
``s3://``, ``gs://``, ``az://`` or ``http(s)://`` URL:
:class:`~zarrdask.storage.fsspec.FsspecStore` (s3fs, gcsfs, adlfs, fsspec's
HTTP file system) or :class:`~zarrdask.storage.obstore.ObstoreStore` over the
obstore store (``obstore.store.S3Store``, ``GCSStore``, ``AzureStore``,
``HTTPStore``) this module makes. The same ``storage_options`` work on both
paths: each fsspec option is mapped onto obstore's ``config``,
``client_options``, ``retry_config`` or ``credential_provider``
(https://developmentseed.org/obstore/latest/api/store/); an option that has
no counterpart raises :class:`~zarrdask.errors.StorageOptionError` naming it.
Options that only tune fsspec's own caches (listings, instances, blocks) have
no effect on what is read or written and are accepted and ignored.

Credentials not given in ``storage_options`` come from the environment as on
the fsspec path (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
``AWS_ENDPOINT_URL``; ``GOOGLE_APPLICATION_CREDENTIALS``;
``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, ...): obstore
reads them itself. A plain-HTTP endpoint (``http://...``, given or from the
environment) is allowed, as s3fs allows it.

obstore is imported only when a store is made.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections import OrderedDict
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from ..errors import StorageOptionError, StoreError
from .obstore_requests import message_of

__all__ = ["URL_SCHEMES", "ObstoreConfigError", "obstore_installed", "obstore_kind", "obstore_store_for_url"]


class ObstoreConfigError(StoreError, ValueError):
    """obstore refused to make a store from the options and environment given
    (e.g. an Azure URL without an account name)."""

#: URL schemes obstore serves, and the kind of its store for each
URL_SCHEMES = {
    "s3": "s3", "s3a": "s3",
    "gs": "gcs", "gcs": "gcs",
    "az": "azure", "abfs": "azure", "abfss": "azure",
    "http": "http", "https": "http",
}

#: fsspec options that tune fsspec's own caches, loops and file objects: no
#: effect on what zarrdask reads or writes, so accepted on the obstore path
IGNORED = frozenset({
    "use_listings_cache", "listings_expiry_time", "max_paths", "skip_instance_cache",
    "default_block_size", "default_fill_cache", "default_cache_type", "cache_regions",
    "asynchronous", "loop", "block_size", "blocksize", "cache_type", "cache_options",
    "simple_links", "same_scheme", "size_policy", "encoded", "cache_timeout",
    "version_aware", "fixed_upload_size",
})

_MAPPED = {
    "s3": "key, secret, token, anon, endpoint_url, requester_pays, use_ssl, profile, "
          "client_kwargs={endpoint_url, region_name, verify, aws_access_key_id, aws_secret_access_key, "
          "aws_session_token}, config_kwargs={region_name, connect_timeout, read_timeout, retries, "
          "signature_version, s3={addressing_style}, max_pool_connections}, "
          "s3_additional_kwargs={ServerSideEncryption, SSEKMSKeyId, RequestPayer}",
    "gcs": "token, project, endpoint_url",
    "azure": "account_name, account_key, sas_token, connection_string, anon, client_id, client_secret, tenant_id",
    "http": "headers, client_kwargs={headers}",
}


def obstore_installed() -> bool:
    """Whether obstore can be imported (it is not imported here)."""
    return importlib.util.find_spec("obstore") is not None


def obstore_kind(url: str) -> str | None:
    """``"s3"``, ``"gcs"``, ``"azure"`` or ``"http"`` if obstore can serve
    ``url`` (a plain URL, not a chained ``a::b://`` one), else ``None``."""
    if "::" in url or "://" not in url:
        return None
    return URL_SCHEMES.get(url.split("://", 1)[0].lower())


class _Options:
    """The storage options not mapped yet; ``take`` removes one."""

    def __init__(self, url: str, kind: str, options: dict[str, Any] | None) -> None:
        self.url, self.kind = url, kind
        self.left = {k: v for k, v in (options or {}).items() if k not in IGNORED}

    def take(self, name: str, default: Any = None) -> Any:
        return self.left.pop(name, default)

    def nested(self, name: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        """A dict-valued option (``client_kwargs``...); its keys outside ``allowed`` are unmappable."""
        value = self.take(name) or {}
        if not isinstance(value, dict):
            raise StorageOptionError(f"storage option {name!r} for {self.url!r} must be a dict, found "
                                     f"{type(value).__name__}")
        extra = sorted(set(value) - set(allowed))
        if extra:
            self.left[name] = {k: value[k] for k in extra}
        return {k: v for k, v in value.items() if k in allowed}

    def unmappable(self, name: str, value: Any) -> None:
        """Keep ``value`` (a dict: some keys of a dict-valued option) to be named as unmappable."""
        if isinstance(value, dict) and isinstance(self.left.get(name), dict):
            value = {**self.left[name], **value}
        self.left[name] = value

    def done(self) -> None:
        if not self.left:
            return
        names = []
        for name, value in sorted(self.left.items()):
            names += [f"{name}={{{k!r}: ...}}" for k in sorted(value)] if isinstance(value, dict) else [name]
        raise StorageOptionError(
            f"obstore cannot take the storage option(s) {', '.join(names)} given for {self.url!r}; "
            f"the obstore path maps {_MAPPED[self.kind]} (and ignores fsspec's cache options). Open the URL "
            "through fsspec instead (zarrdask.config.set(url_store='fsspec'), or the environment variable "
            "ZARRDASK_URL_STORE=fsspec), or pass an obstore store object you configured yourself",
            options=tuple(sorted(self.left)),
        )


def _seconds(value: Any) -> timedelta:
    return value if isinstance(value, timedelta) else timedelta(seconds=float(value))


def _allow_http(endpoint: str | None, client: dict[str, Any]) -> None:
    if endpoint and endpoint.lower().startswith("http://"):
        client["allow_http"] = True


def _s3_config_kwargs(opts: _Options, config: dict, client: dict) -> dict[str, Any] | None:
    """botocore ``Config`` keywords; the ``retry_config`` they ask for (or ``None``)."""
    kw = opts.nested("config_kwargs", ("region_name", "connect_timeout", "read_timeout", "retries",
                                       "signature_version", "s3", "max_pool_connections"))
    # max_pool_connections: obstore pools connections per host without a cap; io_concurrency bounds requests
    if kw.get("region_name"):
        config["region"] = kw["region_name"]
    for name in ("connect_timeout", "read_timeout"):
        if kw.get(name) is not None:
            client[name] = _seconds(kw[name])
    signature = kw.get("signature_version")
    if signature is not None:
        if type(signature).__name__ == "_UNSIGNED" or str(signature).lower() == "unsigned":  # botocore.UNSIGNED
            config["skip_signature"] = True
        else:
            opts.unmappable("config_kwargs", {"signature_version": signature})
    style = (kw.get("s3") or {}).get("addressing_style")
    if style in ("virtual", "path"):
        config["virtual_hosted_style_request"] = style == "virtual"
    elif kw.get("s3"):
        opts.unmappable("config_kwargs", {"s3": kw["s3"]})
    retries = kw.get("retries")
    if retries is None:
        return None
    if "total_max_attempts" in retries:
        return {"max_retries": max(0, int(retries["total_max_attempts"]) - 1)}
    if "max_attempts" in retries:
        return {"max_retries": max(0, int(retries["max_attempts"]))}
    return None


def _s3(url: str, opts: _Options) -> Any:
    from obstore.store import S3Store

    bucket, _, prefix = url.split("://", 1)[1].partition("/")
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    for name, field in (("key", "access_key_id"), ("secret", "secret_access_key"), ("token", "session_token")):
        if opts.left.get(name) is not None:
            config[field] = opts.take(name)
    if opts.take("anon", False):
        config["skip_signature"] = True
    if opts.take("requester_pays", False):
        config["request_payer"] = True
    if opts.take("use_ssl", True) is False:
        client["allow_http"] = True
    ck = opts.nested("client_kwargs", ("endpoint_url", "region_name", "verify", "aws_access_key_id",
                                       "aws_secret_access_key", "aws_session_token"))
    for name, field in (("aws_access_key_id", "access_key_id"), ("aws_secret_access_key", "secret_access_key"),
                        ("aws_session_token", "session_token"), ("region_name", "region")):
        if ck.get(name) is not None:
            config[field] = ck[name]
    if ck.get("verify") is False:
        client["allow_invalid_certificates"] = True
    elif isinstance(ck.get("verify"), str):
        with open(ck["verify"], "rb") as f:
            client["root_certificate"] = f.read()
    endpoint = opts.take("endpoint_url") or ck.get("endpoint_url")
    if endpoint:
        config["endpoint"] = endpoint
    retry = _s3_config_kwargs(opts, config, client)
    extra = opts.nested("s3_additional_kwargs", ("ServerSideEncryption", "SSEKMSKeyId", "RequestPayer"))
    if extra.get("ServerSideEncryption"):
        config["server_side_encryption"] = extra["ServerSideEncryption"]
    if extra.get("SSEKMSKeyId"):
        config["sse_kms_key_id"] = extra["SSEKMSKeyId"]
    if extra.get("RequestPayer"):
        config["request_payer"] = True
    provider = _profile(opts.take("profile"), config)
    opts.done()
    env = [os.environ.get(name) for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")]
    _allow_http(config.get("endpoint") or next((e for e in env if e), None), client)
    return S3Store(bucket, prefix=prefix.strip("/") or None, config=config, client_options=client or None,
                   retry_config=retry, credential_provider=provider)


def _profile(profile: str | None, config: dict[str, Any]) -> Any:
    """A credential provider over a boto3 session of the named AWS profile."""
    if profile is None:
        return None
    import boto3
    from obstore.auth.boto3 import Boto3CredentialProvider

    session = boto3.Session(profile_name=profile)
    if session.region_name and "region" not in config:
        config["region"] = session.region_name
    return Boto3CredentialProvider(session)


def _gcs(url: str, opts: _Options) -> Any:
    from obstore.store import GCSStore

    bucket, _, prefix = url.split("://", 1)[1].partition("/")
    config: dict[str, Any] = {}
    opts.take("project")  # gcsfs uses the project only to make and list buckets
    token = opts.take("token")
    if token == "anon":
        config["skip_signature"] = True
    elif isinstance(token, dict) and token.get("type") == "service_account":
        config["service_account_key"] = json.dumps(token)
    elif isinstance(token, str) and token not in ("google_default", "cloud"):
        if not os.path.isfile(token):
            opts.unmappable("token", token)
        config["application_credentials"] = token
    elif token is not None and token not in ("google_default", "cloud"):
        opts.unmappable("token", token)
    endpoint = opts.take("endpoint_url")
    client: dict[str, Any] = {}
    if endpoint:
        config["base_url"] = endpoint
        _allow_http(endpoint, client)
    opts.done()
    return GCSStore(bucket, prefix=prefix.strip("/") or None, config=config, client_options=client or None)


def _connection_string(text: str, config: dict[str, Any]) -> None:
    """Azure's ``Name=value;...`` connection string onto obstore's config."""
    fields = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
    names = {"AccountName": "account_name", "AccountKey": "account_key", "BlobEndpoint": "endpoint",
             "SharedAccessSignature": "sas_key"}
    for name, field in names.items():
        if fields.get(name):
            config[field] = fields[name]
    if fields.get("UseDevelopmentStorage", "").lower() == "true":
        config["use_emulator"] = True


def _azure(url: str, opts: _Options) -> Any:
    from obstore.store import AzureStore

    where, _, prefix = url.split("://", 1)[1].partition("/")
    container, _, host = where.partition("@")  # abfs://container@account.dfs.core.windows.net/path
    config: dict[str, Any] = {}
    if host:
        config["account_name"] = host.split(".", 1)[0]
    connection = opts.take("connection_string")
    if connection:
        _connection_string(connection, config)
    for name, field in (("account_name", "account_name"), ("account_key", "account_key"),
                        ("sas_token", "sas_key"), ("client_id", "client_id"),
                        ("client_secret", "client_secret"), ("tenant_id", "tenant_id")):
        if opts.left.get(name) is not None:
            config[field] = opts.take(name)
    if "sas_key" in config:
        config["sas_key"] = config["sas_key"].lstrip("?")
    if opts.take("anon", False):
        config["skip_signature"] = True
    opts.done()
    client: dict[str, Any] = {}
    _allow_http(config.get("endpoint"), client)
    return AzureStore(container, prefix=prefix.strip("/") or None, config=config, client_options=client or None)


def _http(url: str, opts: _Options) -> Any:
    from obstore.store import HTTPStore

    headers = dict(opts.take("headers") or {})
    headers.update(opts.nested("client_kwargs", ("headers", "trust_env")).get("headers") or {})
    client: dict[str, Any] = {}
    if headers:
        client["default_headers"] = headers
    _allow_http(url, client)
    opts.done()
    parts = urlsplit(url)
    return HTTPStore.from_url(parts._replace(path=parts.path.rstrip("/")).geturl(), client_options=client or None)


_MAKERS = {"s3": _s3, "gcs": _gcs, "azure": _azure, "http": _http}


def obstore_store_for_url(url: str, storage_options: dict[str, Any] | None = None) -> Any:
    """The obstore store serving ``url``, configured from fsspec-style ``storage_options``.

    Parameters
    ----------
    url : str
        ``s3://bucket/path``, ``gs://bucket/path``, ``az://container/path``
        (also ``abfs[s]://container@account.dfs.core.windows.net/path``) or
        ``http(s)://host/path``.
    storage_options : dict, optional
        s3fs, gcsfs, adlfs or fsspec HTTP options (see the module documentation).

    Raises
    ------
    StorageOptionError
        For an option obstore has no counterpart of (names it).
    ObstoreConfigError
        If obstore refuses the configuration (its message is kept).
    ValueError
        For a URL obstore does not serve.
    """
    kind = obstore_kind(url)
    if kind is None:
        raise ValueError(f"obstore does not serve the URL {url!r}; it serves the schemes "
                         f"{', '.join(sorted(URL_SCHEMES))} (not chained URLs)")
    key = _cache_key(url, storage_options)
    with _LOCK:
        if key is not None and key in _MADE:
            _MADE.move_to_end(key)
            return _MADE[key]
    store = _make(url, kind, storage_options)
    if key is not None:
        with _LOCK:
            _MADE[key] = store
            while len(_MADE) > _CACHED:
                _MADE.popitem(last=False)
    return store


#: stores made lately, by URL, options and credentials in the environment: making
#: one builds an HTTP client (TLS roots, 5-25 ms) and opens new connections, so
#: opening the same URL again reuses the store and its connection pool (as
#: fsspec reuses its file system instances)
_MADE: "OrderedDict[tuple, Any]" = OrderedDict()
_CACHED = 32
_LOCK = threading.Lock()
_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


def _cache_key(url: str, options: dict[str, Any] | None) -> tuple | None:
    """What a store made for ``url`` depends on; ``None`` if the options are not plain data."""
    try:
        frozen = json.dumps(options or {}, sort_keys=True)
    except (TypeError, ValueError):
        return None
    # the names first, the values of the few that match only: os.environ decodes
    # each value it gives, and an open asks for this every time
    environ = os.environ
    env = tuple(sorted((k, environ.get(k)) for k in environ if k.upper().startswith(_ENV_PREFIXES)))
    return url, frozen, env


def _make(url: str, kind: str, storage_options: dict[str, Any] | None) -> Any:
    try:
        return _MAKERS[kind](url, _Options(url, kind, storage_options))
    except (StorageOptionError, ImportError):
        raise
    except Exception as e:  # obstore refuses the configuration (a missing account, a malformed value)
        raise ObstoreConfigError(f"obstore cannot make a store for {url!r} from the storage options "
                                 f"{sorted(storage_options or {})} and the environment: {message_of(e)}") from e
