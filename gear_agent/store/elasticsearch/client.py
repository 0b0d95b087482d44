"""Connecting to Elasticsearch: the lazy import, the client, and the start-up checks.

Supported versions: the 8.x Python client (``elasticsearch>=8.12,<9``) against an
8.x server, 8.4 or newer (the top-level ``knn`` search option). A 9.x client
sends ``compatible-with=9`` media types that an 8.x server refuses, and a 7.x
server has no ``knn`` option, so both are refused here with words instead of
failing on the first request.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gear_agent.config import ElasticsearchSettings
from gear_agent.store.base import StoreError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from elasticsearch import Elasticsearch

SUPPORTED_CLIENT_MAJOR = 8
SUPPORTED_SERVER_MAJOR = 8
MIN_SERVER_VERSION = (8, 4)
INSTALL_HINT = "pip install 'gear-agent[elasticsearch]'  (i.e. elasticsearch>=8.12,<9)"
REQUEST_TIMEOUT_S = 60.0
"""Per-request timeout; the client's default of 10 s is short for a large bulk or delete."""
COMPOSE_HINT = "docker compose -f docker-compose.elasticsearch.yml up -d"


def import_elasticsearch() -> ModuleType:
    """The ``elasticsearch`` package, checked to be a supported (8.x) client.

    Raises:
        StoreError: the package is missing or is not an 8.x client.
    """
    try:
        import elasticsearch
    except ImportError as err:
        raise StoreError(
            f"The Elasticsearch backend needs the 'elasticsearch' package: {INSTALL_HINT}"
        ) from err
    version = getattr(elasticsearch, "__versionstr__", "unknown")
    major = elasticsearch.VERSION[0] if hasattr(elasticsearch, "VERSION") else None
    if major != SUPPORTED_CLIENT_MAJOR:
        raise StoreError(
            f"elasticsearch client {version} is installed, but gear-agent supports only the "
            f"{SUPPORTED_CLIENT_MAJOR}.x client against an {SUPPORTED_SERVER_MAJOR}.x server "
            f"(a 9.x client sends media-type headers an 8.x server rejects): {INSTALL_HINT}"
        )
    return elasticsearch


def make_client(settings: ElasticsearchSettings) -> Elasticsearch:
    """A client for ``settings.es_url`` with the configured credentials.

    ``api_key`` wins over ``username``/``password``; a username without a password (or
    the reverse) is refused.
    """
    es = import_elasticsearch()
    if not settings.es_url:
        raise StoreError(
            "GEAR_BACKEND=elasticsearch needs a cluster URL: set GEAR_ES_URL "
            f"(e.g. http://localhost:9200; start one with `{COMPOSE_HINT}`)"
        )
    if (settings.es_username is None) != (settings.es_password is None):
        raise StoreError("set both GEAR_ES_USERNAME and GEAR_ES_PASSWORD, or neither")
    kwargs: dict[str, Any] = {
        "verify_certs": settings.es_verify_certs,
        "request_timeout": REQUEST_TIMEOUT_S,
    }
    if settings.es_api_key:
        kwargs["api_key"] = settings.es_api_key
    elif settings.es_username is not None and settings.es_password is not None:
        kwargs["basic_auth"] = (settings.es_username, settings.es_password)
    if not settings.es_verify_certs:
        kwargs["ssl_show_warn"] = False
    return es.Elasticsearch(settings.es_url, **kwargs)


