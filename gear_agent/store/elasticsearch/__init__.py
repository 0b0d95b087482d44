"""The Elasticsearch backend: passages, triples, SiReRAG nodes and the change feed as indices
of an Elasticsearch 8 cluster (``GEAR_BACKEND=elasticsearch``).

The store (:mod:`gear_agent.store.elasticsearch.store`) composes its collections over one
connection (:mod:`~gear_agent.store.elasticsearch.client`); requests are built in
:mod:`~gear_agent.store.elasticsearch.queries`, the mappings in
:mod:`~gear_agent.store.elasticsearch.mappings`. The ``elasticsearch`` package is imported
only when this backend is opened (the backend table, :mod:`gear_agent.store.backends`).
"""
