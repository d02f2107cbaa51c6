"""SHA-256 of files and folders, streamed, so that any size is hashed in bounded memory.

A file's digest is what `sha256sum FILE` prints. A folder's digest is the SHA-256 of the
lines `sha256sum` prints for its files, `DIGEST  RELATIVE/PATH\n`, in sorted path order:
from inside the folder, `find . -type f | sed 's|^\\./||' | LC_ALL=C sort | xargs sha256sum
| sha256sum` gives the same digest (UTF-8 paths sort the same as bytes and as code points).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

CHUNK_BYTES = 1 << 20  # 1 MiB reads: memory stays flat whatever the file's size
MAX_FOLDER_FILES = 100_000  # a folder past this is hashed as an archive or a listing instead


@dataclass(frozen=True, kw_only=True)
class FileDigest:
    """One file: its path (relative to the folder hashed, or as given), size and SHA-256."""

    path: str
    bytes: int
    sha256: str


def file_sha256(path: str) -> FileDigest:
    """SHA-256 of one file, read in CHUNK_BYTES pieces (FIPS 180-4; `sha256sum`'s digest).

    Symbolic links are followed: the digest is the content's (a Hugging Face cache's
    snapshot files are links to its blobs). OSError when the file cannot be read.
    """
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return FileDigest(path=path, bytes=size, sha256=digest.hexdigest())


def folder_files(folder: str, *, limit: int = MAX_FOLDER_FILES) -> list[str]:
    """Every regular file under `folder` (links to files included, links to folders not
    followed, so a link cycle cannot loop), as sorted POSIX paths relative to it.

    ValueError naming the folder and the bound when it holds more than `limit` files.
    """
    found: list[str] = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in files:
            full = os.path.join(top, name)
            if os.path.isfile(full):  # a broken link or a socket is not data
                found.append(os.path.relpath(full, folder).replace(os.sep, "/"))
                if len(found) > limit:
                    raise ValueError(
                        f"{folder!r} holds more than {limit:,} files: record an archive "
                        "of it or a listing file instead"
                    )
    return sorted(found)


def listing_sha256(files: list[FileDigest]) -> str:
    """SHA-256 of the lines `sha256sum` prints for `files`, in the order given."""
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.sha256}  {f.path}\n".encode())
    return digest.hexdigest()


def folder_digests(folder: str, *, limit: int = MAX_FOLDER_FILES) -> list[FileDigest]:
    """Each file of `folder` (see `folder_files`) with its size and SHA-256, paths relative."""
    return [
        FileDigest(path=rel, bytes=d.bytes, sha256=d.sha256)
        for rel in folder_files(folder, limit=limit)
        for d in [file_sha256(os.path.join(folder, rel))]
    ]
