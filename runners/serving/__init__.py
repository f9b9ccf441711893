"""Local model serving and the end-to-end driver: a managed engine (engine.py: vLLM or `tba serve-model`),
any backend behind the OpenAI API shape (openai_server.py), and `python -m runners.serving.e2e` (e2e.py)."""
