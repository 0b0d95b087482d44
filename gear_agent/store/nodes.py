"""The node collection of a store: SiReRAG tree nodes beside passages and triples.

Keeping nodes is an optional capability: a backend that keeps them implements the
:class:`HasNodes` protocol (a ``nodes`` collection, a :class:`NodeStore`, beside
``passages`` and ``triples``), and :func:`gear_agent.store.backends.node_store_of` is how
callers ask for it, with a one-line error naming a backend that does when this one does
not. Nodes are dense-only (the paper ranks its pool by
embedding similarity): no BM25 postings, no ANN.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from gear_agent.store.base import StoreError
from gear_agent.types import AddResult, Hit, Node


class NodesNotSupportedError(StoreError):
    """The configured backend does not store SiReRAG nodes; the message names one that does."""


class NodeStore(ABC):
    """SiReRAG nodes with their vectors and their provenance (node → passages).

    Every node names the passages under it; a node whose passages are all deleted is
    never returned by :meth:`passages_of`. Ids are content hashes, so adding a node already
    stored is a no-op.
    """

    @abstractmethod
    def add(self, nodes: Sequence[Node]) -> AddResult:
        """Store and embed the nodes not yet stored (one atomic commit).

        Raises:
            StoreError: a node names a passage that is not stored.
        """

    @abstractmethod
    def remove(self, ids: Sequence[str]) -> list[str]:
        """Delete nodes by id; returns the ids deleted."""

    @abstractmethod
    def clear(self) -> int:
        """Delete every node; returns how many there were."""

    @abstractmethod
    def count(self) -> int:
        """How many nodes are stored."""

    @abstractmethod
    def levels(self) -> dict[tuple[str, str, int], int]:
        """Node counts by (tree, kind, level)."""

    @abstractmethod
    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """Top ``k`` nodes by cosine similarity with a normalised query vector."""

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[Node]:
        """Nodes by id, in the order asked; unknown ids are left out."""

    @abstractmethod
    def passages_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """Provenance: each known node id → the ids of its stored passages, in order."""

    @abstractmethod
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings of the nodes, one row per id, in the order asked."""

    @abstractmethod
    def passage_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings of passages (the similarity tree's leaves), in the order asked."""

    @abstractmethod
    def iterate(self) -> Iterator[Node]:
        """Every stored node, in the order stored."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """A value the SiReRAG builder recorded beside its nodes (None when unset)."""

    @abstractmethod
    def set_meta(self, values: Mapping[str, str]) -> None:
        """Record values beside the nodes (one commit)."""

    @abstractmethod
    def meta_items(self, prefix: str) -> dict[str, str]:
        """Every recorded value whose key starts with ``prefix``."""


@runtime_checkable
class HasNodes(Protocol):
    """A backend that keeps SiReRAG nodes beside its passages and triples."""

    nodes: NodeStore
    """The node collection of this index."""
