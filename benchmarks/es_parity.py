"""Parity of the Elasticsearch backend with the embedded index: `gear eval` on both, side by side.

Runs ``gear eval`` twice on the same corpus, questions and OpenIE triples, once on the
embedded index and once on Elasticsearch (the test cluster of ``tests/support/es_cluster.py``,
or ``--url``), every LLM-free retriever by default, and prints one Markdown table with the
difference per row. With ``--replay`` it also runs the LLM rows of the replay guard
(``../shared/data/musique_dev/llm-replay/README.md``) on Elasticsearch.

    python benchmarks/es_parity.py --vectors-from .gear/eval/corpus-c9a6feeec55a --replay

``--vectors-from DIR`` (an embedded eval index of the same corpus, OpenIE file and model,
e.g. the one an earlier ``gear eval`` left in ``.gear/eval``) is copied to ``--work`` and
used as the embedded side, and the Elasticsearch indices are built from its vectors: the
same passages, triples and SiReRAG nodes go through the backend's own write path
(``gear_agent.indexing``, ``build_ablation``) with an embedder that answers each text
with the vector the embedded index holds for it (the same model on the same text), so
nothing is embedded twice; ``gear eval`` then finds everything stored and only embeds the
questions (and the PPR graph's entity names). Without it both sides embed the slice with
the real encoder (over 40 minutes on a loaded 2-core machine).

The indexes are kept under ``--work`` (default /work/scratch-es/parity) so a rerun only
evaluates; ``--fresh`` rebuilds them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

import numpy as np  # noqa: E402
from support import es_cluster  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding import Embedder, embedder_name, make_embedder  # noqa: E402
from gear_agent.embedding.base import NamedEmbedder  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "musique_dev"
LLM_FREE = "bm25,dense,hybrid,bm25+naive_ge,dense+naive_ge,hybrid+naive_ge,ppr,hipporag,hybrid+naive_ge+ppr,sirerag"
REPLAY = "syncge,syncge-ppr,syncge-fused,gear,gear-ppr,gear-fused,hipporag+ner"
REPLAY_ENV = {
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "replay", "GEAR_LLM_MODEL": "recorded",
    "GEAR_LLM_MAX_RETRIES": "0", "GEAR_MAX_ITERATIONS": "3", "GEAR_ANSWER": "true",
}


def gear_eval(data: Path, retrievers: str, env: dict[str, str], out: Path, extra: list[str]) -> dict:
    command = [
        sys.executable, "-m", "gear_agent.cli", "eval",
        "--questions", str(data / "questions.json"), "--corpus", str(data / "corpus.json"),
        "--openie", str(next(data.glob("openie*.json"))), "--retrievers", retrievers,
        "--json", str(out), *extra,
    ]
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        raise SystemExit(f"gear eval failed ({env.get('GEAR_BACKEND')}):\n{tail}")
    return {row["retriever"]: row for row in json.loads(out.read_text())["rows"]}


class StoredVectors(Embedder):
    """Answers each text with the vector an embedded index holds for it; a text it does
    not hold goes to the real model (loaded on first need) and is counted in ``misses``."""

    def __init__(self, settings: GearSettings, table: dict[str, np.ndarray]) -> None:
        self.name = embedder_name(settings)
        self._settings = settings
        self._table = table
        self._model: Embedder | None = None
        self.misses = 0

    @property
    def dimension(self) -> int:
        return len(next(iter(self._table.values())))

    def embed(self, texts) -> np.ndarray:  # type: ignore[no-untyped-def]
        missing = sorted({t for t in texts if t not in self._table})
        if missing:
            if self._model is None:
                self._model = make_embedder(self._settings)
            self._table.update(zip(missing, self._model.embed(missing)))
            self.misses += len(missing)
        return np.stack([self._table[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)


def stored_vectors(index: Path, model: str) -> dict[str, np.ndarray]:
    """Text -> vector of every passage, triple and SiReRAG node of an embedded index."""
    from gear_agent.store import open_store

    settings = GearSettings(backend="embedded", index_dir=index, embedding_model=model)
    table: dict[str, np.ndarray] = {}
    with open_store(settings, NamedEmbedder(embedder_name(settings), 384), create=False) as store:
        nodes = store.nodes
        passages = list(store.passages.iterate())
        table.update(zip((p.content for p in passages), nodes.passage_vectors([p.id for p in passages])))
        triples = list(store.triples.iterate())
        table.update(zip((t.text for t in triples), store.triples.vectors([t.id for t in triples])))
        pool = list(nodes.iterate())
        if pool:
            table.update(zip((n.text for n in pool), nodes.vectors([n.id for n in pool])))
    return table


def build_from_vectors(data: Path, index: Path, es_env: dict[str, str], sirerag: bool) -> int:
    """Build the Elasticsearch indices of ``es_env`` from the embedded ``index``'s vectors
    through the backend's write path, as ``gear eval`` would; returns the texts that had
    to be embedded after all (0 when the embedded index holds everything)."""
    from gear_agent.indexing import IndexReport, add_passages, import_openie
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.sirerag import build_ablation
    from gear_agent.store import open_store

    settings = GearSettings(
        backend="elasticsearch", es_url=es_env["GEAR_ES_URL"], es_index_prefix=es_env["GEAR_ES_INDEX_PREFIX"],
        es_cache_dir=Path(es_env["GEAR_ES_CACHE_DIR"]),
        bm25_tokenizer=es_env.get("GEAR_BM25_TOKENIZER", "standard"),
    )
    embedder = StoredVectors(settings, stored_vectors(index, settings.embedding_model))
    report = IndexReport()
    with open_store(settings, embedder, create=True) as store, store.bulk_load():
        add_passages(store, read_corpus(data / "corpus.json", settings.chunk_words, settings.chunk_overlap_words,
                                        settings.record_max_words), report)
        import_openie(store, next(data.glob("openie*.json")), report, drop_ungrounded=settings.ground_openie)
        if sirerag:
            build_ablation(store, settings)  # its SiReRAG section: the defaults
    return embedder.misses


def recall(row: dict | None) -> str:
    if row is None:
        return "–"
    return " / ".join(f"{row[f'recall@{k}']:.1f}" for k in (5, 10, 15))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--retrievers", default=LLM_FREE)
    parser.add_argument("--url", help="an Elasticsearch cluster to use instead of the test cluster")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--work", type=Path, default=Path("/work/scratch-es/parity"))
    parser.add_argument("--fresh", action="store_true", help="rebuild both indexes")
    parser.add_argument("--replay", action="store_true", help="also the replayed LLM rows on ES")
    parser.add_argument("--replay-only", action="store_true",
                        help="only the replayed LLM rows on ES (no LLM-free rows on either backend)")
    parser.add_argument("--reuse-embedded", action="store_true",
                        help="take the embedded rows from an earlier run's embedded.json")
    parser.add_argument("--vectors-from", type=Path, metavar="DIR",
                        help="an embedded eval index of the same corpus and model: copied as the embedded "
                             "side, and its vectors build the Elasticsearch side (no re-embedding)")
    args = parser.parse_args()
    if args.fresh and args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True, exist_ok=True)
    prefix = f"gear-parity-{args.data.name.replace('_', '-')}"
    common = ["--tokenizer", "standard"]
    if "sirerag" in args.retrievers:
        common += ["--sirerag", "ablation"]
    saved = args.work / "embedded.json"
    if args.vectors_from is not None and not (args.work / "embedded").exists():
        shutil.copytree(args.vectors_from, args.work / "embedded")
    args.replay = args.replay or args.replay_only
    if args.replay_only:
        embedded = {}
    elif args.reuse_embedded and saved.exists():
        embedded = {row["retriever"]: row for row in json.loads(saved.read_text())["rows"]}
    else:
        embedded = gear_eval(args.data, args.retrievers, {"GEAR_BACKEND": "embedded"}, saved,
                             [*common, "--index", str(args.work / "embedded")])
    cluster = None
    url = args.url
    if url is None:
        cluster = es_cluster.start(args.nodes, args.heap, home=args.work / "cluster")
        url = cluster.url
    try:
        es_env = {"GEAR_BACKEND": "elasticsearch", "GEAR_ES_URL": url, "GEAR_ES_INDEX_PREFIX": prefix,
                  "GEAR_ES_CACHE_DIR": str(args.work / "es-cache")}
        if args.vectors_from is not None and not args.replay_only:
            misses = build_from_vectors(args.data, args.work / "embedded", es_env, "sirerag" in args.retrievers)
            print(f"Elasticsearch indices built from the embedded index's vectors ({misses} texts embedded anew)")
        es = {} if args.replay_only else gear_eval(args.data, args.retrievers, es_env, args.work / "elasticsearch.json",
                                                   [*common, "--index", str(args.work / "es-eval")])
        replay = None
        if args.replay:
            # The replay guard's rows were recorded with the `word` tokenizer: their own
            # indices, made with the analyzer that tokenises as it does, and BM25 with exact
            # document lengths (the reader's prompt holds the base ranking, near ties included).
            es_env = {**es_env, "GEAR_ES_INDEX_PREFIX": f"{prefix}-word", "GEAR_BM25_TOKENIZER": "word",
                      "GEAR_ES_EXACT_BM25": "true"}
            if args.vectors_from is not None:
                misses = build_from_vectors(args.data, args.work / "embedded", es_env, False)
                print(f"`word` indices built from the embedded index's vectors ({misses} texts embedded anew)")
            env = {**es_env, **REPLAY_ENV, "GEAR_LLM_CACHE_DIR": str(args.data / "llm-replay" / "cache")}
            replay = gear_eval(args.data, REPLAY, env, args.work / "replay-es.json",
                               ["--tokenizer", "word", "--concurrency", "8", "--index", str(args.work / "es-eval")])
    finally:
        if cluster is not None:
            cluster.close()
    print(f"\n{args.data.name}: {len(embedded)} rows, "
          f"Elasticsearch {cluster.version if cluster else url}\n")
    print("| retriever | embedded R@5 / 10 / 15 | Elasticsearch R@5 / 10 / 15 | Δ R@15 | ms/query embedded / ES |")
    print("|---|---|---|---|---|")
    for name in args.retrievers.split(","):
        a, b = embedded.get(name), es.get(name)
        delta = f"{b['recall@15'] - a['recall@15']:+.1f}" if a and b else "–"
        ms = f"{a['ms_per_query']:.1f} / {b['ms_per_query']:.1f}" if a and b else "–"
        print(f"| {name} | {recall(a)} | {recall(b)} | {delta} | {ms} |")
    if replay is not None:
        print("\nReplayed LLM rows on Elasticsearch:\n")
        print("| retriever | R@5 / 10 / 15 | EM / F1 | failed questions |")
        print("|---|---|---|---|")
        for name, row in replay.items():
            em = f"{row['em']:.1f} / {row['f1']:.1f}" if row.get("em") is not None else "–"
            print(f"| {name} | {recall(row)} | {em} | {row.get('errors', 0)} |")


if __name__ == "__main__":
    main()