def parse_version(number: str) -> tuple[int, int]:
    """``"8.15.2"`` -> ``(8, 15)``; ``"8.16.0-SNAPSHOT"`` -> ``(8, 16)``."""
    parts = number.split("-", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError as err:
        raise StoreError(f"cannot read the Elasticsearch server version {number!r}") from err


def check_server(client: Elasticsearch, where: str) -> tuple[str, str]:
    """Ask the cluster who it is; refuse anything but an 8.x (>= 8.4) Elasticsearch.

    Returns:
        The server version string, e.g. ``"8.15.2"``, and the cluster's UUID.

    Raises:
        StoreError: unreachable, refused credentials, or an unsupported server.
    """
    with translate_errors(f"connecting to Elasticsearch at {where}"):
        info = client.info()
    version = info.get("version", {})
    number = str(version.get("number", "?"))
    if version.get("distribution") == "opensearch":
        raise StoreError(f"{where} is OpenSearch {number}; gear-agent supports Elasticsearch 8.x")
    major, minor = parse_version(number)
    if major != SUPPORTED_SERVER_MAJOR or (major, minor) < MIN_SERVER_VERSION:
        low = ".".join(map(str, MIN_SERVER_VERSION))
        raise StoreError(
            f"Elasticsearch server at {where} is version {number}; gear-agent supports "
            f"{SUPPORTED_SERVER_MAJOR}.x servers from {low} on, with the "
            f"{SUPPORTED_CLIENT_MAJOR}.x Python client. Use an {SUPPORTED_SERVER_MAJOR}.x "
            "cluster (see docs/elasticsearch.md)."
        )
    return number, str(info.get("cluster_uuid") or "_na_")


def error_cause(error: Any) -> dict[str, Any]:
    """The useful part of an Elasticsearch ``error`` object: its first root cause when the
    error itself only says that shards failed (``search_phase_execution_exception: all
    shards failed``, where the reason is in ``root_cause``), else the error."""
    if not isinstance(error, dict):
        return {"type": "?", "reason": str(error)}
    causes = error.get("root_cause")
    if error.get("type") == "search_phase_execution_exception" and causes and isinstance(causes[0], dict):
        return causes[0]
    return error


def error_reason(err: Exception) -> str:
    """The error type and reason Elasticsearch gave, else the exception's text."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        cause = error_cause(body["error"])
        return f"{cause.get('type', '?')}: {cause.get('reason', '?')}"
    return str(getattr(err, "message", None) or err)


def missing_index(what: str, error: Any) -> StoreError | None:
    """A :class:`StoreError` for ``index_not_found_exception`` (None for any other error):
    the index was deleted while gear-agent had it open, or was never created."""
    cause = error_cause(error)
    if cause.get("type") != "index_not_found_exception":
        return None
    name = cause.get("index") or cause.get("resource.id") or "?"
    return StoreError(
        f"{what}: index {name!r} does not exist (deleted while in use?). Nothing was written; "
        "rebuild it with `gear index` (GEAR_BACKEND=elasticsearch), or check GEAR_ES_INDEX_PREFIX."
    )


def _connection_reason(err: Exception) -> str:
    """The innermost reason of a connection error (``[Errno 111] Connection refused``,
    ``timed out``), not the client's nested retelling of it."""
    text = str(err)
    errno = re.search(r"\[Errno -?\d+\] [^)'\"\]]+", text)
    if errno:
        return errno.group(0).strip()
    return text.rsplit("caused by: ", 1)[-1][:200]


@contextlib.contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Re-raise the client's errors as :class:`StoreError` saying what failed and what to do.

    Only the client's own exception types are caught; everything else passes.
    """
    es = import_elasticsearch()
    try:
        yield
    except es.AuthenticationException as err:
        raise StoreError(
            f"{what}: authentication failed (HTTP 401, {error_reason(err)}). Set GEAR_ES_API_KEY, "
            "or GEAR_ES_USERNAME and GEAR_ES_PASSWORD."
        ) from err
    except es.AuthorizationException as err:
        raise StoreError(
            f"{what}: the user lacks a privilege (HTTP 403, {error_reason(err)}). It needs "
            "'monitor' on the cluster and 'create_index', 'read', 'write', 'view_index_metadata' "
            "on the gear indices."
        ) from err
    except es.ApiError as err:
        body = getattr(err, "body", None)
        gone = missing_index(what, body.get("error")) if isinstance(body, dict) else None
        if gone is not None:
            raise gone from err
        status = getattr(getattr(err, "meta", None), "status", "?")
        raise StoreError(f"{what}: Elasticsearch answered HTTP {status}, {error_reason(err)}") from err
    except es.ConnectionError as err:
        raise StoreError(
            f"{what}: cannot reach the cluster ({_connection_reason(err)}). Is it running and is "
            "GEAR_ES_URL right? "
            f"For local development: `{COMPOSE_HINT}`. For a self-signed HTTPS certificate "
            "set GEAR_ES_VERIFY_CERTS=false."
        ) from err
    except es.TransportError as err:
        raise StoreError(f"{what}: transport error ({err})") from err
