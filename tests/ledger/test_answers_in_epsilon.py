"""Refusals and `remaining` speak ε at the ledger's δ next to the native currency (issue 36)."""

from __future__ import annotations

import re

import pytest

import dpledger as dpl
from dpledger import events as ev


@pytest.mark.parametrize("accountant", ["zcdp", "gdp", "rdp"])
def test_a_refusal_states_the_charge_and_the_remainder_in_epsilon(accountant):
    ledger = dpl.Ledger(1.0, 1e-6, accountant=accountant)
    ledger.spend(ev.Gaussian(20.0))  # σ = 20: a small release
    with pytest.raises(dpl.BudgetExceededError) as refused:
        ledger.spend(ev.Gaussian(2.0))
    message = str(refused.value)
    costs, remains = re.findall(r"ε ≈ ([0-9.e+-]+) at δ=1e-06", message)
    # the charge alone, and what remains alone, each in ε at the ledger's δ
    assert float(costs) >= dpl.accountant.epsilon(ev.Gaussian(2.0), 1e-6) * (1 - 1e-6)
    assert 0 < float(remains) <= 1.0
    assert refused.value.remaining.epsilon_at(1e-6) >= float(remains)  # printed rounded down


def test_remaining_prints_epsilon_and_keeps_its_native_amount():
    ledger = dpl.Ledger(1.0, 1e-6, accountant="zcdp")
    text = str(ledger.remaining)
    assert text.startswith("ε ≈ ") and "at δ=1e-06" in text and "(zCDP)" in text
    assert ledger.remaining.native().startswith("ρ=")
    ledger.spend(ev.Gaussian(20.0))  # σ = 20: a small release
    after = float(re.search(r"ε ≈ ([0-9.]+)", str(ledger.remaining)).group(1))
    assert after < float(re.search(r"ε ≈ ([0-9.]+)", text).group(1))


def test_a_basic_ledger_already_speaks_epsilon():
    ledger = dpl.Ledger(1.0, 0.0)
    assert str(ledger.remaining).startswith("(ε=")
