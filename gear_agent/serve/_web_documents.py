"""The Documents page's work: add documents (an uploaded file's text or pasted text), list
passages with their source and metadata, say what a deletion would remove before it is
done, delete, and report the index's health and size.

Adding reads the document with the CLI's readers (``.json`` HippoRAG corpus, ``.jsonl``,
``.txt`` chunked, PDF, HTML, DOCX and Markdown by sections), stores and embeds only new passages and, when asked and a chat
model is configured, extracts their triples; progress is reported through a callback as
``(stage, done, total)``, like ``gear index``. Writes run one at a time (a lock), beside
the agent runs reading the same store.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gear_agent.config import GearSettings
from gear_agent.errors import GearError
from gear_agent.indexing import IndexReport, extract_with_llm
from gear_agent.ingest.corpus import read_corpus, read_text_file
from gear_agent.llm.errors import LLMConfigError
from gear_agent.serve.check_process import check_in_child
from gear_agent.sources import delete_passages, sync_passages
from gear_agent.store import Store
from gear_agent.types import Passage

Progress = Callable[[str, int, int], None]

UPLOAD_SUFFIXES = (".pdf", ".html", ".htm", ".docx", ".md", ".markdown", ".txt", ".json", ".jsonl", ".ndjson")
"""The file types an upload may have (the page's file chooser offers the same)."""
MAX_LIST = 200
"""Passages listed per page (the most one request may ask for)."""
MAX_NAME_BYTES = 200
"""The longest upload name (UTF-8 bytes; file systems stop at 255)."""
PREVIEW_CHARS = 240
"""Characters of a passage's text in the list."""
_SAFE_NAME = re.compile(r"[^\w.\- ]+")


class DocumentError(GearError, ValueError):
    """A document the page cannot add or a deletion it cannot do, said in one line."""


class Documents:
    """Adds, lists and deletes passages of one index; owns the write lock.

    Args:
        store: The store of the index the server serves (its embedder embeds new passages).
        settings: The sections it reads: ingest (chunking), LLM (extraction concurrency),
            prompts, grounding, and the backend and index folder ``gear check`` looks at.
        llm: Returns the chat client for extraction, or raises ``LLMConfigError``.
    """

    def __init__(self, store: Store, settings: GearSettings, llm: Callable[[], Any]) -> None:
        self.store, self.settings = store, settings
        self._llm = llm
        self._lock = threading.Lock()
        self._ids_lock = threading.Lock()
        self._ids: tuple[int, list[str]] | None = None

    def chat_client(self) -> Any:
        """The chat client extraction calls.

        Raises:
            DocumentError: No chat model is configured (the message says how to set one).
        """
        try:
            return self._llm()
        except LLMConfigError as exc:
            raise DocumentError(f"cannot extract triples: {exc}") from None

    # ---- reading documents -------------------------------------------------------------
    def read(self, name: str, text: str | bytes, *, title: str | None = None,
             source: str | None = None) -> list[Passage]:
        """The passages of one document: a file's ``name`` and ``text`` (its suffix picks the
        reader: :data:`UPLOAD_SUFFIXES`; a PDF's or DOCX's bytes), or pasted text with a
        ``title`` (then ``name`` is only the source).

        Raises:
            DocumentError: empty text, an unsupported file type, or a file of the wrong shape.
        """
        if not text.strip():
            raise DocumentError("the document is empty: paste some text or choose a file with text in it")
        s = self.settings
        safe = upload_name(name)
        with tempfile.TemporaryDirectory(prefix="gear-upload-") as folder:
            try:
                if title is not None:
                    if isinstance(text, bytes):
                        raise DocumentError("pasted text comes as text: send a file's bytes with its name")
                    path = Path(folder) / "pasted.md"
                    path.write_text(f"# {title.strip() or 'Untitled'}\n{text}", encoding="utf-8")
                    passages = list(read_text_file(path, source or safe, s.chunk_words, s.chunk_overlap_words))
                else:
                    path = Path(folder) / safe
                    if Path(safe).suffix.lower() not in UPLOAD_SUFFIXES:
                        raise DocumentError(f"{safe}: not a file type the page reads; upload one of "
                                            f"{', '.join(UPLOAD_SUFFIXES)}")
                    if isinstance(text, bytes):
                        path.write_bytes(text)
                    else:
                        path.write_text(text, encoding="utf-8")
                    passages = read_corpus(path, s.chunk_words, s.chunk_overlap_words, s.record_max_words,
                                           source=safe)
            except GearError as exc:
                raise DocumentError(str(exc).replace(str(path), safe).replace(folder + "/", "")) from None
        if source is not None and title is None:
            passages = [Passage(p.id, p.title, p.text, source, p.metadata) for p in passages]
        if not passages:
            raise DocumentError(f"{safe} holds no passage text")
        return passages

    # ---- writing --------------------------------------------------------------------------
    def add(self, passages: Sequence[Passage], *, extract: bool, progress: Progress) -> dict[str, Any]:
        """Store and embed the new ``passages``, replacing what their source held before (a
        re-uploaded file replaces its old version: :func:`~gear_agent.sources.sync_passages`);
        with ``extract``, extract their triples with the chat model. Returns what the run did.

        Raises:
            LLMConfigError: ``extract`` and no chat model is configured (before any write).
        """
        llm = self.chat_client() if extract else None
        report = IndexReport()
        passages = list(passages)
        with self._lock:  # the document's source owns its passages: uploading it again replaces it
            sync_passages(self.store, passages, list(dict.fromkeys(p.source for p in passages)), report, progress)
            if llm is not None:
                from gear_agent.prompts import load_prompt

                summary = extract_with_llm(
                    self.store, llm, report, progress,
                    concurrency=self.settings.llm_concurrency,
                    prompt=load_prompt("extraction", self.settings.prompts_dir),
                    ground=self.settings.ground_triples,
                )
                report.warnings.extend(summary.warnings())
        out = {k: v for k, v in asdict(report).items() if k not in ("extraction", "malformed_examples")}
        out["ids"] = [p.id for p in passages]
        return out

    def preview_delete(self, ids: Sequence[str] = (), source: str | None = None) -> dict[str, Any]:
        """What :meth:`delete` with the same arguments would remove, removing nothing (the
        dry run of :meth:`gear_agent.Gear.delete`): the passages (id, title, source) with
        their triple counts, the ids not stored, and what the caller should know.

        Raises:
            DocumentError: neither ids nor a source are given.
        """
        ids, source = self._asked(ids, source)
        result = delete_passages(self.store, ids, source=source, dry_run=True)
        return {
            "passages": [{"id": p.id, "title": p.title, "source": p.source,
                          "triples": result.triples_by_passage.get(p.id, 0)} for p in result.passages],
            "unknown_ids": result.unknown_ids,
            "notes": result.messages(),
        }

    def delete(self, ids: Sequence[str] = (), source: str | None = None) -> dict[str, Any]:
        """Delete passages by id and/or every passage of ``source`` (exact, as
        :meth:`gear_agent.Gear.delete`), with their triples."""
        ids, source = self._asked(ids, source)
        store = self.store
        with self._lock:
            result = delete_passages(store, ids, source=source)
        return {"deleted": result.ids, "unknown_ids": result.unknown_ids, "notes": result.messages(),
                "passages": store.passages.count(), "triples": store.triples.count()}

    @staticmethod
    def _asked(ids: Sequence[str], source: str | None) -> tuple[list[str], str | None]:
        ids = [i for i in (str(x).strip() for x in ids) if i]
        source = (source or "").strip() or None
        if not ids and source is None:
            raise DocumentError("name passage ids or a source to delete")
        return ids, source

    # ---- reading the index ------------------------------------------------------------------
    def listing(self, offset: int = 0, limit: int = MAX_LIST, source: str | None = None) -> dict[str, Any]:
        """A page of at most ``limit`` (≤ :data:`MAX_LIST`) passages in index order from
        ``offset`` (``source``: only that source's); only the page's texts are read."""
        store = self.store
        ids = store.passages.ids_of_source(source) if source else self._all_ids()
        page = ids[offset:offset + max(0, min(limit, MAX_LIST))]
        found = {p.id: p for p in store.passages.get(page)}
        rows = []
        for passage in (found[i] for i in page if i in found):
            text = " ".join(passage.text.split())
            rows.append({"id": passage.id, "title": passage.title, "source": passage.source,
                         "metadata": dict(passage.metadata),
                         "text": text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"})
        return {"passages": rows, "total": len(ids), "offset": offset, "limit": MAX_LIST}

    def health(self) -> dict[str, Any]:
        """``gear check``'s items (run in a child process:
        :mod:`gear_agent.serve.check_process`) and the index's counts and size, on any backend."""
        store, s = self.store, self.settings
        report = check_in_child(s)
        return {
            "backend": s.backend, "passages": store.passages.count(), "triples": store.triples.count(),
            "unextracted": len(store.passages.unextracted()),
            "embedding_model": f"{store.embedding_model} (dimension {store.dimension})",
            **report,
        }

    # ---- the list's ids ------------------------------------------------------------------
    def _all_ids(self) -> list[str]:
        """Every passage id in index order, read once per store generation (a page of the
        list then reads only its own rows)."""
        with self._ids_lock:
            generation = self.store.generation()
            if self._ids is None or self._ids[0] != generation:
                self._ids = (generation, self.store.passages.ids())
            return self._ids[1]


def upload_name(name: str) -> str:
    """The file name an upload is read under: its last path part, with characters other than
    letters, digits, ``.``, ``-``, ``_`` and spaces made ``_``; ``pasted.txt`` when empty.

    Raises:
        DocumentError: a name no file can have here: ``.`` or ``..``, only dots, or longer
            than :data:`MAX_NAME_BYTES` bytes.

    Example:
        >>> upload_name("../notes/a b?.md")
        'a b_.md'
    """
    if "\x00" in name:
        raise DocumentError("the file name holds a NUL character: rename the file")
    safe = _SAFE_NAME.sub("_", Path(name.replace("\\", "/")).name).strip() if name.strip() else ""
    if name.strip() and not safe.strip("."):
        raise DocumentError(f"{name[:60]!r} is not a file name: choose a file with a name")
    if len(safe.encode("utf-8")) > MAX_NAME_BYTES:
        raise DocumentError(f"the file name is {len(safe.encode('utf-8'))} bytes long; the limit is "
                            f"{MAX_NAME_BYTES}: rename the file")
    return safe or "pasted.txt"
