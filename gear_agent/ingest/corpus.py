"""Reading a corpus into passages: HippoRAG JSON, JSON Lines, documents (PDF, HTML, DOCX,
Markdown), text files, or a folder of them."""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError, GearWarning
from gear_agent.ids import passage_id
from gear_agent.ingest.documents import DOCUMENT_SUFFIXES, DocumentReadError, Section, read_document
from gear_agent.text.chunking import chunk_text
from gear_agent.text.json_input import JSONInputError, load_json
from gear_agent.text.token_chunking import Chunker, TokenCounter, WordCounter
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


def canonical_source(path: str | Path) -> str:
    """The one name of a file or folder source, however it was typed: its resolved real path
    (``~`` expanded, symlinks followed, ``.``/``..`` and doubled slashes removed), absolute,
    ``/`` as separator. ``gear index`` stores each file's passages under it, and ``gear
    delete --source``, ``Gear.delete(source=...)`` and ``--prune`` match by it, so
    ``docs/a.txt``, ``./docs//a.txt``, its absolute path and a symlink to it are one source
    from any working folder. A folder's sources are its files'.

    Example:
        >>> import os
        >>> canonical_source("./reports//2024/../2024/q1.json") == os.path.realpath("reports/2024/q1.json")
        True
    """
    return Path(os.path.realpath(os.path.expanduser(str(path)))).as_posix()


def is_path_like(source: str) -> bool:
    """Whether a source a caller names is a file path (canonicalised) rather than an id of
    their own (a URL, ``python``): it exists on disk, or has a path separator and no
    ``scheme://``.

    Example:
        >>> is_path_like("https://example.org/a"), is_path_like("docs/a.txt")
        (False, True)
    """
    if "://" in source:
        return False
    return os.path.exists(os.path.expanduser(source)) or "/" in source or os.sep in source


