"""Time to the first streamed answer word against time to the whole answer.

    python benchmarks/stream_latency.py [--runs 5] [--token-ms 40] [--answer-words 24]

The GEAR agent runs over the demo index (``examples/demo/``, the model-free hashing-384
embedder) with a scripted chat model that writes every reply a word at a time,
``--token-ms`` apart (a stand-in for a model generating ~1000/token-ms tokens a second),
and answers the demo question in ``--answer-words`` words. Three doors are timed from the
moment the question is sent: ``Gear.ask(stream=...)`` (Python), ``POST /gear/stream`` and
the page's ``POST /ui/api/ask/stream`` over loopback HTTP. Each row gives the median over
``--runs`` runs of the time to the first answer word, to the last answer word and to the
end of the run, and the share of the wait that streaming saves before a person reads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.demo_chat import ANSWER, QUESTION, demo_reply  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.web_page import build_demo_index, serving  # noqa: E402

EMBEDDER = "hashing-384"


def answer_of(words: int) -> Callable[[str], str]:
    """The demo replies, with a QA answer of ``words`` words that starts with the real one."""
    long = " ".join([ANSWER] + ["(painter)"] * max(words - 2, 0))

    def reply(prompt: str) -> str:
        text = demo_reply(prompt)
        return text.replace(f'"answer": "{ANSWER}"', f'"answer": "{long}"', 1) if prompt.startswith("You answer") else text

    return reply


def python_door(index: Path, token_s: float, words: int) -> tuple[float, float, float]:
    from gear_agent import Gear

    gear = Gear(index, chat_model=StreamingChatModel(respond=answer_of(words), token_delay_s=token_s),
                embedding_model=EMBEDDER, max_iterations=2, create=False)
    marks: list[float] = []
    start = time.perf_counter()
    gear.ask(QUESTION, stream=lambda _text: marks.append(time.perf_counter() - start))
    end = time.perf_counter() - start
    gear.close()
    return marks[0], marks[-1], end


def http_door(url: str, path: str, body: dict, token_key: str) -> tuple[float, float, float]:
    marks: list[float] = []
    start = time.perf_counter()
    with httpx.stream("POST", url + path, json=body, timeout=120) as response:
        response.raise_for_status()
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                is_token = (event == "token") if token_key == "page" else (
                    isinstance(data, dict) and "answer_token" in data)
                if is_token:
                    marks.append(time.perf_counter() - start)
    return marks[0], marks[-1], time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--token-ms", type=float, default=40.0)
    parser.add_argument("--answer-words", type=int, default=24)
    args = parser.parse_args()
    token_s = args.token_ms / 1000
    with tempfile.TemporaryDirectory(prefix="gear-stream-") as folder:
        index = Path(folder) / "index"
        build_demo_index(index, EMBEDDER)
        rows: dict[str, list[tuple[float, float, float]]] = {}
        for _ in range(args.runs):
            rows.setdefault("Gear.ask(stream=...)", []).append(python_door(index, token_s, args.answer_words))
        model = StreamingChatModel(respond=answer_of(args.answer_words), token_delay_s=token_s)
        with serving(index, EMBEDDER, model=model) as url:
            for _ in range(args.runs):
                rows.setdefault("POST /gear/stream", []).append(
                    http_door(url, "/gear/stream", {"input": {"question": QUESTION}}, "gear"))
                rows.setdefault("POST /ui/api/ask/stream (page)", []).append(
                    http_door(url, "/ui/api/ask/stream", {"question": QUESTION}, "page"))
    print(f"{args.runs} runs each, a word every {args.token_ms:g} ms, a {args.answer_words}-word "
          "answer; medians in seconds from sending the question")
    print("| door | first answer word | last answer word | run ends | first word / run end |")
    print("|---|---|---|---|---|")
    for door, marks in rows.items():
        first, last, end = (statistics.median(m[i] for m in marks) for i in range(3))
        print(f"| {door} | {first:.2f} | {last:.2f} | {end:.2f} | {first / end:.0%} |")


if __name__ == "__main__":
    main()
