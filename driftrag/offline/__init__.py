"""The offline extractive mode: what driftrag does without a model API (no OPENAI_API_KEY).

Ingestion ("fast" indexing in the spirit of Microsoft GraphRAG's NLP graph and LazyGraphRAG):
capitalised name spans become entities (`entities`, `extractor`), sentence co-occurrences become
`RELATED_TO` relationships, a corpus-level pass drops rare names and pairs and weights pairs by PMI
(`refine`), and summaries and community reports are made of the sources' most central sentences
(`summaries`, `reports`). Everything runs on the NLTK data bundled with llama-index-core (`nlp`);
nothing is downloaded. `tasks.offline_ingestion_tasks(settings)` builds the ingestion task set.

The `query_*` modules are the query side of the same mode.
"""
