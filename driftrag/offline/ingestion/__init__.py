"""The offline ingestion tasks: name-span extraction, PMI refinement, extractive summaries and reports."""
