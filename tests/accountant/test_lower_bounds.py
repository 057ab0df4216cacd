"""Issue #32: the audit's certified lower bounds are privacy mathematics, in
``dpledger.accountant.lower_bounds``; the audit translates declarations and judges claims
in separate modules; the Wishart δ has one home; every audit exception is in
``dpledger.errors``; the accountant imports nothing above it."""

from __future__ import annotations

import ast
import math
import warnings
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger
from dpledger import accountant
from dpledger import events as ev
from dpledger.accountant import lower_bounds as lb
from dpledger.errors import (
    DPLedgerError,
    InvalidArgumentError,
    PipelineError,
    UnsupportedReleaseError,
)

PACKAGE = Path(dpledger.__file__).parent
SUBPACKAGES = ("accountant", "algorithms", "audit", "calibrate", "ledger", "mechanisms")


# ------------------------------------------------------------------------ Wishart δ
@pytest.mark.parametrize("epsilon", [0.0, 1e-300, 1e-12, 0.5, 1.0, 30.0, 800.0, math.inf])
def test_wishart_delta_is_one_minus_exp_rounded_up(epsilon):
    value = lb.wishart_delta(epsilon)
    with mpmath.workdps(50):
        exact = -mpmath.expm1(-mpmath.mpf(epsilon))
        assert mpmath.mpf(value) >= exact
    assert value <= 1.0
    # one step up from the nearest float at most
    assert value <= math.nextafter(math.nextafter(float(exact), math.inf), math.inf)


def test_the_wishart_mechanism_charges_the_one_wishart_delta():
    from dpledger.mechanisms import Wishart

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no exact sampler: warned, not refused
        mechanism = Wishart(epsilon=0.5, trace_sensitivity=0.01, dimension=3)
    assert mechanism.event == ev.ApproxDP(0.0, lb.wishart_delta(0.5))


def test_wishart_lower_bound_is_infinite_exactly_below_the_threshold():
    total = Fraction(1, 2) + Fraction(1, 2)  # two unsampled releases of ε = 0.5
    threshold = -math.expm1(-1.0)
    assert lb.wishart_epsilon_lower(total, 1e-5) == math.inf
    assert lb.wishart_epsilon_lower(total, math.nextafter(threshold, 0.0) * (1 - 1e-12)) == (
        math.inf
    )
    assert lb.wishart_epsilon_lower(total, math.nextafter(threshold, 1.0)) is None
    assert lb.wishart_epsilon_lower(Fraction(0), 0.0) is None


def test_a_declared_wishart_release_is_refuted_by_the_moved_bound():
    from dpledger.audit import check_claim

    report = check_claim(
        {
            "claim": {"epsilon": 1.0, "delta": 0.0, "adjacency": "add_remove", "notion": "pure_dp"},
            "release": [{"mechanism": "wishart", "epsilon": 1.0}],
        }
    )
    assert report.verdict == "violated"
    assert report.epsilon_lower == math.inf


# ------------------------------------------------------------------------ stand-ins
@pytest.mark.parametrize("rho", [1e-300, 1e-6, 0.1, 0.5, 7.0, 1e150, 1e308])
def test_zcdp_stand_in_satisfies_the_declaration(rho):
    stand_in = lb.attained_stand_in(ev.ZCDP(rho=rho))
    assert type(stand_in) is ev.Gaussian
    mu = Fraction(stand_in.sensitivity) / Fraction(stand_in.sigma)
    assert mu * mu / 2 <= Fraction(rho)


@pytest.mark.parametrize(("mu", "tau"), [(0.1, 0.3), (0.1, 10.0), (1e-300, 1.0), (1e308, 1.0)])
def test_mcdp_stand_in_satisfies_the_declaration(mu, tau):
    stand_in = lb.attained_stand_in(ev.MCDP(mu=mu, tau=tau))
    assert type(stand_in) is ev.Gaussian
    m = Fraction(stand_in.sensitivity) / Fraction(stand_in.sigma)
    assert m * m / 2 <= Fraction(mu) and m <= Fraction(tau)


@pytest.mark.parametrize(
    "event",
    [
        ev.BoundedRange(1.0),
        ev.ZCDP(rho=0.1, xi=0.1),
        ev.Gaussian(1.0) + ev.BoundedRange(1.0),
        ev.BoundedRange(1.0) * 3,
        ev.PoissonSampled(ev.BoundedRange(1.0), 0.1),
        ev.SampledWithoutReplacement(ev.BoundedRange(1.0), 10, 100),
    ],
    ids=repr,
)
def test_releases_without_an_attained_worst_case_certify_nothing(event):
    assert lb.attained_stand_in(event) is None
    assert lb.epsilon_lower(event, 1e-5) is None
    assert lb.epsilon_lower(event, 0.0) is None
    assert lb.zcdp_rho_lower(event) is None
    assert lb.mcdp_lower(event) is None


