"""A run folder: its layout (what `tba run` writes and every reader finds there) and its step records."""
