"""Runs each test's function on every rank count of the engine in use.

Under an MPI launcher (``mpiexec -n 4 python -m pytest``) every process runs the tests and
each test runs once on the MPI engine, over all processes; otherwise each test runs on the
threads engine at 1, 2, 3, 4, 7 and 16 ranks.
"""

import cairn
import pytest

ENGINE = cairn.detect_engine()
THREADS_RANKS = [1, 2, 3, 4, 7, 16]


def pytest_generate_tests(metafunc):
    if "ranks" in metafunc.fixturenames:
        metafunc.parametrize("ranks", THREADS_RANKS if ENGINE == "threads" else [None])


@pytest.fixture
def run(ranks):
    """``run(fn)``: ``fn(world)`` on every rank of this test's run."""
    return lambda fn, **options: cairn.launch(fn, ranks=ranks, **options)


threads_only = pytest.mark.skipif(
    ENGINE != "threads", reason="a raising rank ends an MPI job (tests/exit checks it)")