def test_every_release_type_has_a_stand_in_rule_and_unknown_ones_certify_nothing():
    import dataclasses
    import inspect

    releases = {
        obj
        for obj in vars(ev).values()
        if inspect.isclass(obj) and issubclass(obj, ev.Event) and obj is not ev.Event
    }
    assert set(lb._STAND_INS) == releases

    @dataclasses.dataclass(frozen=True, repr=False)
    class Unknown(ev.Event):
        value: float = 1.0

    assert lb.attained_stand_in(Unknown()) is None
    assert lb.attained_stand_in(ev.Gaussian(1.0) + Unknown()) is None


def test_stand_ins_keep_the_structure_around_them():
    gaussian = ev.Gaussian(sigma=1.0, sensitivity=1.0)
    assert lb.attained_stand_in(ev.PoissonSampled(ev.ZCDP(0.5), 0.1)) == ev.PoissonSampled(
        gaussian, 0.1
    )
    assert lb.attained_stand_in(ev.ZCDP(0.5) * 4) == ev.Repeated(gaussian, 4)
    laplace = ev.Laplace(2.0)
    assert lb.attained_stand_in(laplace) is laplace  # noise releases stand for themselves
    assert lb.attained_gaussian_mu_squared(ev.ZCDP(0.5) * 4 + ev.Gaussian(2.0)) == Fraction(17, 4)


# ------------------------------------------------------------------------ lower ≤ upper
@settings(max_examples=30, deadline=None)
@given(
    sigmas=st.lists(st.floats(0.3, 30.0), min_size=1, max_size=3),
    counts=st.lists(st.integers(1, 50), min_size=3, max_size=3),
    delta=st.sampled_from([1e-10, 1e-5, 1e-2, 0.3]),
    alpha=st.floats(1.01, 64.0),
)
def test_gaussian_lower_bounds_never_exceed_the_accountants(sigmas, counts, delta, alpha):
    event = ev.Composed(tuple(ev.Gaussian(s) * k for s, k in zip(sigmas, counts, strict=False)))
    lower = lb.epsilon_lower(event, delta)
    assert lower is not None
    assert lower <= accountant.epsilon(event, delta)
    rho = accountant.ZCDPAccountant.summarize(event).rho
    mu = accountant.GDPAccountant.summarize(event).mu
    assert lb.zcdp_rho_lower(event) <= rho
    assert lb.gdp_mu_lower(event) <= mu
    assert lb.rdp_epsilon_lower(event, alpha) <= accountant.RDPAccountant.summarize(event).curve(
        alpha
    )
    mcdp = accountant.MCDPAccountant.summarize(event)
    pair = lb.mcdp_lower(event)
    assert pair is not None and pair[0] <= mcdp.mu and pair[1] <= mcdp.tau
    # and they are tight: the Gaussian attains them
    assert lb.zcdp_rho_lower(event) == pytest.approx(rho, rel=1e-12)
    assert lb.gdp_mu_lower(event) == pytest.approx(mu, rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(
    epsilons=st.lists(st.floats(0.01, 3.0), min_size=1, max_size=3),
    rate=st.floats(1e-4, 1.0),
)
def test_pure_lower_bounds_never_exceed_the_accountants(epsilons, rate):
    event = ev.Composed(
        (*(ev.RandomizedResponse(e) for e in epsilons), ev.PoissonSampled(ev.PureDP(1.0), rate))
    )
    lower = lb.pure_epsilon_lower(event)
    assert lower is not None
    assert lower == lb.epsilon_lower(event, 0.0)
    assert lower <= accountant.epsilon(event, 0.0)


def test_pure_lower_bound_values():
    assert lb.pure_epsilon_lower(ev.Laplace(scale=2.0) * 3 + ev.PureDP(0.25)) == 1.75
    assert lb.pure_epsilon_lower(ev.ApproxDP(0.5, 1e-9)) == math.inf
    assert lb.pure_epsilon_lower(ev.Gaussian(1.0)) == math.inf
    assert lb.pure_epsilon_lower(ev.DiscreteLaplace(2.0, 0.5)) == 0.0  # no integer shift
    assert lb.attained_pure_epsilon(ev.BoundedRange(1.0)) is None


def test_gaussian_lower_bound_at_zero_and_at_the_cap():
    assert lb.gaussian_epsilon_lower(Fraction(0), 1e-5) == 0.0
    assert lb.gaussian_epsilon_lower(Fraction(1, 10**6), 0.3) == 0.0  # already (0, 0.3)-DP
    huge = lb.gaussian_epsilon_lower(Fraction(10**20), 1e-5)
    assert math.isfinite(huge) and huge > 1e11  # capped at μ = 10⁶: still a lower bound


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: lb.gaussian_epsilon_lower(Fraction(-1), 0.1), "mu_squared"),
        (lambda: lb.gaussian_epsilon_lower(Fraction(1), 1.0), "delta"),
        (lambda: lb.epsilon_lower(ev.Gaussian(1.0), -0.1), "delta"),
        (lambda: lb.wishart_delta(-1.0), "epsilon"),
        (lambda: lb.wishart_epsilon_lower(Fraction(1), float("nan")), "delta"),
        (lambda: lb.rdp_epsilon_lower(ev.Gaussian(1.0), -2.0), "alpha"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, name):
    with pytest.raises(InvalidArgumentError, match=name):
        call()


