"""pytest plugin (``-p ctriton_upstream_plugin``): resolves ``triton`` to
ctriton before the upstream tests import it, and serves the upstream
snapshot's ``triton/_internal_testing.py`` (test helpers, not part of the
API) as ``triton._internal_testing``.

The snapshot folder comes from $CTRITON_UPSTREAM_DIR (the folder holding
``python/test`` and ``python/triton``)."""
import importlib.util
import os
import sys

import ctriton

ctriton.use_as_triton()


def _load_internal_testing():
    root = os.environ.get("CTRITON_UPSTREAM_DIR")
    if not root:
        raise RuntimeError("CTRITON_UPSTREAM_DIR is not set")
    path = os.path.join(root, "python", "triton", "_internal_testing.py")
    spec = importlib.util.spec_from_file_location("triton._internal_testing", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["triton._internal_testing"] = mod
    spec.loader.exec_module(mod)


_load_internal_testing()


def pytest_configure(config):
    for m in ("interpreter: runs under Triton's interpreter too",
              "cpu: Triton's CPU marker", "forked: run in a subprocess"):
        config.addinivalue_line("markers", m)
