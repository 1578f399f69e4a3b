"""DRIFT search: HyDE community primer, follow-up local searches in rounds, and a reduce."""
