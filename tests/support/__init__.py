"""Test helpers that drive real programs (not test doubles: those live in tests/fakes)."""
