"""A published-table file read as text, or refused by name (exit 2): a folder, a device such as /dev/zero, a
pipe, a file over MAX_BYTES, binary bytes or bytes that are not UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolbench_adapter.errors import InputError

MAX_BYTES = 256 << 20  # a paper's table is kilobytes; the largest we measured (make bench-published) 50 MB
FIX = "pass the Markdown / LaTeX / CSV / TSV text file that holds the table"


def read_table_text(path: Path, forms: str) -> str:
    """The file's text, newlines as text mode reads them; InputError naming the file otherwise."""
    try:  # O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError("published table not found", path=path, fix=f"pass a {forms}") from None
    except OSError as exc:
        raise InputError(f"cannot open the published table: {exc.strerror}", path=path, fix=FIX) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        raise InputError(f"not a regular file ({what}): no published table to read", path=path, fix=FIX)
    with os.fdopen(fd, "rb") as file:
        data = _read_bounded(file, min(info.st_size, MAX_BYTES) + 1)
    if len(data) > MAX_BYTES or info.st_size > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES >> 20} MiB, more than any published table", path=path,
                         fix="pass the file of the table itself, or cut it to the tables you compare")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"binary file (a NUL byte at offset {nul}): not a table printed as text", path=path, fix=FIX)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start} cannot be read)", path=path,
                         fix=f"{FIX}, saved as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text's universal newlines


def _read_bounded(file, first: int) -> bytes:
    """At most MAX_BYTES + 1 bytes: the size on disk first (a buffer that size, not the cap's), then more in
    chunks only while the file keeps giving (it grew, or its size said less than there is)."""
    data = file.read(first)
    if len(data) < first:
        return data  # the whole file
    chunks, total = [data], len(data)
    while total <= MAX_BYTES:
        chunk = file.read(min(1 << 20, MAX_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
