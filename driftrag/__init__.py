"""driftrag: a GraphRAG engine on Neo4j with LlamaIndex Workflows."""

__version__ = "0.1.0"
