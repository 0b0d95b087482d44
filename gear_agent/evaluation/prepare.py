"""Building (once) and reusing the index a benchmark runs on."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gear_agent.config import GearSettings, GroundingSettings
from gear_agent.embedding.sentence_transformer import canonical_model_name
from gear_agent.indexing import IndexReport, Progress, add_passages, import_openie
from gear_agent.ingest.corpus import read_corpus
from gear_agent.open_index import OpenIndex

EVAL_CACHE = Path(".gear/eval")


def eval_index_dir(
    corpus: Path, openie: Path | None, model: str, cache: Path = EVAL_CACHE,
    ground_openie: bool | None = None,
) -> Path:
    """A cache folder named by the contents of the corpus and the OpenIE file and by the
    model (and whether ungrounded OpenIE triples are left out: ``ground_openie``, the
    setting's default when None), so reruns reuse it. The files' bytes name it, not their
    path or modification time: the same data copied again (a fresh checkout of
    ``../shared``, a CI cache restored) finds the index built before instead of embedding
    everything again."""
    if ground_openie is None:
        ground_openie = GroundingSettings.default_of("ground_openie")
    digest = hashlib.sha256()
    if ground_openie:  # a different set of triples
        digest.update(b"ground_openie")
    for part in (corpus, openie):
        if part is not None:
            digest.update(hashlib.sha256(Path(part).read_bytes()).digest())
    digest.update(canonical_model_name(model).encode())
    return cache / f"{Path(corpus).stem}-{digest.hexdigest()[:12]}"


def prepare_index(
    settings: GearSettings, corpus: Path, openie: Path | None, progress: Progress
) -> tuple[OpenIndex, IndexReport]:
    """Open ``settings.index_dir``, add the corpus and OpenIE triples (no-ops when present)."""
    index = OpenIndex.open(settings, create=True)
    report = IndexReport()
    passages = read_corpus(corpus, settings.chunk_words, settings.chunk_overlap_words,
                           settings.record_max_words)
    add_passages(index.store, passages, report, progress)
    if openie is not None:  # stored triples are no-ops: nothing is embedded twice
        import_openie(index.store, openie, report, progress,
                      drop_ungrounded=settings.ground_openie)
    return index, report
