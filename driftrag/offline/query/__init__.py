"""The offline query tasks: extractive answers, HyDE, primer and reduce from the retrieved text."""
