"""The one settings model: config/lakegraph.toml (every default, documented), a user file, env vars.

Defaults live only in the TOML file so that the documented value and the used value cannot
drift apart; the model below gives them types and checks.
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from worker import settings_sources as sources
from worker.documents.formats import FORMATS
from worker.exceptions import LakegraphError

# Every default, shipped inside the package (a wheel has no config/ folder); config/lakegraph.toml is
# the documented copy beside the code, and a test keeps the two identical.
DEFAULTS_FILE = Path(__file__).resolve().with_name("defaults.toml")
ENV_PREFIX = "LAKEGRAPH_"
CONFIG_ENV = "LAKEGRAPH_CONFIG"
USER_FILE_NAME = "lakegraph.toml"
SIZE_PATTERN = r"^[1-9][0-9]*[kKmMgG]$"
MASK = "********"
GCS_SCHEME = "gs://"  # a library root in Cloud Storage


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Neo4jSettings(Section):
    uri: str
    user: str
    password: SecretStr
    database: str
    bolt_port: int = Field(ge=0, le=65535)
    heap_size: str = Field(pattern=rf"{SIZE_PATTERN}|^auto$")
    pagecache_size: str = Field(pattern=rf"{SIZE_PATTERN}|^auto$")
    server_config: dict[str, str]
    start_timeout: float = Field(gt=0)
    retry_seconds: float = Field(ge=0)

    @field_validator("uri")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        schemes = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
        if value and urlsplit(value).scheme not in schemes:
            raise ValueError(f"must be empty or a URI with a scheme in {', '.join(schemes)}")
        return value


class RedisSettings(Section):
    url: SecretStr

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: SecretStr) -> SecretStr:
        schemes = ("redis", "rediss", "redis+socket")
        url = value.get_secret_value()
        if url and urlsplit(url).scheme not in schemes:
            raise ValueError(f"must be empty or a URL with a scheme in {', '.join(schemes)}")
        return value


# A server warehouse's engine and the URL schemes it is reached by.
SERVER_SCHEMES = {"postgres": ("postgresql", "postgres"), "mysql": ("mysql", "mariadb")}


class WarehouseSettings(Section):
    engine: Literal["duckdb", "bigquery", "postgres", "mysql"]
    duckdb_path: Path
    bigquery_project: str
    bigquery_datasets: list[str]
    bigquery_location: str
    bigquery_endpoint: str
    url: SecretStr
    schemas: list[str]
    reconcile_interval: float = Field(gt=0)
    jobs_poll_interval: float = Field(ge=0)
    sql_dialect: str  # a sqlglot dialect, checked where queries are parsed (worker/warehouse/joins.py): sqlglot is slow to import
    audit_log_dir: Path
    glossary_path: Path | Literal[""]

    @property
    def query_dialect(self) -> str:
        """The dialect of the queries learned from: a server's own log is always in its own."""
        return self.engine if self.engine in SERVER_SCHEMES else self.sql_dialect

    @model_validator(mode="after")
    def _url_for_the_engine(self) -> WarehouseSettings:
        if self.engine in SERVER_SCHEMES:
            schemes = SERVER_SCHEMES[self.engine]
            if urlsplit(self.url.get_secret_value()).scheme not in schemes:
                raise ValueError(f"warehouse.url: engine {self.engine} needs a URL {' or '.join(f'{scheme}://' for scheme in schemes)}user@host/database")
        return self


class PubsubSettings(Section):
    project: str
    subscription: str
    emulator_host: str


class LibrarySettings(Section):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    root: str  # a folder, or gs://bucket[/prefix] for objects in Cloud Storage

    @field_validator("root", mode="before")
    @classmethod
    def _as_text(cls, value: object) -> object:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @field_validator("root")
    @classmethod
    def _bucket_named(cls, value: str) -> str:
        if value.startswith(GCS_SCHEME) and not value.removeprefix(GCS_SCHEME).split("/", 1)[0]:
            raise ValueError(f"a bucket root names its bucket: {GCS_SCHEME}BUCKET[/PREFIX], got {value!r}")
        return value


