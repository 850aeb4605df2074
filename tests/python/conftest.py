"""Shared pytest setup: the `gpu` marker (skipped without a GPU), a private
cache directory per test, and `fake_compile`, which stands in for the
frontend and backends so that the runtime's own logic (keys, caches, dumps)
is tested on its own."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped without one)")


def _have_gpu():
    try:
        from ctriton.runtime.driver import driver
        return driver.active.backend == "cuda"
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _have_gpu():
        return
    skip = pytest.mark.skip(reason="no GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CTRITON_CACHE_DIR", str(d))
    monkeypatch.delenv("CTRITON_DUMP", raising=False)
    return d


@pytest.fixture
def fake_compile(monkeypatch):
    """Replaces the frontend and the C pipeline by fakes; returns a list of
    the (kernel name, ttir) each compile produced."""
    import fake_pipeline
    calls = []
    fake_pipeline.install(monkeypatch.setattr, calls)
    return calls
