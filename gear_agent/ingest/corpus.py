"""Reading a corpus into passages: HippoRAG JSON, JSON Lines, documents (PDF, HTML, DOCX,
Markdown), text files, or a folder of them."""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError, GearWarning
from gear_agent.ids import passage_id
from gear_agent.ingest.documents import DOCUMENT_SUFFIXES, DocumentReadError, read_document
from gear_agent.text.chunking import chunk_text
from gear_agent.text.json_input import JSONInputError, load_json
from gear_agent.types import Passage

TEXT_SUFFIXES = (".txt", ".md")
MAX_INPUT_BYTES = 1 << 30
"""Largest input file read whole (1 GiB): a corpus or OpenIE file past it, or one that never
ends (a path to ``/dev/urandom``), is refused in one line instead of filling the memory."""


class CorpusFormatError(GearError, ValueError):
    """A corpus file is missing, unreadable or not in a supported format; says which."""


TEXT_KEYS = ("text", "paragraph_text", "passage", "contents", "page_content")
"""Record keys read as the passage text, the first present one winning."""


def _passage(
    title: object, text: object, source: str, where: str, metadata: dict[str, Any] | None = None
) -> Passage | None:
    if not isinstance(text, str):
        raise CorpusFormatError(f"{where}: 'text' must be a string, got {type(text).__name__}")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise CorpusFormatError(f"{where}: 'title' must be a string, got {type(title).__name__}")
    if not text.strip():
        return None
    metadata = metadata or {}
    if metadata:
        _check_metadata(metadata, where)
    return Passage(passage_id(title, text), title.strip(), text.strip(), source, metadata)


def _check_metadata(metadata: dict[str, Any], where: str) -> None:
    """Refuse metadata the index cannot store as JSON (NaN, infinity, objects that are not
    JSON values), before anything is written."""
    try:
        json.dumps(metadata, allow_nan=False)
    except ValueError as exc:
        raise CorpusFormatError(f"{where}: a metadata value is NaN or infinite, which is not JSON ({exc})") from None
    except TypeError as exc:
        raise CorpusFormatError(f"{where}: a metadata value is not a JSON value ({exc})") from None


def source_name(path: str | Path) -> str:
    """How ``gear index`` records the source of a corpus path, and how ``gear delete
    --source`` reads one: the path normalised (``./a//b.json`` is ``a/b.json``), relative to
    the working folder when it lies under it, else absolute; ``/`` as separator.

    Example:
        >>> source_name("./reports//2024/q1.json")
        'reports/2024/q1.json'
    """
    text = os.path.normpath(os.path.expanduser(str(path)))
    if os.path.isabs(text):
        try:
            relative = os.path.relpath(text, os.getcwd())
        except ValueError:  # another drive
            relative = text
        if not relative.startswith(".."):
            text = relative
    return text.replace(os.sep, "/")


def _record_text(record: dict, where: str) -> object:
    for key in TEXT_KEYS:
        if key in record:
            return record[key]
    raise CorpusFormatError(f"{where}: no 'text' field (keys: {sorted(record)[:8]})")


def passage_from_record(record: object, where: str, default_source: str) -> Passage | None:
    """A passage from one corpus record: ``title``, the text (:data:`TEXT_KEYS`), an optional
    string ``source`` (else ``default_source``); every other key is kept as metadata.

    Returns None for a record whose text is empty.

    Raises:
        CorpusFormatError: not an object, no text, or a text or title that is not a string.

    Example:
        >>> passage_from_record({"title": "Bled", "text": "A town.", "year": 2020}, "x", "c.json").metadata
        {'year': 2020}
    """
    if not isinstance(record, dict):
        raise CorpusFormatError(f"{where}: expected an object, got {type(record).__name__}")
    text_key = next((key for key in TEXT_KEYS if key in record), None)
    text = _record_text(record, where)
    source = record.get("source")
    metadata = {
        str(key): value for key, value in record.items()
        if key not in ("title", text_key) and not (key == "source" and isinstance(source, str))
    }
    source = source if isinstance(source, str) and source.strip() else default_source
    return _passage(record.get("title", ""), text, source, where, metadata)


