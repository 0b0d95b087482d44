"""Soft clustering of embeddings, as RAPTOR does it (Sarthi et al., 2024, section 3).

Embeddings are reduced in dimension, a Gaussian mixture is fitted with the number of
components that minimises the BIC, and every item joins each cluster whose posterior
probability reaches a threshold (so one item may sit in several clusters) as well as its
most likely one. A cluster larger than ``sirerag_max_cluster_size`` is clustered again on its own.

Reduction is PCA rather than RAPTOR's UMAP: scikit-learn's PCA with the full SVD is exact
and deterministic, and umap-learn would add numba to the install for a step whose role
here is only to make the mixture fit tractable. Both come from scikit-learn (imported when
clustering runs), a well-kept library, rather than hand-made EM.
"""

from __future__ import annotations

import numpy as np

from gear_agent._deprecated import NEXT_REMOVAL, moved_names
from gear_agent.config import SiReRAGSettings

__getattr__ = moved_names(__name__, {"ClusterSettings": ("gear_agent.config", "SiReRAGSettings")},
                          "the clustering knobs are the sirerag_* fields of the SiReRAG section",
                          removed_in=NEXT_REMOVAL)


def _import_sklearn():  # noqa: ANN202 - module objects
    try:
        from sklearn.decomposition import PCA
        from sklearn.mixture import GaussianMixture
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        from gear_agent.errors import GearError

        raise GearError("SiReRAG's clustering needs scikit-learn: pip install 'scikit-learn>=1.3'") from exc
    return PCA, GaussianMixture


def _reduce(vectors: np.ndarray, dim: int) -> np.ndarray:
    PCA, _ = _import_sklearn()
    n, d = vectors.shape
    components = min(dim, d, n - 1)
    if components < 1 or components >= d:
        return vectors.astype(np.float64)
    return PCA(n_components=components, svd_solver="full").fit_transform(vectors.astype(np.float64))


def candidate_sizes(largest: int) -> list[int]:
    """Component counts the BIC search tries: every count to 4, then steps of about 1.4x
    (RAPTOR tries every count to 50; this keeps the search to about a dozen fits).

    Example:
        >>> candidate_sizes(50)
        [1, 2, 3, 4, 5, 7, 10, 14, 20, 28, 39, 50]
    """
    sizes, size = [], 1
    while size < largest:
        sizes.append(size)
        size = size + 1 if size < 5 else max(size + 1, int(round(size * 1.4)))
    return [*sizes, largest] if largest >= 1 else [1]


def _mixture(points: np.ndarray, settings: SiReRAGSettings) -> np.ndarray:
    """Posterior probabilities (items × components) of the BIC-best mixture."""
    _, GaussianMixture = _import_sklearn()
    n = len(points)
    best, best_bic = None, np.inf
    for components in candidate_sizes(min(settings.sirerag_max_clusters, n - 1)):
        model = GaussianMixture(n_components=components, random_state=settings.sirerag_seed, reg_covar=1e-4)
        model.fit(points)
        bic = model.bic(points)
        if bic < best_bic:
            best, best_bic = model, bic
    assert best is not None
    return best.predict_proba(points)


def soft_clusters(vectors: np.ndarray, settings: SiReRAGSettings | None = None) -> list[list[int]]:
    """Clusters of the rows of ``vectors`` (indices, ascending), possibly overlapping.

    Every row is in at least one cluster; clusters are in a fixed order (by their first
    member, then size) and the result is the same for the same input and seed.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(0, 0.01, (5, 8)) + 1, rng.normal(0, 0.01, (5, 8)) - 1
        >>> soft_clusters(np.vstack([a, b]), SiReRAGSettings(sirerag_reduction_dim=2))
        [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    """
    from threadpoolctl import threadpool_limits

    settings = settings or SiReRAGSettings()
    vectors = np.asarray(vectors, dtype=np.float32)
    with threadpool_limits(1):  # small matrices: BLAS threads only contend (5x slower on 2 cores)
        clusters = _cluster(vectors, np.arange(len(vectors)), settings, depth=0)
    unique = {tuple(c) for c in clusters if c}
    return [list(c) for c in sorted(unique, key=lambda c: (c[0], len(c), c))]


def _cluster(vectors: np.ndarray, members: np.ndarray, settings: SiReRAGSettings, depth: int) -> list[list[int]]:
    n = len(members)
    if n <= 2:
        return [sorted(int(m) for m in members)] if n else []
    points = _reduce(vectors[members], settings.sirerag_reduction_dim)
    probabilities = _mixture(points, settings)
    chosen = probabilities >= settings.sirerag_threshold
    chosen[np.arange(n), probabilities.argmax(axis=1)] = True
    found: list[list[int]] = []
    for column in range(chosen.shape[1]):
        local = np.flatnonzero(chosen[:, column])
        if len(local) == 0:
            continue
        cluster = members[local]
        if len(cluster) > settings.sirerag_max_cluster_size and len(cluster) < n and depth < 8:
            found.extend(_cluster(vectors, cluster, settings, depth + 1))
        elif len(cluster) > settings.sirerag_max_cluster_size and len(cluster) == n:
            found.extend(_split(vectors, cluster, settings))  # one component took everything
        else:
            found.append(sorted(int(m) for m in cluster))
    return found


def _split(vectors: np.ndarray, members: np.ndarray, settings: SiReRAGSettings) -> list[list[int]]:
    """Hard split of a cluster the mixture would not divide: chunks of nearby items along
    the first principal direction, each at most ``max_cluster_size``."""
    points = _reduce(vectors[members], 1)[:, 0]
    order = members[np.argsort(points, kind="stable")]
    size = settings.sirerag_max_cluster_size
    return [sorted(int(m) for m in order[i : i + size]) for i in range(0, len(order), size)]
