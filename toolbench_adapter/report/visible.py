"""Text from users' files as a table shows it: control and format characters made visible.

A sweep label is written by whoever wrote the spec (or sweep.json); a NUL cuts a CSV reader's line short and a
right-to-left override (U+202E) reorders what a reader sees after it, so a row can read as another cell's. Such a
character is shown as its escape (``\\x00``, ``\\u202e``) in every matrix format; the sweep spec refuses them in
labels up front (runners/sweep/spec.py).
"""

from __future__ import annotations

import unicodedata

# Cc: control characters (NUL, ESC, ...); Cf: format characters (direction overrides and isolates, zero-width
# joiners, the byte-order mark); Cs: lone surrogates. Tab and line breaks are whitespace: a space (a cell is a line)
HIDDEN_CATEGORIES = ("Cc", "Cf", "Cs")
WHITESPACE = {"\t": " ", "\n": " ", "\r": " "}


def escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with each hidden character written as its escape, tabs and line breaks as spaces (the rest
    unchanged)."""
    if text.isprintable():  # the common case: nothing to do (isprintable is False for every hidden category)
        return text
    return "".join(WHITESPACE.get(c) or (escape(c) if unicodedata.category(c) in HIDDEN_CATEGORIES else c)
                   for c in text)