def read_limited(path: Path, what: str = "corpus", limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (:data:`MAX_INPUT_BYTES`).

    Raises:
        CorpusFormatError: missing, not a regular file (a device, a pipe), or larger than
            the limit (one line, naming the file).
    """
    limit = MAX_INPUT_BYTES if limit is None else limit
    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise CorpusFormatError(f"{what} {path} is not a regular file (a device, pipe or socket)")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CorpusFormatError(f"{what} {path} cannot be read ({exc.strerror})") from None
    if len(data) > limit:
        raise CorpusFormatError(f"{what} {path} is larger than {limit / (1 << 30):.0f} GiB, the most read "
                                "at once; split it into several files")
    return data


def _read_text(path: Path) -> str:
    data = read_limited(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(
            f"{path} is not UTF-8 text (byte {exc.start}): convert it, e.g. `iconv -t utf-8`"
        ) from exc


def _json(data: str | bytes, where: str) -> object:
    """``data`` parsed (:func:`~gear_agent.text.json_input.load_json`), any failure a
    one-line :class:`CorpusFormatError`."""
    try:
        return load_json(data, where)
    except JSONInputError as exc:
        raise CorpusFormatError(str(exc)) from None


def load_json_file(path: Path, what: str) -> object:
    """The parsed content of a UTF-8 JSON file.

    Raises:
        CorpusFormatError: the file is missing, not UTF-8, not JSON, nested too deep or
            with a number too long to read; names ``what`` it is.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusFormatError(f"{what} not found: {path}")
    return _json(read_limited(path, what), str(path))


RECORD_MAX_WORDS = 1000
"""Default ``record_max_words``: records longer than this are split into chunks."""


def split_long(
    passage: Passage, record: dict[str, Any], where: str, default_source: str,
    max_words: int, overlap_words: int, record_max_words: int,
) -> list[Passage]:
    """``passage`` whole when it has at most ``record_max_words`` words, else its chunks of
    ``max_words`` (like a text file's: title and metadata kept, one id per chunk).

    Example:
        >>> long = passage_from_record({"title": "T", "text": "word " * 30}, "x", "c.json")
        >>> len(split_long(long, {"title": "T"}, "x", "c.json", 20, 0, 25))
        2
    """
    if len(passage.text.split()) <= record_max_words:
        return [passage]
    chunks = chunk_text(passage.text, max_words, overlap_words)
    return [p for chunk in chunks
            if (p := passage_from_record({**record, "text": chunk}, where, default_source))]


def read_json_corpus(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS,
) -> Iterator[Passage]:
    """HippoRAG's corpus format: a JSON list of ``{"title", "text"}`` objects; one longer
    than ``record_max_words`` words is split into ``max_words`` chunks."""
    data = _json(read_limited(path), str(path))
    if isinstance(data, dict) and "docs" in data:
        raise CorpusFormatError(
            f"{path} looks like OpenIE output ({{'docs': ...}}), not a corpus: pass it with --openie"
        )
    if not isinstance(data, list):
        raise CorpusFormatError(
            f"{path}: expected a JSON list of {{'title', 'text'}} objects, got {type(data).__name__}"
        )
    for number, record in enumerate(data):
        where = f"{path}[{number}]"
        passage = passage_from_record(record, where, source)
        if passage:
            yield from split_long(passage, record, where, source, max_words, overlap_words,
                                  record_max_words)


def read_jsonl_corpus(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS,
) -> Iterator[Passage]:
    """One JSON object per line, each with ``text`` and optionally ``title``; one longer
    than ``record_max_words`` words is split into ``max_words`` chunks."""
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        record = _json(line, where)
        passage = passage_from_record(record, where, source)
        if passage:
            yield from split_long(passage, record, where, source, max_words, overlap_words,
                                  record_max_words)


def read_text_file(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30
) -> Iterator[Passage]:
    """One ``.txt``/``.md`` file, chunked; the title is the file's stem.

    A Markdown file's first ``# heading`` is used as its title when it has one.
    """
    text = _read_text(path)
    title = path.stem.replace("_", " ")
    if path.suffix.lower() == ".md":
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            title, text = lines[0][2:].strip(), "\n".join(lines[1:])
    for chunk in chunk_text(text, max_words, overlap_words):
        passage = _passage(title, chunk, source, str(path))
        if passage:
            yield passage


# ---- documents (PDF, HTML, DOCX, Markdown): gear_agent.ingest.documents ------------------
# The one call site of the document readers: a file becomes its sections (text, page or
# heading path) and the document's own title; each section is chunked on its own, so no
# chunk crosses a page or a section, and carries the section's metadata.


def read_document_file(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30, *, skip_unreadable: bool = False,
) -> Iterator[Passage]:
    """One PDF, HTML, DOCX or Markdown file (:data:`DOCUMENT_SUFFIXES`), chunked section by
    section; the title is the document's own, else the file's stem; each passage's
    metadata holds its ``page`` (PDF) or ``section`` (heading path).

    Pages left out (no text layer) are reported with a :class:`GearWarning`; with
    ``skip_unreadable`` (a folder), a file that cannot be read is too, and gives nothing.

    Raises:
        CorpusFormatError: the file cannot be read (password, no text layer, damaged, a
            missing reader library), one line.
    """
    try:
        document = read_document(read_limited(path), path.suffix, str(path))
    except DocumentReadError as exc:
        if not skip_unreadable:
            raise CorpusFormatError(str(exc)) from None
        warnings.warn(f"left out: {exc}", GearWarning, stacklevel=2)
        return
    for note in document.notes:
        warnings.warn(note, GearWarning, stacklevel=2)
    title = document.title or path.stem.replace("_", " ")
    for section in document.sections:
        for chunk in chunk_text(section.text, max_words, overlap_words):
            passage = _passage(title, chunk, source, str(path), section.metadata())
            if passage:
                yield passage


# ---- end of documents ------------------------------------------------------------------------


def read_text_folder(
    folder: Path, max_words: int = 200, overlap_words: int = 30, source: str | None = None,
) -> Iterator[Passage]:
    """Every ``.txt`` file and document (``.md``, ``.pdf``, ``.html``, ``.docx``: see
    :func:`read_document_file`; one that cannot be read is left out with a warning) under
    ``folder``; each passage's source is the path relative to the folder (under ``source``
    when given: ``source/relative``)."""
    documents = DOCUMENT_SUFFIXES
    files = sorted(p for p in folder.rglob("*")
                   if p.suffix.lower() in (*TEXT_SUFFIXES, *documents) and p.is_file())
    if not files:
        raise CorpusFormatError(f"{folder} holds no .txt, {', '.join(documents)} files")
    for path in files:
        relative = path.relative_to(folder).as_posix()
        name = relative if source in (None, "", ".") else f"{source.rstrip('/')}/{relative}"
        if path.suffix.lower() in documents:
            yield from read_document_file(path, name, max_words, overlap_words, skip_unreadable=True)
        else:
            yield from read_text_file(path, name, max_words, overlap_words)


def read_corpus(
    path: Path, max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS, source: str | None = None,
) -> list[Passage]:
    """Passages from a corpus file or folder, chosen by what ``path`` is.

    Text files are split into chunks of ``max_words``; JSON/JSONL records stay whole up to
    ``record_max_words`` words (so HippoRAG corpora keep their passages and OpenIE files
    align) and are split like text files beyond it. Duplicate passages (same title and
    text) appear once. Each passage's source is ``source`` (a folder's files: ``source/``
    and their relative path), by default the file's name; a record's own ``source`` wins.
    ``gear index`` passes :func:`source_name` of the path it was given.

    Raises:
        CorpusFormatError: the path is missing, or not a supported format.
    """
    path = Path(path)
    if not path.exists():
        raise CorpusFormatError(f"corpus not found: {path}")
    name = source if source is not None else path.name
    if path.is_dir():
        passages = read_text_folder(path, max_words, overlap_words, source)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        passages = read_jsonl_corpus(path, name, max_words, overlap_words, record_max_words)
    elif path.suffix.lower() == ".json":
        passages = read_json_corpus(path, name, max_words, overlap_words, record_max_words)
    elif path.suffix.lower() in DOCUMENT_SUFFIXES:
        passages = read_document_file(path, name, max_words, overlap_words)
    elif path.suffix.lower() in TEXT_SUFFIXES:
        passages = read_text_file(path, name, max_words, overlap_words)
    else:
        raise CorpusFormatError(
            f"{path}: unsupported corpus format; use .json (HippoRAG), .jsonl, a document "
            f"({', '.join(DOCUMENT_SUFFIXES)}), .txt, or a folder of them"
        )
    unique: dict[str, Passage] = {}
    for passage in passages:
        unique.setdefault(passage.id, passage)
    if not unique:
        raise CorpusFormatError(
            f"{path} holds no passages (empty, or only empty texts): nothing to index"
        )
    return list(unique.values())
