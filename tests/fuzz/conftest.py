"""The transport regressions use the end-to-end fixtures (a real worker on a real Redis)."""

from tests.e2e.conftest import make_worker, worker

__all__ = ["make_worker", "worker"]
