"""One planning path: every estimator, descriptive query, quantile and capeFM charges
through :meth:`Ledger.reserve` and its :class:`Reservation` (docs/architecture.md).

Every ``Ledger.spend`` and ``Ledger.plan`` a fit makes is counted, with whether it was
made from inside a reservation (its ``open`` or one of its releases); none may come from
anywhere else, and at least one reservation is made per fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import algorithms as alg
from dpledger.algorithms.cape import CapeFM
from dpledger.ledger import Ledger, Reservation
from tests._data import contract_data
from tests.algorithms.test_estimator_contract import CLASSIFIERS, ESTIMATORS, OVERSPEND

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture
def calls(monkeypatch):
    """Counts of reservations, and of spends/plans with whether a reservation made them."""
    log = {"reserve": 0, "charges": []}
    depth = [0]

    def inside(name):
        original = getattr(Reservation, name)

        def wrapped(self, *args, **kwargs):
            depth[0] += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                depth[0] -= 1

        monkeypatch.setattr(Reservation, name, wrapped)

    for name in ("_open_now", "_charge_and_draw"):
        inside(name)
    for name in ("spend", "plan"):
        original = getattr(Ledger, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            log["charges"].append((_name, depth[0] > 0))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Ledger, name, counted)
    reserve = Ledger.reserve

    def reserved(self, *args, **kwargs):
        log["reserve"] += 1
        return reserve(self, *args, **kwargs)

    monkeypatch.setattr(Ledger, "reserve", reserved)
    return log


def _through_the_path(log):
    assert log["reserve"] >= 1
    assert log["charges"], "nothing was charged"
    outside = [name for name, inside in log["charges"] if not inside]
    assert outside == [], f"charged outside a reservation: {outside}"


def _data(name):
    return contract_data(name in CLASSIFIERS, 200)


@pytest.mark.parametrize("shared", [False, True], ids=["own", "shared"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_charges_through_the_planning_path(name, shared, calls):
    kwargs = {"epsilon": 1.0, "delta": 1e-6, "rng": 0}
    if shared or name in OVERSPEND:
        kwargs["ledger"] = dpl.Ledger(20.0 if name in OVERSPEND else 5.0, 1e-5)
    ESTIMATORS[name](**kwargs).fit(*_data(name))
    _through_the_path(calls)


def test_the_scaler_and_capefm_charge_through_the_planning_path(calls):
    X, y = _data("ADASSP")
    alg.PrivateStandardScaler(
        epsilon=1.0, delta=1e-6, bounds=(-1, 1), adjacency="add_remove", rng=0
    ).fit(X)
    _through_the_path(calls)
    calls["charges"].clear()
    cape = CapeFM(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0, adjacency="add_remove", rng=0)
    cape.fit([(X[:100], y[:100]), (X[100:], y[100:])])
    _through_the_path(calls)


@pytest.mark.parametrize("target", [{"share": 0.2}, {"epsilon": 0.2, "delta": 1e-7}])
def test_every_descriptive_query_charges_through_the_planning_path(target, calls):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.uniform(17, 90, 500), "sex": rng.choice(["F", "M"], 500)})
    ledger = dpl.Ledger(5.0, 1e-5)
    queries = [
        lambda: alg.count(frame, ledger=ledger, rng=1, **target),
        lambda: alg.sum(frame["age"], bounds=(0, 100), ledger=ledger, rng=2, **target),
        lambda: alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, rng=3, **target),
        lambda: alg.variance(frame["age"], bounds=(17, 90), ledger=ledger, rng=4, **target),
        lambda: alg.histogram(frame["sex"], categories=["F", "M"], ledger=ledger, rng=5, **target),
    ]
    for query in queries:
        before = len(calls["charges"])
        query()
        assert len(calls["charges"]) > before
    _through_the_path(calls)


@pytest.mark.parametrize("mechanism", ["kng", "exponential"])
def test_quantile_charges_through_the_planning_path(mechanism, calls):
    data = np.random.default_rng(0).uniform(0, 100, 300)
    ledger = dpl.Ledger(2.0, 0.0)
    alg.quantile(
        data, [0.25, 0.5], ledger=ledger, bounds=(0, 100), share=0.5, rng=1, mechanism=mechanism
    )
    _through_the_path(calls)
    assert [kind for kind, _ in calls["charges"]] == ["spend", "spend"]


def test_the_check_fails_on_a_charge_outside_the_path(calls):
    """The counter sees a spend made directly on the ledger (the test can fail)."""
    ledger = dpl.Ledger(1.0, 0.0)
    ledger.spend(epsilon=0.1)
    with pytest.raises(AssertionError, match="charged outside a reservation"):
        calls["reserve"] += 1
        _through_the_path(calls)
