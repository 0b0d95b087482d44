"""Derived files name the exact state they reflect: the index's id, the generation and a
digest of the commit (a generation alone repeats after a rollback, and restarts in a new
index made in the same folder). The two silent cases of issue 35, answered now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import run_cli
from support.fakes import make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.changes import Stamp
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.db import COUNTER_FILE, DB_FILE
from gear_agent.store.embedded.store import EmbeddedStore

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
HASHING = {"GEAR_EMBEDDING_MODEL": "hashing-384"}

ALPHA = make_passage("Alpha", "Alpha Base lies near Kestrel Lake.")
BRAVO = make_passage("Bravo", "Bravo Station lies near Kestrel Lake.")
CHARLIE = make_passage("Charlie", "Charlie Camp lies near Osprey Ridge.")
DELTA = make_passage("Delta", "Delta Post lies near Osprey Ridge.")
TRIPLES = {
    ALPHA.id: make_triple(ALPHA, "Alpha Base", "near", "Kestrel Lake"),
    BRAVO.id: make_triple(BRAVO, "Bravo Station", "near", "Kestrel Lake"),
    CHARLIE.id: make_triple(CHARLIE, "Charlie Camp", "near", "Osprey Ridge"),
    DELTA.id: make_triple(DELTA, "Delta Post", "near", "Osprey Ridge"),
}


def _open(path: Path) -> EmbeddedStore:
    return EmbeddedStore.open(path, HashingEmbedder(384))


def _write(store: EmbeddedStore, passage) -> None:  # noqa: ANN001 - a Passage
    store.passages.add([passage])
    store.triples.add([TRIPLES[passage.id]])


def _ppr(store: EmbeddedStore) -> PPRRetriever:
    return PPRRetriever(store, QueryEncoder(store.embedder), GearSettings())


def _graph_item(root: Path):  # noqa: ANN202 - a CheckItem
    return next(i for i in check_index(root).items if i.name == "PPR graph cache")


def _files(folder: Path, names: list[str], into: Path) -> None:
    for name in names:
        shutil.copy2(folder / name, into / name)


def test_an_index_gets_an_id_at_creation_and_each_commit_a_distinct_stamp(tmp_path: Path) -> None:
    store = _open(tmp_path / "ix")
    _write(store, ALPHA)
    first = store.stamp()
    assert len(first.index_id) == 32 and first.generation == store.generation() and first.commit
    _write(store, BRAVO)
    assert store.stamp().index_id == first.index_id and store.stamp().commit != first.commit
    assert store.knows(first) and not store.knows(Stamp(first.index_id, first.generation, "0" * 16))
    assert not store.knows(Stamp("another-index", first.generation, first.commit))
    store.close()
    other = _open(tmp_path / "other")
    _write(other, ALPHA)
    assert other.stamp().index_id != first.index_id
    other.close()


def test_an_index_made_before_ids_gets_one_at_its_next_open_for_writing(tmp_path: Path) -> None:
    store = _open(tmp_path / "ix")
    _write(store, ALPHA)
    store.db.run("DELETE FROM meta WHERE key = 'index_id'")  # as an index made before ids
    generation = store.generation()
    store.close()
    store = _open(tmp_path / "ix")
    assert len(store.index_id()) == 32 and store.generation() == generation  # no commit made for it
    store.close()


def test_a_rolled_back_index_that_counts_a_generation_again_never_reuses_the_graph(tmp_path: Path) -> None:
    """Issue 35: roll ``index.sqlite`` and ``index.generation`` back, then write other
    passages up to the same generation: ``ppr`` reused the saved graph (missing the new
    passage) and ``gear check`` said "ok"."""
    root, backup = tmp_path / "ix", tmp_path / "backup"
    backup.mkdir()
    store = _open(root)
    for passage in (ALPHA, BRAVO):
        _write(store, passage)
    store.maintain()  # folds the WAL into index.sqlite
    store.close()
    _files(root, [DB_FILE, COUNTER_FILE], backup)

    store = _open(root)
    _write(store, CHARLIE)
    ranked = _ppr(store).retrieve("Which camp lies near Osprey Ridge?", 2)
    assert ranked[0].id == CHARLIE.id
    saved = json.loads((root / "ppr-graph.json").read_text(encoding="utf-8"))["stamp"]
    store.close()

    for name in (DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm"):
        (root / name).unlink(missing_ok=True)
    _files(backup, [DB_FILE, COUNTER_FILE], root)  # the older copy
    store = _open(root)
    _write(store, DELTA)
    assert store.stamp().generation == saved["generation"]  # the same number, another commit
    assert store.stamp() != Stamp.from_dict(saved)

    item = _graph_item(root)
    assert not item.ok and item.derived
    assert "ppr-graph.json" in item.detail and "rolled back" in item.detail

    retriever = _ppr(store)
    ranked = retriever.retrieve("Which post lies near Osprey Ridge?", 2)
    assert ranked[0].id == DELTA.id and CHARLIE.id not in {p.id for p in ranked}
    assert retriever.graph.passage_vertex(CHARLIE.id) is None
    assert retriever.graph.stamp == store.stamp()
    store.close()
    assert _graph_item(root).ok  # the query saved the graph of this commit


def _second_corpus(folder: Path) -> tuple[Path, Path]:
    """The demo corpus with every passage's text changed (other passage ids, the same phrases)."""
    folder.mkdir()
    corpus = json.loads((DEMO / "corpus.json").read_text(encoding="utf-8"))
    openie = json.loads((DEMO / "openie.json").read_text(encoding="utf-8"))
    for doc in [*corpus, *openie["docs"]]:
        doc["text"] += " (second edition)"
    (folder / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (folder / "openie.json").write_text(json.dumps(openie), encoding="utf-8")
    return folder / "corpus.json", folder / "openie.json"


def test_a_new_index_in_the_folder_of_an_old_graph_answers_from_its_own_corpus(tmp_path: Path) -> None:
    """Issue 35: delete an index's database files, index another corpus into the same
    folder with the old ``ppr-graph.*`` left there: ``gear search --retriever ppr`` printed
    nothing and exited 0."""
    index, old = tmp_path / "index", tmp_path / "old-graph"
    built = run_cli("index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"),
                    "--index", str(index), env=HASHING)
    assert built.exit_code == 0, built.output
    first = run_cli("search", "Kestrel Observatory", "--retriever", "ppr", "--index", str(index), env=HASHING)
    assert first.exit_code == 0 and "Kestrel Observatory" in first.output
    graph_files = sorted(p.name for p in index.glob("ppr-graph.*"))
    assert "ppr-graph.json" in graph_files
    old.mkdir()
    _files(index, graph_files, old)
    for path in index.iterdir():
        if path.name not in graph_files:
            path.unlink()

    corpus, openie = _second_corpus(tmp_path / "second")
    built = run_cli("index", str(corpus), "--openie", str(openie), "--index", str(index), env=HASHING)
    assert built.exit_code == 0, built.output
    _files(old, graph_files, index)  # the old graph's files, as the folder held them

    item = _graph_item(index)
    assert not item.ok and "ppr-graph.json reflects another index" in item.detail
    checked = run_cli("check", "--index", str(index), env=HASHING)
    assert checked.exit_code == 1 and "PPR graph cache" in checked.output and "stale" in checked.output

    answer = run_cli("search", "Kestrel Observatory", "--retriever", "ppr", "--index", str(index), env=HASHING)
    assert answer.exit_code == 0, answer.output
    assert "Kestrel Observatory" in answer.output and "second edition" in answer.output

    _files(old, graph_files, index)
    repaired = run_cli("check", "--repair", "--index", str(index), env=HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt the PPR graph cache" in repaired.output and _graph_item(index).ok


def test_a_graph_appends_a_delta_only_to_the_save_it_made(tmp_path: Path) -> None:
    """Two processes caching one index's graph: a delta of one graph appended to the other's
    base would number its vertices wrongly; the save finds the manifest is not its own and
    writes a base."""
    from gear_agent.expansion.ppr_graph import PPRGraph

    store = _open(tmp_path / "ix")
    for passage in (ALPHA, BRAVO):
        _write(store, passage)
    path = tmp_path / "ix" / "ppr-graph.npz"
    ours = PPRGraph.build(store, store.embedder)
    theirs = PPRGraph.build(store, store.embedder)
    _write(store, CHARLIE)
    ours.update(store)
    ours.save(path)
    theirs.save(path)  # still at the commit before CHARLIE: another process's save
    _write(store, DELTA)
    ours.update(store)
    ours.save(path)
    loaded = PPRGraph.load(path, store.embedder)
    assert loaded.stamp == store.stamp() == ours.stamp
    assert loaded.node_names() == ours.node_names()
    assert loaded.passage_vertex(CHARLIE.id) is not None and loaded.passage_vertex(DELTA.id) is not None
    store.close()


def test_gear_index_ends_with_the_graph_of_its_last_commit_saved(tmp_path: Path) -> None:
    """The write path builds what the default retriever needs: the first `ppr` query loads
    the graph `gear index` saved, and neither rebuilds nor saves it again."""
    index = tmp_path / "index"
    built = run_cli("index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"),
                    "--index", str(index), env=HASHING)
    assert built.exit_code == 0, built.output
    assert "time: PPR graph" in built.output
    manifest = (index / "ppr-graph.json").read_text(encoding="utf-8")
    store = _open(index)
    assert Stamp.from_dict(json.loads(manifest)["stamp"]) == store.stamp()
    store.close()
    assert _graph_item(index).ok
    answer = run_cli("search", "Kestrel Observatory", "--retriever", "ppr", "--index", str(index), env=HASHING)
    assert answer.exit_code == 0 and "Kestrel Observatory" in answer.output
    assert (index / "ppr-graph.json").read_text(encoding="utf-8") == manifest  # loaded, not saved again