class KnowledgeCatalogSettings(Section):
    project: str
    location: str
    glossaries: list[str]
    endpoint: str
    sync_interval: float = Field(gt=0)


class StorageSettings(Section):
    project: str
    endpoint: str
    subscription: str


class DocumentsSettings(Section):
    libraries: list[LibrarySettings]
    extensions: list[str]
    max_file_bytes: int = Field(gt=0)
    unpacked_bytes: int = Field(gt=0)
    unpack_ratio: float = Field(gt=1)
    parse_seconds: float = Field(gt=0)
    max_sections: int = Field(gt=0)
    coalesce_ms: int = Field(ge=0)
    id_schemes: list[str]
    id_fields: list[str]
    id_patterns: list[str]
    reconcile_interval: float = Field(gt=0)

    @field_validator("libraries")
    @classmethod
    def _unique_names(cls, value: list[LibrarySettings]) -> list[LibrarySettings]:
        names = [library.name for library in value]
        if len(names) != len(set(names)):
            raise ValueError(f"library names must be unique, got {names}")
        return value

    @field_validator("id_patterns")
    @classmethod
    def _one_group(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                compiled = re.compile(pattern)
            except re.error as err:
                raise ValueError(f"id pattern {pattern!r}: {err}") from None
            if compiled.groups < 1:
                raise ValueError(f"id pattern {pattern!r} needs a group: the id it captures")
        return value

    @field_validator("extensions")
    @classmethod
    def _supported(cls, value: list[str]) -> list[str]:
        supported = set(FORMATS)
        unknown = sorted(set(value) - supported)
        if unknown:
            raise ValueError(f"unsupported {unknown}; allowed: {', '.join(sorted(supported))}")
        return value


class EmbeddingsSettings(Section):
    provider: Literal["none", "bert"]
    model_dir: Path | Literal[""]
    batch_size: int = Field(gt=0, le=1024)


class ThemesSettings(Section):
    engine: Literal["auto", "gds", "leidenalg"]
    gamma: float = Field(gt=0)
    min_size: int = Field(ge=1)
    jaccard_threshold: float = Field(gt=0, le=1)
    random_seed: int = Field(ge=0)
    max_levels: int = Field(ge=1, le=10)
    quiet_seconds: float = Field(ge=0)
    max_wait_seconds: float = Field(gt=0)


class ShapesSettings(Section):
    answer_tokens: int = Field(gt=0)
    cypher_max_rows: int = Field(gt=0, le=100_000)
    cypher_timeout: float = Field(gt=0)
    sql_max_rows: int = Field(gt=0, le=1_000_000)
    sql_timeout: float = Field(gt=0)
    sql_max_bytes_billed: int = Field(gt=0)
    sql_duckdb_linger: float = Field(ge=0)


class BridgeSettings(Section):
    keys: bool
    columns: list[str]
    value_pattern: str
    max_rows: int = Field(gt=0)
    max_bytes: int = Field(gt=0)
    max_values: int = Field(gt=0)
    refresh_interval: float = Field(gt=0)

    @field_validator("value_pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"not a regular expression: {err}") from None
        return value


class ServeSettings(Section):
    host: str
    port: int = Field(ge=0, le=65535)
    token: SecretStr
    tools_refresh_interval: float = Field(gt=0)
    notify_interval: float = Field(gt=0)
    cli_via_server: bool


Capability = Literal["cypher", "run-sql", "metrics", "themes-refresh"]  # what a grant may allow beyond reading
_URI_SEGMENT = re.compile(r"^[^\s/#]+$")
_TABLE_PART = re.compile(r"^(\*|[A-Za-z0-9_$-]+)$")


class AuthSettings(Section):
    mode: Literal["token", "oidc"]
    issuer: str
    audience: str
    resource_url: str
    groups_claim: str = Field(min_length=1)
    algorithms: list[str] = Field(min_length=1)
    leeway_seconds: float = Field(ge=0, le=300)
    jwks_refresh_seconds: float = Field(ge=0)
    jwks_max_age_seconds: float = Field(gt=0)
    audit_file: Path
    audit_max_bytes: int = Field(gt=0)
    audit_backups: int = Field(ge=0)

    @field_validator("algorithms")
    @classmethod
    def _signed(cls, value: list[str]) -> list[str]:
        if any(algorithm.lower() == "none" or algorithm.upper().startswith("HS") for algorithm in value):
            raise ValueError("only asymmetric signatures are accepted (RS*, PS*, ES*, EdDSA): 'none' and shared-secret HS* are refused")
        return value


class GrantSettings(Section):
    """One grant: the callers it applies to (any of their groups or scopes) and what they may see
    and do. Unset lists are empty: a grant shows nothing it does not name."""

    groups: list[str] = Field(default_factory=list)
    scopes: list[str] = Field(default_factory=list)
    libraries: list[str] = Field(default_factory=list)
    tables: list[str] = Field(default_factory=list)
    capabilities: list[Capability] = Field(default_factory=list)

    @field_validator("libraries")
    @classmethod
    def _plain_prefixes(cls, value: list[str]) -> list[str]:
        """A URI prefix is whole path segments: no `.` or `..`, no empty segment, no `#`."""
        cleaned = []
        for prefix in value:
            segments = prefix.rstrip("/").split("/")
            if not all(_URI_SEGMENT.match(segment) and segment not in (".", "..") for segment in segments):
                raise ValueError(f"library prefix {prefix!r}: whole path segments such as 'manuals' or 'manuals/engine', without '.', '..', '#' or spaces")
            cleaned.append("/".join(segments))
        return cleaned

    @field_validator("tables")
    @classmethod
    def _dotted(cls, value: list[str]) -> list[str]:
        for pattern in value:
            parts = pattern.split(".")
            if not all(_TABLE_PART.match(part) for part in parts) or "*" in parts[:-1]:
                raise ValueError(f"table pattern {pattern!r}: a dataset ('sales'), a table ('sales.orders') or 'sales.*', dotted as table ids are")
        return value


class WorkerSettings(Section):
    concurrency: int = Field(ge=0)
    visibility_timeout: int = Field(ge=10)


class Settings(BaseModel):
    """Effective settings. Build with `load_settings()`, which turns validation errors into one line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state_dir: Path
    cache_dir: Path | Literal[""]
    log_level: Literal["debug", "info", "warning", "error"]
    neo4j: Neo4jSettings
    redis: RedisSettings
    warehouse: WarehouseSettings
    pubsub: PubsubSettings
    storage: StorageSettings
    knowledge_catalog: KnowledgeCatalogSettings
    documents: DocumentsSettings
    embeddings: EmbeddingsSettings
    themes: ThemesSettings
    shapes: ShapesSettings
    bridge: BridgeSettings
    serve: ServeSettings
    auth: AuthSettings
    grants: dict[str, GrantSettings]
    worker: WorkerSettings

    @model_validator(mode="after")
    def _oidc_needs_an_issuer_and_grants(self) -> Settings:
        """In oidc mode a token is checked against an issuer and answered within grants: without
        either, every call would be refused, which is a configuration error, not a policy."""
        if self.auth.mode == "oidc" and not self.auth.issuer:
            raise ValueError("auth.mode = 'oidc' needs auth.issuer (the issuer URL its tokens name in 'iss')")
        if self.auth.mode == "oidc" and not self.grants:
            raise ValueError("auth.mode = 'oidc' needs at least one [grants.<name>] mapping groups or scopes to what they may see")
        return self

    _user_file: Path | None = PrivateAttr(default=None)

    @property
    def user_file(self) -> Path | None:
        """The user file in force (not a config key)."""
        return self._user_file

    @cached_property
    def state_path(self) -> Path:
        return self.state_dir.expanduser().resolve()

    @cached_property
    def cache_path(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir).expanduser().resolve()
        xdg = os.environ.get("XDG_CACHE_HOME")
        return (Path(xdg) if xdg else Path.home() / ".cache") / "lakegraph"

    @cached_property
    def duckdb_file(self) -> Path:
        return self.state_path / self.warehouse.duckdb_path.expanduser()

    @cached_property
    def access_audit_path(self) -> Path:
        """Who asked what, and what was refused (shapes/serving/audit.py)."""
        return self.state_path / self.auth.audit_file.expanduser()

    @cached_property
    def audit_log_path(self) -> Path:
        return self.state_path / self.warehouse.audit_log_dir.expanduser()

    def with_section(self, section: str, **values: Any) -> Settings:
        """A copy with some keys of one section replaced, validated like the files are."""
        current: Section = getattr(self, section)
        replaced = type(current).model_validate({**current.model_dump(), **values})
        copy = self.model_copy(update={section: replaced})
        for name, attribute in vars(Settings).items():  # paths derived from the old sections are derived again
            if isinstance(attribute, cached_property):
                copy.__dict__.pop(name, None)
        return copy

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data with every secret (and URL credential) masked."""
        data = self.model_dump(mode="python")
        data["neo4j"]["password"] = MASK if self.neo4j.password.get_secret_value() else ""
        data["redis"]["url"] = mask_url(self.redis.url.get_secret_value())
        data["warehouse"]["url"] = mask_url(self.warehouse.url.get_secret_value())
        data["serve"]["token"] = MASK if self.serve.token.get_secret_value() else ""
        return _plain(data)


def mask_url(url: str) -> str:
    """Hide the password in a URL such as redis://:secret@host:6379/0."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:{MASK}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, SecretStr):
        return MASK if value.get_secret_value() else ""
    if isinstance(value, Path):
        return str(value)
    return value


def user_config_file(explicit: Path | None = None) -> Path | None:
    """The user file in force: --config, else $LAKEGRAPH_CONFIG, else ./lakegraph.toml if present."""
    if explicit is not None:
        chosen = explicit
    elif os.environ.get(CONFIG_ENV):
        chosen = Path(os.environ[CONFIG_ENV])
    else:
        local = Path.cwd() / USER_FILE_NAME
        return local if local.is_file() else None
    if not chosen.is_file():
        raise LakegraphError(f"config file {chosen} does not exist")
    return chosen


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Read every source, check it, and return the settings — or raise one clear LakegraphError."""
    user_file = user_config_file(config_file)
    _check_environment()

    try:
        raw = sources.merged(
            sources.toml_file(DEFAULTS_FILE),
            sources.toml_file(user_file) if user_file else {},
            sources.environment(Settings, ENV_PREFIX, sources.variables(ENV_PREFIX)),
            overrides,
        )
        settings = Settings.model_validate(raw)
    except ValidationError as err:
        raise LakegraphError(_describe(err, user_file)) from None
    except ValueError as err:  # unparsable TOML or env JSON
        raise LakegraphError(f"config: {err}") from None
    settings._user_file = user_file
    return settings


def _allowed_keys(path: tuple[str | int, ...]) -> list[str]:
    model: type[BaseModel] = Settings
    for part in path:
        annotation = model.model_fields[str(part)].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _describe(err: ValidationError, user_file: Path | None) -> str:
    problems = []
    for item in err.errors():
        loc = tuple(item["loc"])
        key = ".".join(str(part) for part in loc)
        if item["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(loc[:-1]))
            problems.append(f"unknown key '{key}' (allowed here: {allowed})")
        elif item["type"] == "missing":
            problems.append(f"key '{key}' is missing from {DEFAULTS_FILE}")
        else:
            problems.append(f"bad value for '{key}' ({item['input']!r}): {item['msg']}")
    where = f" (user file {user_file})" if user_file else ""
    return "config" + where + ": " + "; ".join(problems)


def _check_environment() -> None:
    """An unknown LAKEGRAPH_* variable would otherwise be ignored; a typo there must not pass silently."""
    known = {CONFIG_ENV}
    for name, field in Settings.model_fields.items():
        known.add(ENV_PREFIX + name.upper())
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            known.update(f"{ENV_PREFIX}{name.upper()}__{sub.upper()}" for sub in annotation.model_fields)
    unknown = sorted(key for key in os.environ if key.upper().startswith(ENV_PREFIX) and key.upper() not in known)
    if unknown:
        raise LakegraphError(
            f"config: unknown environment variable {', '.join(unknown)} (allowed: LAKEGRAPH_<KEY> or LAKEGRAPH_<SECTION>__<KEY>, e.g. LAKEGRAPH_NEO4J__URI)"
        )
