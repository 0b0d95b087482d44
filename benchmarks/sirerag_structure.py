"""SiReRAG's full build on a real corpus with an extractive stand-in for the LLM.

No LLM runs here, so this measures what does not depend on the model's words: how many
nodes each level of both trees gets from the clustering (PCA + Gaussian mixture, seeded),
how many LLM calls a real build sends and how many prompt tokens they carry (counted with
tiktoken for ``--model``), and how long clustering and embedding take. The stand-in
answers the proposition prompt with the passage's sentences (entities: capitalised
phrases) and the summary prompt with the first sentence of each member, cut to the
summary length, so upper levels see texts of about a real summary's size. Its recall row
is printed for completeness and is NOT the method's quality.

    OMP_NUM_THREADS=1 python benchmarks/sirerag_structure.py \\
        --corpus ../shared/data/musique_dev/corpus.json \\
        --questions ../shared/data/musique_dev/questions.json
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NAME = re.compile(r"[A-Z][\w'-]*(?: (?:of |the |de )?[A-Z][\w'-]*)*")


def stand_in_reply(prompt: str) -> str:
    """The extractive stand-in's reply to a SiReRAG prompt."""
    import json

    if prompt.startswith("You break a passage into propositions"):
        body = prompt.rsplit("Passage: ", 1)[1].rsplit("\nReply:", 1)[0]
        sentences = [s.strip() for s in _SENTENCE.split(body) if s.strip()]
        return json.dumps({"propositions": [{"text": s, "entities": _NAME.findall(s)} for s in sentences]})
    words = int(re.search(r"at most (\d+) words", prompt).group(1))  # type: ignore[union-attr]
    blocks = re.findall(r"^\[\d+\] (.+)$", prompt, re.M)
    firsts = " ".join(_SENTENCE.split(b.strip())[0] for b in blocks)
    return " ".join(firsts.split()[:words])


class StandInChat(BaseChatModel):
    """A LangChain chat model answering with :func:`stand_in_reply`."""

    model_name: str = "gpt-4o-mini"

    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=stand_in_reply(text)))])


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "| " + " | ".join(str(x).rjust(w) for x, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--questions", type=Path)
    parser.add_argument("--index", type=Path, default=ROOT / ".gear/bench/sirerag-structure")
    parser.add_argument("--embedding-model", default=None, help="default: GEAR_EMBEDDING_MODEL")
    parser.add_argument("--model", default="gpt-4o-mini", help="tokenizer the prompt tokens are counted with")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from gear_agent.config import settings_from
    from gear_agent.embedding import make_embedder
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.llm.client import LLMClient
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.sirerag import SiReRAGRetriever, SiReRAGSettings
    from gear_agent.sirerag.build import build_full
    from gear_agent.store.embedded.store import EmbeddedStore

    overrides = {"index_dir": args.index} | ({"embedding_model": args.embedding_model} if args.embedding_model else {})
    gear = settings_from(**overrides)
    embedder = make_embedder(gear)
    store = EmbeddedStore.open(args.index, embedder)
    started = time.perf_counter()
    store.passages.add(read_corpus(args.corpus, gear.chunk_words, gear.chunk_overlap_words))
    embed_s = time.perf_counter() - started
    llm = LLMClient(StandInChat(model_name=args.model))
    started = time.perf_counter()
    report = build_full(store, llm, SiReRAGSettings(sirerag_seed=args.seed))
    build_s = time.perf_counter() - started
    print(f"passages: {store.passages.count():,} (embedded in {embed_s:.0f} s); build {build_s:.0f} s "
          f"(clustering, embedding nodes; the stand-in answers at once)")
    print(table(["tree", "kind", "level", "nodes"], report.level_rows()))
    usage = llm.usage.as_dict()["by_node"]
    rows = [(node, f"{u['calls']:,}", f"{u['input']:,}") for node, u in sorted(usage.items())]
    rows.append(("total", f"{sum(u['calls'] for u in usage.values()):,}",
                 f"{sum(u['input'] for u in usage.values()):,}"))
    print(table(["LLM calls of", "calls", f"prompt tokens ({args.model})"], rows))
    print(f"propositions {report.propositions:,}; clusters summarised {report.clusters_summarised:,}")
    if args.questions:
        from gear_agent.evaluation.dataset import load_questions
        from gear_agent.evaluation.runner import evaluate

        row = evaluate(SiReRAGRetriever(store, QueryEncoder(embedder), "sirerag (stand-in summaries)"),
                       load_questions(args.questions))
        print(table(["retriever", *(f"R@{k}" for k in row.recall)],
                    [(row.retriever, *(f"{100 * v:.1f}" for v in row.recall.values()))]))


if __name__ == "__main__":
    main()