# ------------------------------------------------------------------------ structure
def test_audit_names_stay_importable():
    from dpledger import audit
    from dpledger.audit import check, pipeline

    assert audit.AuditReport is check.AuditReport
    assert audit.check_claim is check.check_claim
    assert audit.VERDICTS is check.VERDICTS
    assert audit.PipelineError is pipeline.PipelineError is PipelineError
    assert issubclass(PipelineError, DPLedgerError) and issubclass(PipelineError, ValueError)
    assert issubclass(UnsupportedReleaseError, DPLedgerError)


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (PACKAGE / folder).rglob("*.py"))


def test_every_audit_exception_is_defined_in_errors():
    for path in _sources("audit"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not any(b.endswith(("Error", "Exception")) for b in bases), (
                    f"{path.name}: {node.name} belongs in dpledger/errors.py"
                )


def _dpledger_imports(path: Path) -> list[tuple[str, list[tuple[str, str]], int]]:
    """(module, [(imported name, local name)], line) of every ``dpledger`` import."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpledger"):
            names = [(a.name, a.asname or a.name) for a in node.names]
            found.append((node.module or "", names, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dpledger"):
                    found.append((alias.name, [], node.lineno))
    return found


def test_the_accountant_imports_nothing_above_it():
    for path in _sources("accountant"):
        for module, names, line in _dpledger_imports(path):
            targets = [module] + [f"{module}.{n}" for n, _ in names if module == "dpledger"]
            for target in targets:
                parts = target.split(".")
                assert len(parts) < 2 or parts[1] not in set(SUBPACKAGES) - {"accountant"}, (
                    f"{path.relative_to(PACKAGE)}:{line} imports {target}"
                )


def _private_imports_across_packages(path: Path, root: Path = PACKAGE) -> list[str]:
    """Private names (or modules) of another dpledger subpackage that ``path`` uses.

    The shared helpers of dpledger itself (``dpledger._numerics``, ...) are not another
    package's; a package's own private modules are its own business.
    """
    own = path.relative_to(root).parts[0]
    bad = []
    bound: set[str] = set()  # local names of another subpackage's modules and objects
    for module, names, line in _dpledger_imports(path):
        parts = module.split(".")
        if module == "dpledger":
            bound.update(local for name, local in names if name in SUBPACKAGES and name != own)
            continue
        if parts[1].startswith("_") or parts[1] == own:
            continue
        if any(part.startswith("_") for part in parts[2:]):
            bad.append(f"{line}: {module}")
        bad.extend(f"{line}: {module}.{name}" for name, _ in names if name.startswith("_"))
        bound.update(local for _, local in names)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return bad


@pytest.mark.parametrize(
    "path",
    [
        *_sources("audit"),
        PACKAGE / "accountant" / "lower_bounds.py",
        PACKAGE / "mechanisms" / "matrix.py",
    ],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_private_name_is_imported_across_packages(path):
    assert _private_imports_across_packages(path) == []


def test_the_private_import_scan_can_fail(tmp_path):
    (tmp_path / "audit").mkdir()
    bad = tmp_path / "audit" / "bad.py"
    bad.write_text(
        "from dpledger import accountant\n"
        "from dpledger.accountant import events as ev\n"
        "from dpledger.mechanisms.matrix import _wishart_delta\n"
        "from dpledger.accountant._atoms import gaussian_mu\n"
        "from dpledger._numerics import float_down\n"
        "from dpledger.audit._declared import declared_events\n"
        "accountant._exact_method(ev._check_event)\n"
    )
    assert sorted(_private_imports_across_packages(bad, tmp_path)) == [
        "3: dpledger.mechanisms.matrix._wishart_delta",
        "4: dpledger.accountant._atoms",
        "7: accountant._exact_method",
        "7: ev._check_event",
    ]


@pytest.mark.parametrize(
    "path",
    [*_sources("audit"), PACKAGE / "accountant" / "lower_bounds.py"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_audit_modules_hold_one_idea_each(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600
