"""Deterministic test doubles shared by the test suite."""
