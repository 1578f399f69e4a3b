"""The offline extractive mode: what driftrag does without a model API (no OPENAI_API_KEY).

Ingestion (`offline.ingestion`, "fast" indexing in the spirit of Microsoft GraphRAG's NLP graph and
LazyGraphRAG): capitalised name spans become entities (`entities`, `ingestion.extractor`), sentence
co-occurrences become `RELATED_TO` relationships, a corpus-level pass drops rare names and pairs and
weights pairs by PMI (`ingestion.refine`), and summaries and community reports are made of the
sources' most central sentences (`ingestion.summaries`, `ingestion.reports`).

Queries (`offline.query`): extractive answers, HyDE, primer and reduce over the retrieved text.

Both halves run on the NLTK data bundled with llama-index-core (`nlp`, `lexicon`, `entities`, shared);
nothing is downloaded. Only the composition root (`driftrag.composition`) chooses them.
"""
