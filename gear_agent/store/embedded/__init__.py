"""The embedded backend, gear-agent's default: one local folder, no server.

The store (:mod:`gear_agent.store.embedded.store`) composes its collections
(:mod:`~gear_agent.store.embedded.collection`, :mod:`~gear_agent.store.embedded.nodes`) over
one SQLite database (:mod:`~gear_agent.store.embedded.db`) and memory-mapped vector files
(:mod:`~gear_agent.store.embedded.vectors`); ``gear check`` (:mod:`~gear_agent.store.embedded.check`),
snapshots (:mod:`~gear_agent.store.embedded.snapshot`) and ``gear migrate``
(:mod:`~gear_agent.store.embedded.legacy`) are its own. Nothing outside :mod:`gear_agent.store`
imports from here: the backend table (:mod:`gear_agent.store.backends`) opens it.
"""