def legacy_matches(stored: str, source: str) -> bool:
    """Whether a relative ``stored`` source, as ``gear index`` recorded paths before sources
    were canonical (relative to the folder it ran in), names the canonical ``source`` or a
    file under it: a trailing part of the path, whole components only.

    Example:
        >>> legacy_matches("docs/a.txt", "/home/u/proj/docs/a.txt"), legacy_matches("docs/a.txt", "/home/u/proj/docs")
        (True, True)
        >>> legacy_matches("docs/a.txt", "/home/u/mydocs/a.txt")
        False
    """
    if not stored or stored.startswith("/") or "://" in stored:
        return False
    parts = [part for part in stored.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return False
    folder = source.rstrip("/")
    return any(folder.endswith("/" + "/".join(parts[:k])) for k in range(1, len(parts) + 1))


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


def word_chunker(max_words: int = 200, overlap_words: int = 30) -> Chunker:
    """The chunker where the embedder has no tokenizer: ``max_words`` words a chunk, title
    included, ``overlap_words`` shared by the windows of a long paragraph.

    Example:
        >>> word_chunker(200, 30).counter.max_tokens
        200
    """
    return Chunker(WordCounter(max_words), min(overlap_words, max(0, max_words // 2 - 1)))


def make_chunker(counter: TokenCounter | None, max_words: int = 200, overlap_words: int = 30) -> Chunker:
    """The chunker for an embedder: by its tokenizer's ``counter`` when it has one (chunks of
    at most what the encoder reads, title included; windows of a long paragraph overlap by
    the same share as ``overlap_words`` of ``max_words``: 38 tokens of 254 for
    all-MiniLM-L6-v2), else :func:`word_chunker`.

    Example:
        >>> make_chunker(None, 200, 30).counter.name
        'words'
    """
    if counter is None:
        return word_chunker(max_words, overlap_words)
    overlap = round(counter.max_tokens * overlap_words / max_words)
    return Chunker(counter, max(0, min(overlap, counter.max_tokens // 2 - 1)))


def count_cut(passages: Iterable[Passage], chunker: Chunker) -> int:
    """How many ``passages`` are longer (title included) than the chunker's encoder reads.

    Example:
        >>> count_cut([Passage("p-1", "T", "one two three")], word_chunker(3, 0))
        1
    """
    return sum(not chunker.fits(p.text, p.title) for p in passages)


def passages_of_sections(
    title: str, sections: Iterable[Section], source: str, where: str, chunker: Chunker,
) -> Iterator[Passage]:
    """The passages of a document read as sections: each section chunked on its own (no
    chunk crosses two), the document's ``title`` on every chunk, the section's metadata kept.

    Example:
        >>> [p.metadata for p in passages_of_sections("Report", [Section("Intro text.", page=1),
        ...     Section("More text.", page=2)], "r.pdf", "r.pdf", word_chunker())]
        [{'page': 1}, {'page': 2}]
    """
    for section in sections:
        for chunk in chunker.chunks(section.text, title):
            passage = _passage(title, chunk, source, where, section.metadata())
            if passage:
                yield passage


def read_text_file(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30, *,
    chunker: Chunker | None = None,
) -> Iterator[Passage]:
    """One ``.txt``/``.md`` file, chunked (``chunker``, by default :func:`word_chunker` of
    ``max_words``); the title is the file's stem.

    A Markdown file's first ``# heading`` is used as its title when it has one.
    """
    text = _read_text(path)
    title = path.stem.replace("_", " ")
    if path.suffix.lower() == ".md":
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            title, text = lines[0][2:].strip(), "\n".join(lines[1:])
    yield from passages_of_sections(title, [Section(text)], source, str(path),
                                    chunker or word_chunker(max_words, overlap_words))


def folder_files(folder: Path) -> list[Path]:
    """The files under ``folder`` that ``gear index`` reads, in a stable order.

    Raises:
        CorpusFormatError: none.
    """
    readable = (*TEXT_SUFFIXES, *DOCUMENT_SUFFIXES)
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in readable and p.is_file())
    if not files:
        raise CorpusFormatError(f"{folder} holds no .txt, {', '.join(DOCUMENT_SUFFIXES)} files")
    return files


def _file_source(folder: Path, path: Path, source: str | None) -> str:
    """A folder's file's source: its canonical path, or ``source/relative`` when the caller
    names the folder's source."""
    if source is None:
        return canonical_source(path)
    relative = path.relative_to(folder).as_posix()
    return relative if source in ("", ".") else f"{source.rstrip('/')}/{relative}"


# ---- documents (PDF, HTML, DOCX, Markdown): gear_agent.ingest.documents ------------------
# The one call site of the document readers: a file becomes its sections (text, page or
# heading path) and the document's own title; each section is chunked on its own, so no
# chunk crosses a page or a section, and carries the section's metadata.


def read_document_file(
    path: Path, source: str, max_words: int = 200, overlap_words: int = 30, *, skip_unreadable: bool = False,
    chunker: Chunker | None = None,
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
    yield from passages_of_sections(title, document.sections,
                                    source, str(path), chunker or word_chunker(max_words, overlap_words))


# ---- end of documents ------------------------------------------------------------------------


def read_text_folder(
    folder: Path, max_words: int = 200, overlap_words: int = 30, source: str | None = None, *,
    chunker: Chunker | None = None,
) -> Iterator[Passage]:
    """Every ``.txt`` file and document (``.md``, ``.pdf``, ``.html``, ``.docx``: see
    :func:`read_document_file`; one that cannot be read is left out with a warning) under
    ``folder``; each passage's source is the file's :func:`canonical_source` (under
    ``source`` when given: ``source/relative``)."""
    for path in folder_files(folder):
        name = _file_source(folder, path, source)
        if path.suffix.lower() in DOCUMENT_SUFFIXES:
            yield from read_document_file(path, name, max_words, overlap_words, skip_unreadable=True,
                                          chunker=chunker)
        else:
            yield from read_text_file(path, name, max_words, overlap_words, chunker=chunker)


def corpus_sources(path: Path, source: str | None = None) -> list[str]:
    """The sources :func:`read_corpus` gives the files of ``path`` (a folder's every file,
    those that hold no text included), without reading them: what a sync owns.

    Example:
        >>> corpus_sources(Path("notes.json"), source="notes")
        ['notes']
    """
    path = Path(path)
    if path.is_dir():
        return [_file_source(path, p, source) for p in folder_files(path)]
    return [source if source is not None else canonical_source(path)]


def read_corpus(
    path: Path, max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS, source: str | None = None, *,
    chunker: Chunker | None = None,
) -> list[Passage]:
    """Passages from a corpus file or folder, chosen by what ``path`` is.

    Text files are split by ``chunker`` (the encoder's tokens; by default
    :func:`word_chunker` of ``max_words``); JSON/JSONL records stay whole up to
    ``record_max_words`` words (so HippoRAG corpora keep their passages and OpenIE files
    align) and are split into ``max_words`` chunks beyond it. Duplicate passages (same
    title and text) appear once. Each passage's source is ``source`` (a folder's files:
    ``source/`` and their relative path), by default the file's :func:`canonical_source`;
    a record's own ``source`` wins.

    Raises:
        CorpusFormatError: the path is missing, or not a supported format.
    """
    path = Path(path)
    if not path.exists():
        raise CorpusFormatError(f"corpus not found: {path}")
    name = source if source is not None else canonical_source(path)
    if path.is_dir():
        passages = read_text_folder(path, max_words, overlap_words, source, chunker=chunker)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        passages = read_jsonl_corpus(path, name, max_words, overlap_words, record_max_words)
    elif path.suffix.lower() == ".json":
        passages = read_json_corpus(path, name, max_words, overlap_words, record_max_words)
    elif path.suffix.lower() in DOCUMENT_SUFFIXES:
        passages = read_document_file(path, name, max_words, overlap_words, chunker=chunker)
    elif path.suffix.lower() in TEXT_SUFFIXES:
        passages = read_text_file(path, name, max_words, overlap_words, chunker=chunker)
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
