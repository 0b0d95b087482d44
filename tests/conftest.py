"""Fixtures shared by all tests."""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property and fuzz tests draw the same examples on every run (a seed derived from each
# test), so a run that passes keeps passing and CI never fails on a new random draw.
# `GEAR_HYPOTHESIS_PROFILE=explore` draws fresh random examples on each run, to look for
# new failures (fix the bug, then pin the failing example with @example).
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("GEAR_HYPOTHESIS_PROFILE", "repeatable"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "musique_dev"


HOTPOTQA = SHARED.parent / "hotpotqa_dev"


@pytest.fixture
def shared_data() -> Path:
    """The MuSiQue slice in ../shared (skipped with the reason when it is absent)."""
    if not (SHARED / "corpus.json").is_file():
        pytest.skip(f"benchmark data not found at {SHARED} (../shared is absent)")
    return SHARED


@pytest.fixture
def hotpotqa_data() -> Path:
    """The HotpotQA slice in ../shared with its recorded extraction replies (skipped with
    the reason when it is absent)."""
    for part in ("corpus.json", "openie_capable-model.json", "extraction-replay/cache"):
        if not (HOTPOTQA / part).exists():
            pytest.skip(f"benchmark data not found at {HOTPOTQA / part} (../shared is absent)")
    return HOTPOTQA


@pytest.fixture(scope="session")
def es_cluster_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A live Elasticsearch 8 cluster's URL, for the session (use ``es_url`` in tests).

    ``GEAR_ES_URL`` set: that cluster is used as it is. Otherwise the test cluster of
    ``support.es_cluster`` is started once per session (3 nodes in one JVM, built by Maven
    from Maven Central) and stopped at the end. Where Java 17 or Maven is missing the test
    skips with that reason, unless ``GEAR_ES_REQUIRED=1`` (CI), where it fails.
    """
    external = os.environ.get("GEAR_ES_URL")
    if external:
        yield external
        return
    from support import es_cluster

    try:
        cluster = es_cluster.start()
    except es_cluster.ClusterUnavailable as err:
        if os.environ.get("GEAR_ES_REQUIRED") == "1":
            pytest.fail(f"GEAR_ES_REQUIRED=1 but no test cluster can start: {err}")
        pytest.skip(str(err))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    try:
        yield cluster.url
    finally:
        rss = cluster.rss_bytes() / 2**20
        cluster.close()
        if reporter is not None:  # the figures the README quotes, printed by every run
            # output capture is still on while session fixtures are torn down: step past it
            capture = request.config.pluginmanager.get_plugin("capturemanager")
            with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                reporter.write_line(
                    f"Elasticsearch test cluster {cluster.version}: {cluster.nodes} nodes green in "
                    f"{cluster.startup_seconds:.1f} s, JVM RSS {rss:.0f} MiB at the end of the session"
                )


@pytest.fixture
def es_url(es_cluster_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The live cluster's URL, set as ``GEAR_ES_URL`` for this test only."""
    monkeypatch.setenv("GEAR_ES_URL", es_cluster_url)
    return es_cluster_url
