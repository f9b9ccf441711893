"""The one reader of the files a user hands the project: query files, run configs and sweep specs, evaluator
configs, label and score files, answer files, published tables, tool documents, judge cards, corpora.

    from toolbench_adapter.files.input_files import read_json, read_jsonl, read_text, read_yaml
    queries = read_json(path, "query file")          # the kind names the limit and the words of every refusal

Each reader takes a path and a kind (a name in ``KINDS``: its size limit, why that limit, what to pass instead)
and returns the content, or raises ``UnreadableFile`` (an InputError, exit 2, naming the file and the fix, with a
short ``reason`` code for per-reason counts) for:

- a missing file, or a link to one (``not_found``);
- what is not a regular file: a folder, a FIFO, a socket, a device, a symbolic link loop (``special_file``).
  Decided by ``os.stat``, which never opens the entry, so a FIFO with no writer cannot block the reader; the file
  is then opened non-blocking and checked again (it may have been swapped in between);
- a file past its kind's size limit (``too_large``): refused by its size on disk before a byte is read, and never
  more than the limit read from a file whose size says less (/proc files say 0);
- a read that fails, e.g. /proc/self/mem (``unreadable``); a NUL byte (``binary``); bytes that are not UTF-8
  (``not_utf8``);
- JSON or YAML that does not parse (``not_json``, ``not_yaml``), nests deeper than the parser follows
  (``too_deep``), a YAML key given twice in one mapping (``duplicate_key``: YAML would keep the last silently) or
  YAML aliases that stand for more values than any config holds (``alias_bomb``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from toolbench_adapter.errors import InputError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class FileKind:
    """What a reader expects: ``max_bytes`` and ``why`` (said with the limit), ``fix`` (what to pass instead)."""

    name: str
    max_bytes: int
    why: str
    fix: str


def _kinds(*kinds: FileKind) -> dict[str, FileKind]:
    return {kind.name: kind for kind in kinds}


# Each limit is far above any real file of its kind (the reason says by how much) and below what would take the
# machine's memory: json and yaml hold several times a file's size while they parse it.
KINDS: dict[str, FileKind] = _kinds(
    FileKind("query file", 1 * GiB, "StableToolBench's are about 1 MB each",
             "pass a StableToolBench / ToolBench query file (a JSON list of queries); `tba data fetch` restores "
             "StableToolBench's"),
    FileKind("test id file", 64 * MiB, "StableToolBench's are under 3 KB",
             "restore the test id files from the upstream checkout (`tba data fetch`)"),
    FileKind("config file", 4 * MiB, "a run config is a few hundred bytes",
             "pass a run config: a flat YAML mapping of settings (docs/runs.md)"),
    FileKind("sweep spec", 4 * MiB, "a spec is a few KB", "pass a sweep spec (its shape and an example: docs/sweeps.md)"),
    FileKind("evaluator config", 4 * MiB, "upstream's are under 4 KB",
             "pass an evaluator folder holding config.yaml and its template (like evaluators/default)"),
    FileKind("prompt template", 4 * MiB, "upstream's are under 4 KB",
             "pass an evaluator folder holding config.yaml and its template (like evaluators/default)"),
    FileKind("price file", 4 * MiB, "a price file is a few lines",
             "pass a price file: models: {MODEL: {input: PER_MILLION, output: PER_MILLION}} (docs/noise.md: Cost and "
             "latency)"),
    FileKind("prompt file", 4 * MiB, "a system prompt is a few KB", "pass the text file of the system prompt"),
    FileKind("label file", 256 * MiB, "a group's labels for 1,100 queries are a few MB",
             "pass label files written by `tba judge` / `tba evaluate` or released with StableToolBench"),
    FileKind("score file", 256 * MiB, "a score file is a few KB", "pass files written by `tba score` / `tba judge`"),
    FileKind("converted answer file", 1 * GiB, "a group's converted answers are a few MB",
             "pass a file written by `tba convert`"),
    FileKind("answer file", 256 * MiB, "upstream's largest DFS trees are a few hundred KB",
             "pass raw answer files written by a ToolBench / StableToolBench run"),
    FileKind("published table", 256 * MiB, "a paper's table is kilobytes; the largest measured (make "
             "bench-published) 50 MB", "pass the Markdown / LaTeX / CSV / TSV text file that holds the table"),
    FileKind("tool document", 64 * MiB, "a tool's document is a few KB",
             "pass the tools/ folder of StableToolBench's tool environment"),
    FileKind("cache file", 256 * MiB, "an API's cached responses are kilobytes to a few MB",
             "pass StableToolBench's tool_response_cache folder"),
    FileKind("judge card", 4 * MiB, "a card holds a few dozen audits of a few hundred bytes each",
             "delete it and audit the judge again (tba judge-audit)"),
    FileKind("corpus", 1 * GiB, "the shipped parser corpus is under 1 MB",
             "pass JSONL of {\"text\": ...} records, answer files or run folders"),
    FileKind("run record", 256 * MiB, "the records a run or sweep writes are kilobytes to a few MB",
             "this is one of the project's own records (manifest.json, sweep.json, evaluation.json, ...): "
             "restore it, or run the command that writes it again"),
)


class UnreadableFile(InputError):
    """An input file refused before its content is used; ``reason`` is a short code (see the module's list)."""

    def __init__(self, reason: str, problem: str, *, path: str | Path, field: str | None = None,
                 fix: str | None = None):
        self.reason = reason
        super().__init__(problem, path=path, field=field, fix=fix)


def kind_of(name: str) -> FileKind:
    """The kind called ``name``: a name not in KINDS is the caller's mistake (ValueError), never a default."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"no input file kind {name!r}; known: {', '.join(KINDS)}") from None


# ---- bytes ---------------------------------------------------------------------------------------------------

_SPECIAL = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def _what_it_is(mode: int) -> str | None:
    """None for a regular file, else what the entry is instead."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _SPECIAL if test(mode)), "a special file")


def _refuse_special(path: Path, kind: FileKind, what: str, mode: int) -> UnreadableFile:
    it = _what_it_is(mode)
    fix = (f"name the {what} inside the folder, not the folder" if stat.S_ISDIR(mode)
           else f"name a regular file (no command reads a pipe, socket or device): {kind.fix}")
    return UnreadableFile("special_file", f"not a regular file ({it}): no {what} was read from it", path=path,
                          fix=fix)


def _stat(path: Path, kind: FileKind, what: str) -> os.stat_result:
    try:
        return os.stat(path)  # follows links and opens nothing: a FIFO cannot block it
    except FileNotFoundError:
        if os.path.islink(path):
            raise UnreadableFile("not_found", f"{what} is a link to a missing file ({os.readlink(path)})",
                                 path=path, fix=kind.fix) from None
        raise UnreadableFile("not_found", f"{what} not found", path=path, fix=kind.fix) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFile("special_file", f"{what} is a symbolic link loop (a link that leads back to "
                                 "itself): nothing to read", path=path,
                                 fix=f"point the link at a real file, or name the file itself: {kind.fix}") from None
        raise UnreadableFile("unreadable", f"cannot read the {what} ({exc.strerror or exc})", path=path,
                             fix=kind.fix) from None


def _too_large(path: Path, kind: FileKind, what: str, size: int | None) -> UnreadableFile:
    said = f"{size:,} bytes, " if size else ""
    return UnreadableFile("too_large", f"{what} is larger than {_amount(kind.max_bytes)} ({said}the limit for a "
                          f"{kind.name}: {kind.why}): refused before reading it", path=path,
                          fix=f"{kind.fix}; cut the file down if it really is one")


def _amount(count: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count:,} bytes"


def read_bytes(path: str | Path, kind: str, *, what: str | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most the kind's limit; UnreadableFile otherwise. ``what``:
    the noun of the messages (default: the kind's name, e.g. "query file")."""
    path, spec = Path(path), kind_of(kind)
    what = what or spec.name
    info = _stat(path, spec, what)
    if _what_it_is(info.st_mode):
        raise _refuse_special(path, spec, what, info.st_mode)
    if info.st_size > spec.max_bytes:
        raise _too_large(path, spec, what, info.st_size)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise UnreadableFile("unreadable", f"cannot open the {what} ({exc.strerror or exc})", path=path,
                             fix=spec.fix) from None
    try:
        info = os.fstat(fd)  # the entry may have been swapped for a FIFO since the stat: O_NONBLOCK opened it anyway
        if _what_it_is(info.st_mode):
            raise _refuse_special(path, spec, what, info.st_mode)
        data = _read_at_most(fd, info.st_size, spec.max_bytes)
    except OSError as exc:  # /proc/self/mem and its kin: a regular file whose read fails
        raise UnreadableFile("unreadable", f"cannot read the {what} ({exc.strerror or exc})", path=path,
                             fix=spec.fix) from None
    finally:
        os.close(fd)
    if len(data) > spec.max_bytes:
        raise _too_large(path, spec, what, None)
    return data


def _read_at_most(fd: int, size: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes: the size on disk in one read (a buffer that size, not the limit's), then more
    only while the file keeps giving (it grew, or its size said less than there is, as /proc files do)."""
    chunks = [os.read(fd, min(size, limit) + 1)]
    total = len(chunks[0])
    while total <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# ---- text ----------------------------------------------------------------------------------------------------


def read_text(path: str | Path, kind: str, *, what: str | None = None) -> str:
    """The UTF-8 text of the file (newlines as they are); a NUL byte (a binary file) or bytes that are not UTF-8
    are refused by offset, as read_bytes refuses the rest."""
    spec = kind_of(kind)
    return _decode(read_bytes(path, kind, what=what), Path(path), spec, what or spec.name)


def _decode(data: bytes, path: Path, kind: FileKind, what: str) -> str:
    nul = data.find(b"\0")
    if nul >= 0:
        raise UnreadableFile("binary", f"{what} is a binary file (a NUL byte at offset {nul:,}), not text",
                             path=path, fix=kind.fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnreadableFile("not_utf8", f"{what} is not UTF-8 text (byte {exc.start:,}, line {line}: "
                             f"{exc.reason})", path=path, fix=f"{kind.fix}, saved as UTF-8") from None


# ---- JSON ----------------------------------------------------------------------------------------------------

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)  # strings whole (skipped), brackets one by one


def json_depth(text: str, stop_at: int | None = None) -> tuple[int, int, int]:
    """(depth, line, column) of the deepest nesting in a JSON text, strings skipped (or of the first point past
    ``stop_at`` levels): where a text that the parser gave up on (RecursionError) goes too deep."""
    depth = best = best_at = 0
    for match in _JSON_TOKENS.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > best:
                best, best_at = depth, match.start()
                if stop_at is not None and depth > stop_at:
                    break
        elif char in "]}":
            depth -= 1
    line = text.count("\n", 0, best_at) + 1
    return best, line, best_at - (text.rfind("\n", 0, best_at) + 1) + 1


PARSER_DEPTH = 900  # about where json's C parser gives up with RecursionError (sys.getrecursionlimit() 1000)


def _too_deep(text: str, path: Path, kind: FileKind, what: str, where: str = "") -> UnreadableFile:
    depth, line, column = json_depth(text, stop_at=PARSER_DEPTH)
    levels = f"more than {PARSER_DEPTH}" if depth > PARSER_DEPTH else str(depth)
    return UnreadableFile("too_deep", f"{what} is nested too deeply to read{where}: {levels} levels, past the "
                          f"{PARSER_DEPTH} or so the JSON reader follows (a {kind.name} nests a few dozen)", path=path,
                          field=f"line {line} column {column}" if not where else None, fix=kind.fix)


def parse_json(text: str, path: str | Path, kind: str, *, what: str | None = None) -> Any:
    """JSON from a text already read (by read_text, or a line of JSONL), refused as read_json refuses it."""
    spec = kind_of(kind)
    what = what or spec.name
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableFile("not_json", f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column "
                             f"{exc.colno})", path=path, fix=spec.fix) from None
    except RecursionError:  # json raises this, not a JSONDecodeError, on nesting deeper than the stack
        raise _too_deep(text, Path(path), spec, what) from None


def read_json(path: str | Path, kind: str, *, what: str | None = None) -> Any:
    """The JSON value of the file; every refusal of read_text, invalid JSON by line and column, nesting deeper
    than the parser follows by where it goes that deep."""
    return parse_json(read_text(path, kind, what=what), path, kind, what=what)


def read_jsonl(path: str | Path, kind: str, *, what: str | None = None) -> list[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON Lines file; a line that is not JSON is refused by
    its number (field "line N")."""
    spec = kind_of(kind)
    what = what or spec.name
    rows = []
    # lines end at "\n" only: splitlines() also splits at U+2028 and other separators a JSON string may hold raw
    for number, line in enumerate(read_text(path, kind, what=what).split("\n"), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise UnreadableFile("not_json", f"{what} line {number} is not valid JSON ({exc.msg} at column "
                                 f"{exc.colno})", path=path, field=f"line {number}", fix=spec.fix) from None
        except RecursionError:
            raise _too_deep(line, Path(path), spec, what, where=f" on line {number}") from None
    return rows


# ---- YAML ----------------------------------------------------------------------------------------------------

MAX_YAML_NODES = 100_000  # values a YAML file may stand for once its aliases are expanded: far beyond any config


class DuplicateKey(yaml.constructor.ConstructorError):
    def __init__(self, key: Any, first_line: int, node: yaml.Node):
        self.key, self.first_line, self.line = key, first_line, node.start_mark.line + 1
        self.lines = f"on line {self.line}" if first_line == self.line else f"on lines {first_line} and {self.line}"
        super().__init__(None, None, f"key {key!r} given twice {self.lines}", node.start_mark)


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml's safe loader, except that a key given twice in one mapping is an error, not the last one winning
    silently. Merge keys (``<<: *base``) are still overridden by the mapping's own keys, as YAML means them."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                    seen.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:  # an unhashable key: the base class refuses it with its own message
                    continue
                if first is not None:
                    raise DuplicateKey(key, first, key_node)
        return super().construct_mapping(node, deep=deep)


def check_expanded_size(data: Any, path: str | Path, limit: int = MAX_YAML_NODES) -> None:
    """YAML aliases share one object, so a few lines can stand for billions of values ("billion laughs"): whatever
    walks or copies them then never ends. The size as expanded is counted once per shared object (linear in the
    file), and a file over ``limit`` values is refused (UnreadableFile) before anything walks it; so is an alias
    inside its own anchor (a cycle)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the objects being counted now: meeting one again is a cycle

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        if id(node) in open_nodes:
            raise UnreadableFile("alias_bomb", "a YAML alias refers to the value that holds it (a cycle)", path=path,
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
        raise UnreadableFile("alias_bomb", f"the file stands for more than {limit:,} values once its YAML aliases "
                             "(*name) are expanded", path=path,
                             fix="write the values out; a config or spec needs no alias bomb")


def read_yaml(path: str | Path, kind: str, *, what: str | None = None) -> Any:
    """The YAML data of the file (yaml's safe loader); every refusal of read_text, invalid YAML, a key given twice
    in one mapping (by key and lines), nesting deeper than the parser follows and alias bombs."""
    return parse_yaml(read_text(path, kind, what=what), path, kind, what=what)


def parse_yaml(text: str, path: str | Path, kind: str, *, what: str | None = None) -> Any:
    """YAML from a text already read (by read_text), refused as read_yaml refuses it."""
    spec = kind_of(kind)
    what = what or spec.name
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKey as exc:
        raise UnreadableFile("duplicate_key", f"key {exc.key!r} is given twice in one mapping ({exc.lines}); "
                             "YAML would keep the last one silently", path=path, field=str(exc.key),
                             fix="keep one of the two lines") from None
    except yaml.YAMLError as exc:
        raise UnreadableFile("not_yaml", f"{what} is not valid YAML: {exc}", path=path, fix=spec.fix) from None
    except (RecursionError, MemoryError):  # yaml's composer recurses once per nesting level
        raise UnreadableFile("too_deep", f"{what} is nested too deeply to read", path=path, fix=spec.fix) from None
    check_expanded_size(data, path)
    return data