def test_a_process_that_builds_the_graph_answers_from_the_copy_it_saved(tmp_path: Path, monkeypatch) -> None:
    """The build's objects are freed: a graph built from scratch and saved is read back
    from its files, as a process that loads it would hold it (issue 35: the building
    process held more memory and answered slower than a loading one)."""
    from gear_agent.expansion import ppr_graph

    store = _open(tmp_path / "ix")
    for passage in (ALPHA, BRAVO, CHARLIE):
        _write(store, passage)
    loads = []
    real_load = ppr_graph.PPRGraph.load.__func__

    def counting_load(cls, *args, **kwargs):  # noqa: ANN001, ANN202 - PPRGraph.load's own
        loads.append(args[0])
        return real_load(cls, *args, **kwargs)

    monkeypatch.setattr(ppr_graph.PPRGraph, "load", classmethod(counting_load))
    path = tmp_path / "ix" / "ppr-graph.npz"
    graph = ppr_graph.load_or_build(store, store.embedder, 0.8, path)
    assert loads == [path] and graph.stamp == store.stamp() and not graph.unsaved
    _write(store, DELTA)
    updated = ppr_graph.load_or_build(store, store.embedder, 0.8, path, graph=graph)
    assert updated is graph and loads == [path]  # an update in place: nothing read back
    assert graph.passage_vertex(DELTA.id) is not None
    assert ppr_graph.prepare_cache(store, store.embedder, 0.8) is not None and loads == [path, path]
    store.close()
