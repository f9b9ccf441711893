"""HTTP: the one transport (retries, whole-request timeouts), kept-alive connections, per-endpoint caps and paces."""
