"""Query-side functions: local, entity, graph and DRIFT search building blocks."""
