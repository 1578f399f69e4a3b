"""Prompt templates, one file per task."""
