"""Test support that talks over real sockets: a local LLM server and a fault-injecting endpoint.

``tests/`` is on ``sys.path`` under pytest (``tests/conftest.py`` puts it there), so tests
import these as ``from support.fault_server import ...`` and
``from support.local_llm import ...``. Nothing here is imported by ``gear_agent``.
"""
