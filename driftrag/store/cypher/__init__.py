"""Every Cypher statement of driftrag, as named constants grouped by concern.

Values are always `$parameters`; labels and relationship types are fixed words written here, never
built from input. Each node carries `kb`, the knowledge-base namespace.
"""
