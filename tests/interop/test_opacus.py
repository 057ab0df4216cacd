"""A real Opacus training run (CPU torch, a few steps) charged step by step to a ledger.

Skipped where Opacus or PyTorch is missing, except under DPLEDGER_REQUIRE_OPACUS=1 (CI),
where that fails. The acceptance check: the run's ε by dpledger (PLD, an upper bound)
lies inside Opacus' own PRV bracket — within its error bound and no larger.
"""

from __future__ import annotations

import warnings

import pytest

from tests.interop._optional import require

torch = require("torch", "opacus")
opacus = require("opacus", "opacus")

import opacus.optimizers.optimizer as dp_optimizer_module  # noqa: E402
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import PRVAccountant  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

import dpledger as dpl  # noqa: E402
from dpledger import events as ev  # noqa: E402
from dpledger.errors import BudgetExceededError, InvalidArgumentError  # noqa: E402
from dpledger.interop import LedgerAccountant  # noqa: E402
from dpledger.interop.opacus import noise_multiplier, poisson_rate, step_event  # noqa: E402

N, BATCH, EPOCHS, DELTA = 200, 20, 2, 1e-5  # 10 steps an epoch at q = 1/10

pytestmark = pytest.mark.filterwarnings(
    "ignore:Secure RNG turned off", "ignore:Full backward hook", "ignore:.*Optimal order"
)


def _setup(seed=0):
    torch.manual_seed(seed)
    features, labels = torch.randn(N, 5), torch.randint(0, 2, (N,))
    dataset = torch.utils.data.TensorDataset(features, labels)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH)
    model = torch.nn.Linear(5, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), loader


def _train(model, optimizer, loader, epochs):
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()


def _step(model, optimizer, loader):
    optimizer.zero_grad()
    x, y = next(iter(loader))
    torch.nn.CrossEntropyLoss()(model(x), y).backward()
    optimizer.step()


@pytest.fixture
def noise_draws(monkeypatch):
    """How many times Opacus drew gradient noise (one call per parameter tensor)."""
    calls = []
    original = dp_optimizer_module._generate_noise

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(dp_optimizer_module, "_generate_noise", counted)
    return calls


def test_training_run_is_charged_and_agrees_with_opacus_prv(noise_draws):
    model, optimizer, loader = _setup()
    ledger = dpl.Ledger(3.0, DELTA)
    accountant = LedgerAccountant(ledger)
    engine = PrivacyEngine()
    model, optimizer, loader = accountant.make_private_with_epsilon(
        engine,
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        epochs=EPOCHS,
        max_grad_norm=1.0,
    )
    assert engine.accountant is accountant and len(loader) == N // BATCH
    assert len(ledger.receipts) == 1  # the planned run, certified before the first step
    _train(model, optimizer, loader, EPOCHS)
    steps = EPOCHS * N // BATCH
    assert len(accountant) == steps and len(ledger.receipts) == 1 + steps
    assert len(noise_draws) == 2 * steps  # weight and bias, once a step
    assert all(r.event == step_event(optimizer.noise_multiplier, 0.1) for r in ledger.receipts[1:])

    epsilon = engine.get_epsilon(DELTA)  # dpledger's PLD, through Opacus' engine
    assert 2.99 < epsilon <= 3.0  # the plan used the whole budget, and no more
    prv = PRVAccountant()
    prv.history = list(accountant.history)
    eps_error = 0.01
    low, estimate, high = prv._get_dprv(
        eps_error=eps_error, delta_error=DELTA / 1000
    ).compute_epsilon(DELTA, DELTA / 1000, eps_error)
    assert epsilon <= high  # no larger than Opacus' PRV upper bound
    assert low <= epsilon and abs(epsilon - estimate) <= eps_error  # within its error bound

    # a step beyond the plan is refused before its noise is drawn, and training stops
    drawn = len(noise_draws)
    with pytest.raises(BudgetExceededError, match="planned"):
        _step(model, optimizer, loader)
    assert len(noise_draws) == drawn and len(ledger.receipts) == 1 + steps
    assert all(p.summed_grad is None for p in optimizer.params)  # the clipped sums discarded


def test_attach_with_a_given_sigma_and_an_open_ended_ledger(noise_draws):
    model, optimizer, loader = _setup(1)
    ledger = dpl.Ledger(3.0, DELTA)  # its Rényi filter fits 5 steps at σ = 1, q = 0.1
    engine = PrivacyEngine()
    engine.accountant = LedgerAccountant(ledger, label="step")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    engine.accountant.attach(optimizer, loader)  # no epochs: each step through the filter
    with pytest.raises(BudgetExceededError):
        _train(model, optimizer, loader, 10)
    taken = len(engine.accountant)
    assert taken == len(ledger.receipts) == 5
    assert len(noise_draws) == 2 * taken  # the refused step drew no noise
    assert engine.get_epsilon(DELTA) <= 3.0  # the filter kept the run in budget


def test_a_share_of_a_shared_ledger(noise_draws):
    model, optimizer, loader = _setup(2)
    ledger = dpl.Ledger(4.0, DELTA, accountant="rdp")  # a shared budget that holds DP-SGD
    ledger.spend(ev.Gaussian(sigma=5.0), label="an earlier query")
    accountant = LedgerAccountant(ledger)
    with pytest.raises(InvalidArgumentError, match="epsilon= and delta="):
        accountant.make_private_with_epsilon(
            PrivacyEngine(),
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            epochs=1,
            max_grad_norm=1.0,
        )
    engine = PrivacyEngine()
    model, optimizer, loader = accountant.make_private_with_epsilon(
        engine,
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        epochs=1,
        max_grad_norm=1.0,
        epsilon=2.0,
        delta=DELTA / 2,
    )
    _train(model, optimizer, loader, 1)
    assert len(ledger.receipts) == 1 + 10 and len(noise_draws) == 2 * 10
    assert engine.get_epsilon(DELTA / 2) <= 2.0  # the run meets its own share


