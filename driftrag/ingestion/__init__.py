"""Ingestion stages: loading, chunking, extraction, merge, summaries, communities, reports, embeddings."""
