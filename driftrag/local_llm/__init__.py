"""The local model of `llm_provider=local`: llama.cpp's OpenAI-compatible server, in this process."""