def test_a_run_that_does_not_fit_is_refused_before_any_step():
    model, optimizer, loader = _setup()
    ledger = dpl.Ledger(0.5, DELTA)
    engine = PrivacyEngine()
    engine.accountant = LedgerAccountant(ledger)
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    with pytest.raises(BudgetExceededError):
        engine.accountant.attach(optimizer, loader, epochs=EPOCHS)
    assert ledger.receipts == ()


def test_an_optimizer_that_was_not_attached_is_refused_at_its_first_step(noise_draws):
    model, optimizer, loader = _setup()
    ledger = dpl.Ledger(3.0, DELTA)
    engine = PrivacyEngine()
    engine.accountant = LedgerAccountant(ledger)
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    weight = model._module.weight.detach().clone()
    with pytest.raises(InvalidArgumentError, match="attach"):
        _step(model, optimizer, loader)
    assert ledger.receipts == () and len(engine.accountant) == 0
    assert all(p.grad is None for p in optimizer.params)  # the noisy gradient deleted
    assert torch.equal(model._module.weight, weight)  # and no update made


def test_poisson_sampling_is_required():
    model, optimizer, loader = _setup()
    engine = PrivacyEngine()
    engine.accountant = LedgerAccountant(dpl.Ledger(3.0, DELTA))
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        poisson_sampling=False,
    )
    with pytest.raises(InvalidArgumentError, match="Poisson"):
        engine.accountant.attach(optimizer, loader)
    with pytest.raises(InvalidArgumentError, match="Poisson"):
        LedgerAccountant(dpl.Ledger(3.0, DELTA)).make_private_with_epsilon(
            PrivacyEngine(),
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            epochs=1,
            max_grad_norm=1.0,
            poisson_sampling=False,
        )


def test_replace_one_ledgers_and_missing_ledgers_are_refused():
    with pytest.raises(InvalidArgumentError, match="add/remove"):
        LedgerAccountant(dpl.Ledger(3.0, DELTA, adjacency="replace_one"))
    with pytest.raises(InvalidArgumentError, match="no ledger"):
        LedgerAccountant().step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(InvalidArgumentError, match="make_private"):
        LedgerAccountant(dpl.Ledger(3.0, DELTA)).attach(object(), object())


@pytest.mark.slow
def test_opacus_own_make_private_with_epsilon_uses_dpledger_epsilon():
    # the registry builds a ledger-less LedgerAccountant for Opacus' σ search
    assert (
        get_noise_multiplier(
            target_epsilon=3.0, target_delta=DELTA, sample_rate=0.1, steps=20, accountant="dpledger"
        )
        > 0
    )
    model, optimizer, loader = _setup()
    ledger = dpl.Ledger(3.0, DELTA)
    engine = PrivacyEngine(accountant="dpledger")  # ledger-less: it answers get_epsilon only
    engine.accountant = LedgerAccountant(ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=3.0,
            target_delta=DELTA,
            epochs=EPOCHS,
            max_grad_norm=1.0,
        )
    engine.accountant.attach(optimizer, loader, epochs=EPOCHS)  # planned: refused if over
    _train(model, optimizer, loader, EPOCHS)
    assert engine.get_epsilon(DELTA) <= 3.0


def test_noise_multiplier_is_certified():
    ours = noise_multiplier(epsilon=3.0, delta=DELTA, sample_rate=0.1, steps=20)
    assert dpl.accountant.epsilon(step_event(ours, 0.1) * 20, DELTA) <= 3.0
    assert dpl.accountant.epsilon(step_event(ours * 0.999, 0.1) * 20, DELTA) > 3.0  # the least


@pytest.mark.slow
def test_noise_multiplier_is_below_opacus_prv():
    ours = noise_multiplier(epsilon=3.0, delta=DELTA, sample_rate=0.1, steps=20)
    theirs = get_noise_multiplier(
        target_epsilon=3.0, target_delta=DELTA, sample_rate=0.1, steps=20, accountant="prv"
    )
    assert ours <= theirs  # Opacus' search stops up to 0.01 in ε short of the target


def test_poisson_rate_is_the_probability_torch_keeps_an_example():
    # torch.rand's float32 draws are the multiples k/2²⁴ (k < 2²⁴); Opacus keeps an example
    # when the draw is below the rate, compared in float32: count the k that pass near it
    for q in (0.01, 0.1, 1 / 93, 1 / 3, 0.5, 256 / 60_000):
        k = int(q * 2**24)
        near = torch.arange(k - 3, k + 4, dtype=torch.float64) / 2**24
        passing = k - 3 + int((near.float() < q).sum())
        assert poisson_rate(q) == max(q, passing / 2**24)
    assert step_event(1.0, 0.01) == ev.PoissonSampled(ev.Gaussian(1.0), rate=poisson_rate(0.01))


def test_state_dict_round_trip():
    accountant = LedgerAccountant(dpl.Ledger(3.0, DELTA))
    for _ in range(3):
        accountant.step(noise_multiplier=1.2, sample_rate=0.1)
    state = accountant.state_dict()
    assert state["mechanism"] == "dpledger" and state["history"] == [(1.2, 0.1, 3)]
    restored = LedgerAccountant()
    restored.load_state_dict(state)
    assert len(restored) == 3 and restored.get_epsilon(DELTA) == accountant.get_epsilon(DELTA)
    assert LedgerAccountant().get_epsilon(DELTA) == 0.0
