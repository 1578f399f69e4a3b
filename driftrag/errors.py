"""One root exception, one subclass per failure a caller can act on."""

from __future__ import annotations


class DriftRAGError(Exception):
    """Root of every error driftrag raises on purpose."""


class ConfigurationError(DriftRAGError):
    """A setting or a combination of settings cannot work."""


class InvalidIdentifierError(DriftRAGError, ValueError):
    """A knowledge-base id or other identifier failed validation before any query ran."""


class BackendUnavailableError(DriftRAGError):
    """Neo4j cannot be reached (or answers in a way that makes it unusable)."""


class UnsupportedServerError(DriftRAGError):
    """The Neo4j server is too old or not a Neo4j the project supports."""


class EmbeddingDimensionMismatchError(DriftRAGError):
    """The embedder (its name or dimension) is not the one whose vectors a knowledge base or index holds."""


class LocalNeo4jError(DriftRAGError):
    """The project's local Neo4j could not be resolved, started or stopped."""


class MissingPrerequisiteError(LocalNeo4jError):
    """The local Neo4j needs something the machine lacks: java, mvn, or the Maven repository (network)."""


class LocalModelError(DriftRAGError):
    """The local model (`llm_provider=local`) cannot be served: its file is missing, not GGUF, or does not load."""


class InvalidExtractConfigError(DriftRAGError, ValueError):
    """An extraction config (a JSON file, a request body) that is not valid JSON or not a valid config."""


class ModelRequiredError(DriftRAGError):
    """The operation needs a language model, and this engine runs offline (no model API configured)."""


class ModelError(DriftRAGError):
    """A model call failed after its retries, or its output could not be used."""


class PromptTooLongError(ModelError):
    """A prompt that leaves no room for an answer in the model's context window: refused, not sent (the
    server would cut it or fail). Not transient: the same prompt fails again; a caller may send less."""


class KnowledgeBaseNotFoundError(DriftRAGError):
    """No knowledge base with this id exists (distinct from a knowledge base with no match)."""


class KnowledgeBaseDeletingError(KnowledgeBaseNotFoundError):
    """The knowledge base is being deleted (or a delete of it was interrupted): readers treat it as gone."""


class GraphDisabledError(BackendUnavailableError):
    """The graph of this knowledge base is disabled (`graph_enabled = false`); graph search refuses to run."""


class InvalidQueryError(DriftRAGError, ValueError):
    """A question or search string cannot be searched (empty, too long)."""


class CommunityNotFoundError(DriftRAGError):
    """No community with this id exists in the knowledge base."""


class UnknownCorpusError(DriftRAGError, ValueError):
    """No corpus of this name is in the registry (`driftrag data list`)."""


class ChecksumMismatchError(DriftRAGError):
    """A corpus file (downloaded or given with --from) is not the pinned edition."""


class DownloadUnavailableError(DriftRAGError):
    """A corpus could not be downloaded: no network, the host unreachable, or an HTTP error."""


class QueryTimeoutError(DriftRAGError):
    """A query (any mode) ran longer than `query_timeout_s`."""


class OptionalDependencyError(DriftRAGError, ImportError):
    """A feature needs an optional extra that is not installed (or is a version driftrag does not support)."""
