"""The judges: the pass-rate decision procedure, the chat clients it asks, preflight, SoWR and FAC judging."""
