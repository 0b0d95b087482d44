"""Call a running `gear serve` from Python with LangServe's RemoteRunnable.

    gear serve --index .gear/index          # in another shell
    python examples/remote_client.py "Who is the spouse of the Green performer?"
"""

from __future__ import annotations

import argparse

from langserve import RemoteRunnable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("question")
    parser.add_argument("--url", default="http://127.0.0.1:8000/gear/")
    parser.add_argument("--top-k", type=int, default=None, help="Passages returned (1..50).")
    parser.add_argument("--max-iterations", type=int, default=None, help="Loop iterations (1..8).")
    parser.add_argument("--stream", action="store_true", help="Print each step as it finishes.")
    args = parser.parse_args()

    agent = RemoteRunnable(args.url)
    request = {"question": args.question}
    if args.top_k is not None:
        request["top_k"] = args.top_k
    if args.max_iterations is not None:
        request["max_iterations"] = args.max_iterations

    if args.stream:
        for update in agent.stream(request):  # one {node: changes} dict per finished step
            for node, changes in update.items():
                keys = ", ".join(sorted(changes)) if isinstance(changes, dict) else ""
                print(f"[{node}] {keys}")
        return
    result = agent.invoke(request)
    print("answer:", result["answer"])
    print("stop:", result["stop_reason"], "after", result["iterations"], "iteration(s)")
    print("queries:", *result["queries"], sep="\n  ")
    print("memory:", *(" | ".join(t) for t in result["gist_memory"]), sep="\n  ")
    print("passages:")
    for rank, passage in enumerate(result["passages"], 1):
        print(f"  {rank:2d}. {passage['title']}  ({passage['score']:.4f})")


if __name__ == "__main__":
    main()
