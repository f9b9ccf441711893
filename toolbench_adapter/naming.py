"""Name normalisation exactly as upstream (toolbench/utils.py, server/main.py), and upstream's name lookup by
suffix (rapidapi_wrapper.py)."""

from __future__ import annotations

import re
from functools import lru_cache

from .protocol.functions import (
    DIGIT_PREFIX,
    FUNCTION_NAME_JOIN,
    FUNCTION_NAME_MAX_LENGTH,
    RESERVED_NAMES,
    RESERVED_PREFIX,
)

# Upstream writes the class as [^\u4e00-\u9fa5^a-z^A-Z^0-9^_]: every '^' after the first is a literal,
# so '^' survives standardize(). Reproduced on purpose.
_NON_NAME = re.compile("[^\u4e00-\u9fa5^a-z^A-Z^0-9^_]")
_UNDERSCORES = re.compile("_+")


@lru_cache(maxsize=1 << 16)  # a run names the same tools and APIs in query after query: computed once each
def standardize(name: str) -> str:
    """Tool / API display name -> identifier (toolbench/utils.py standardize)."""
    text = _UNDERSCORES.sub("_", _NON_NAME.sub("_", name)).lower().strip("_")
    if text and text[0].isdigit():
        text = DIGIT_PREFIX + text
    return text


def change_name(name: str) -> str:
    """Prefix Python-ish reserved words (toolbench/utils.py change_name): ``id`` -> ``is_id``."""
    return RESERVED_PREFIX + name if name in RESERVED_NAMES else name


def standardize_category(category: str) -> str:
    """Category display name -> folder name (server/main.py, inlined upstream)."""
    text = category.replace(" ", "_").replace(",", "_").replace("/", "_")
    while " " in text or "," in text:
        text = text.replace(" ", "_").replace(",", "_")
    return text.replace("__", "_")


@lru_cache(maxsize=1 << 16)
def pure_api_name(api_name: str) -> str:
    """The untruncated API identifier the server is called with."""
    return change_name(standardize(api_name))


def function_name(api_name: str, standard_tool_name: str) -> str:
    """``{api}_for_{tool}``, keeping the LAST 64 characters as upstream does (the head is cut)."""
    return (pure_api_name(api_name) + FUNCTION_NAME_JOIN + standard_tool_name)[-FUNCTION_NAME_MAX_LENGTH:]


def server_tool_folder(standard_tool_name: str, category: str) -> str:
    """Cache folder of a tool: ``{tool}_for_{category}`` (server/main.py prepare_tool_name_and_url)."""
    standard_category = standardize_category(category)
    suffix = FUNCTION_NAME_JOIN + standard_category
    if standard_tool_name.endswith(suffix):
        return standard_tool_name
    return standardize(standard_tool_name) + suffix


# here rather than in env/lookup.py: the server's cache builder needs it too, and env/ imports server/ (the
# client), so env/ is no place server/ may import from
def suffix_match(name: str, function_names: list[str]) -> str | None:
    """rapidapi_wrapper._step: the first function whose name ends with ``name`` ("" matches the first)."""
    for candidate in function_names:
        if candidate.endswith(name):
            return candidate
    return None
