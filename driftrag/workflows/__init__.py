"""LlamaIndex Workflows of driftrag: thin steps over the plain async functions in ingestion/ and search/."""
