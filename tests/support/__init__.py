"""The one home of test support; nothing here is imported by ``gear_agent``.

* :mod:`support.fakes`: the test doubles — one scripted chat model
  (``ScriptedChatModel``, ``scripted``), one in-memory store (``FakeStore``), a counting
  wrapper of the package's model-free ``HashingEmbedder``, and ``client`` (retries
  without sleeping);
* :mod:`support.tiny_corpus`: the 2-hop Rainbow Bridge corpus and its index, settings
  and runtime;
* :mod:`support.agent_faults`, :mod:`support.fault_server`, :mod:`support.demo_chat`:
  a fault-injecting OpenAI-compatible endpoint and the replies it plays;
* :mod:`support.local_llm`: a real local LLM server; :mod:`support.crash_trials`: kill tests.

``tests/`` is on ``sys.path`` under pytest (rootdir ``conftest.py``, no ``__init__.py`` in
``tests/``), so tests import ``from support.fakes import ...``; no test edits ``sys.path``.
"""
