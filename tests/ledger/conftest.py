"""A throwaway PostgreSQL 15 cluster for the team-ledger tests (one per test session).

The cluster is started with the server binaries found on this machine (Debian's
``postgresql-15``: ``/usr/lib/postgresql/*/bin``, or ``DPLEDGER_PG_BIN``), on a private
socket directory and a free port, as the ``postgres`` system user when the tests run as
root (PostgreSQL refuses to run as root). Without binaries or psycopg the tests that need
it are skipped with the reason — unless ``DPLEDGER_REQUIRE_POSTGRES=1`` (CI), where they
fail instead. Torn down at the end of the session.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.ledger._postgres import Cluster, start_cluster


@pytest.fixture(scope="session")
def pg_cluster():
    """The session's cluster (schema installed; users owner, alice, bob, carol, eve)."""
    required = os.environ.get("DPLEDGER_REQUIRE_POSTGRES") == "1"
    cluster, reason = start_cluster()
    if cluster is None:
        if required:
            pytest.fail(f"PostgreSQL is required (DPLEDGER_REQUIRE_POSTGRES=1): {reason}")
        pytest.skip(f"no PostgreSQL for the team-ledger tests: {reason}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Cluster):
    """A function (user, ledger name=fresh) -> URL of a new ledger name in the cluster."""
    name = f"t-{uuid.uuid4().hex[:12]}"

    def url(user: str = "owner", ledger: str | None = None) -> str:
        return pg_cluster.url(user, ledger or name)

    return url
