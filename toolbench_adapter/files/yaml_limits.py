"""Reading a user's YAML file (run configs, sweep specs, evaluator configs), with limits on what it may stand for.

YAML aliases share one object, so a few lines can stand for billions of values ("billion laughs"), and an alias
may sit inside its own anchor (a cycle): whatever walks or copies such data never ends. ``check_expanded_size``
refuses both before anything else reads the data (InputError naming the file). Nesting too deep to parse is the
caller's RecursionError from yaml itself; ``read_yaml`` does all of it, each problem an InputError naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from toolbench_adapter.errors import InputError

MAX_YAML_NODES = 100_000  # far beyond any real config or sweep spec


def check_expanded_size(data: Any, path: str | Path, limit: int = MAX_YAML_NODES) -> None:
    """YAML aliases share one object, so a few lines can stand for billions of values ("billion laughs"): whatever
    walks or copies them then never ends. The size as expanded is counted once per shared object (linear in the
    file), and a file over ``limit`` values is refused (InputError) before anything walks it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the objects being counted now: meeting one again is a cycle

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        if id(node) in open_nodes:
            raise InputError("a YAML alias refers to the value that holds it (a cycle)", path=path,
                             fix="write the values out, without an alias inside its own anchor")
        known = sizes.get(id(node))
        if known is None:
            open_nodes.add(id(node))
            children = node.values() if isinstance(node, dict) else node
            known = sizes[id(node)] = 1 + sum(min(size(child), limit + 1) for child in children)
            open_nodes.discard(id(node))
        return known

    try:
        total = size(data)
    except RecursionError:
        total = limit + 1
    if total > limit:
        raise InputError(f"the file stands for more than {limit:,} values once its YAML aliases (*name) are "
                         "expanded", path=path, fix="write the values out; a config or spec needs no alias bomb")


def read_yaml(path: str | Path, what: str, fix: str | None = None) -> Any:
    """The data of the YAML file at ``path`` (``what`` it is, for the messages: "config file", "sweep spec"):
    missing, unreadable, invalid, nested too deeply or an alias bomb is an InputError naming the file; ``fix``:
    where its shape is explained."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path, fix=fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the {what} ({exc})", path=path) from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what} is not valid YAML: {exc}", path=path) from None
    except (RecursionError, MemoryError):  # yaml's composer recurses once per nesting level
        raise InputError(f"{what} is nested too deeply to read", path=path, fix=fix) from None
    check_expanded_size(data, path)
    return data
