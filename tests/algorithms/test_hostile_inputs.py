"""Hostile arguments to the algorithms: a named dpledger error, never a raw exception or hang."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpledger as dpl
from dpledger.algorithms import (
    ADASSP,
    FMLogisticRegression,
    NoisyGD,
    PrivateIRLS,
    PrivateStandardScaler,
    quantile,
)
from dpledger.algorithms.polynomial import M, PolynomialLoss
from dpledger.errors import DPLedgerError

warnings.filterwarnings("ignore", message="quantile")

X = np.random.default_rng(0).normal(size=(50, 2)) / 3
Y = np.clip(X @ [0.3, 0.2], -1, 1)
BASE = dict(epsilon=1.0, delta=1e-6, x_bound=1.0, adjacency="replace_one", rng=0)

CASES = [
    ("ledger is not a Ledger", lambda: ADASSP(**BASE, y_bound=1.0, ledger=-1).fit(X, Y)),
    ("ledger a string", lambda: FMLogisticRegression(**BASE, ledger="a").fit(X, (Y > 0) * 1.0)),
    ("steps 10**400", lambda: NoisyGD(**BASE, y_bound=1.0, steps=10**400).fit(X, Y)),
    ("steps 10**18 (no hang)", lambda: NoisyGD(**BASE, y_bound=1.0, steps=10**18).fit(X, Y)),
    ("iterations 10**400", lambda: PrivateIRLS(**BASE, y_bound=1.0, iterations=10**400).fit(X, Y)),
    (
        "quantile data 10**400",
        lambda: quantile(10**400, 0.5, ledger=dpl.Ledger(1.0, 0.0), bounds=(0, 1), epsilon=1.0),
    ),
    (
        "quantile data text",
        lambda: quantile("a", 0.5, ledger=dpl.Ledger(1.0, 0.0), bounds=(0, 1), epsilon=1.0),
    ),
    (
        "scaler bounds 10**400",
        lambda: PrivateStandardScaler(
            epsilon=1.0, delta=1e-6, bounds=(0, 10**400), adjacency="add_remove"
        ).fit(X),
    ),
    ("loss expression None", lambda: PolynomialLoss(None)),
    ("loss labels None", lambda: PolynomialLoss(M**2, labels=(0, None))),
    ("loss point None", lambda: PolynomialLoss(M**2, point=None)),
]


@pytest.mark.parametrize(("case", "call"), CASES, ids=[c for c, _ in CASES])
def test_hostile_arguments_get_a_named_error(case, call):
    with pytest.raises(DPLedgerError):
        call()
