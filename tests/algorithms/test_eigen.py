"""λ_min of an exact integer Gram matrix in grid steps: k ∈ {⌊λ/γ⌋ − 1, ⌊λ/γ⌋}, always.

References are independent of the code under test: exact eigenvalues of integer matrices
built as G = P·diag(D)·P with P = (vᵀv)I − 2vvᵀ (P² = (vᵀv)²I, so the eigenvalues of G are
exactly (vᵀv)²·Dᵢ), the closed form of a 2×2 matrix evaluated with integer square roots,
and mpmath's Jacobi eigensolver at 60 digits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, NoReturn

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpledger.algorithms import _eigen
from dpledger.algorithms._eigen import min_eigenvalue_steps
from dpledger.errors import InvalidArgumentError

# -- references -----------------------------------------------------------------------------


def reflected(D: Sequence[int], vectors: Any) -> tuple[np.ndarray, Fraction]:
    """(G, λ_min(G)) for G = P_k…P_1 diag(D) P_1…P_k, P = (vᵀv)I − 2vvᵀ, exactly."""
    d = len(D)
    G = np.diag(np.array([int(x) for x in D], dtype=object))
    factor = 1
    for v in vectors:
        v = np.array([int(t) for t in v], dtype=object)
        s = int(v.dot(v))
        P = -2 * np.multiply.outer(v, v)
        for i in range(d):
            P[i, i] += s
        G = P.dot(G).dot(P)
        factor *= s * s
    return G, Fraction(min(int(x) for x in D) * factor)


def floor_steps(lam: Fraction, unit: float, granularity: float) -> int:
    """⌊λ·unit/γ⌋ exactly."""
    return math.floor(lam * Fraction(unit) / Fraction(granularity))


def floor_2x2(a: int, b: int, c: int, shift: int) -> int:
    """⌊λ_min([[a, b], [b, c]])·2^shift⌋ from λ = (a + c − √D)/2, D = (a − c)² + 4b²."""
    D = (a - c) ** 2 + 4 * b * b
    s = shift - 1
    if s >= 0:
        Y = D << (2 * s)
        root = math.isqrt(Y)
        return ((a + c) << s) - (root + (root * root != Y))
    root = math.isqrt(D)
    return (a + c - (root + (root * root != D))) >> (-s)


def mp_floor_bounds(
    G: np.ndarray, unit: float, granularity: float, dps: int = 60
) -> tuple[int, int]:
    """⌊λ/γ⌋ from mpmath.eigsy at ``dps`` digits, as (floor of λ − err, floor of λ + err)."""
    with mpmath.workdps(dps):
        M = mpmath.matrix([[mpmath.mpf(int(v)) for v in row] for row in G])
        values = mpmath.eigsy(M, eigvals_only=True)
        lam = min(values[i] for i in range(len(values)))
        x = lam * mpmath.mpf(unit) / mpmath.mpf(granularity)
        err = (abs(x) + 1) * mpmath.mpf(10) ** (-(dps - 20))
        return int(mpmath.floor(x - err)), int(mpmath.floor(x + err))


def old_steps(G: np.ndarray, unit: float, granularity: float) -> int:
    """What the code did before: floor of eigvalsh of the float-rounded S."""
    S = np.array(G, dtype=float) * unit
    return math.floor(float(np.linalg.eigvalsh((S + S.T) / 2.0)[0]) / granularity)


def assert_sound(k: int, kstar: int) -> None:
    assert isinstance(k, int)
    assert k in (kstar - 1, kstar), (k, kstar)


@pytest.fixture
def no_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the O(d³) fallback is used: the cheap certified path must decide alone."""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("the fallback probe ran")

    monkeypatch.setattr(_eigen, "probe", refuse)


# -- exact and reference agreement ------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 3, 5, 8])
@pytest.mark.parametrize(
    ("unit", "granularity"),
    [(1.0, 1.0), (1.0, 2.0**-30), (2.0**-40, 2.0**-17), (2.0**-40, 2.0**30)],
)
def test_random_gram_matrices_match_mpmath(d: int, unit: float, granularity: float) -> None:
    rng = np.random.default_rng(d)
    for _ in range(3):
        M = rng.integers(-(2**31), 2**31, size=(d + 2, d)).astype(object)
        G = M.T.dot(M)  # PSD, entries ≈ 2⁶³ (beyond int64 on the diagonal)
        low, high = mp_floor_bounds(G, unit, granularity)
        assert low == high  # the reference is certain here
        k = min_eigenvalue_steps(G, unit, granularity)
        assert k == low  # d ≤ 12: a straddled grid edge is settled exactly
        assert min_eigenvalue_steps(G, unit, granularity, psd=True) == low


@given(
    a=st.integers(-(2**200), 2**200),
    b=st.integers(-(2**200), 2**200),
    c=st.integers(-(2**200), 2**200),
    shift=st.integers(-300, 300),
)
def test_two_by_two_equals_the_closed_form(a: int, b: int, c: int, shift: int) -> None:
    G = np.array([[a, b], [b, c]], dtype=object)
    assert min_eigenvalue_steps(G, 2.0**shift, 1.0) == floor_2x2(a, b, c, shift)


@given(
    d=st.integers(3, 9),
    data=st.data(),
    bits=st.integers(1, 120),
    cluster=st.integers(1, 9),
    shift=st.integers(-3, 3),
)
def test_exact_constructions_of_every_shape(
    d: int, data: st.DataObject, bits: int, cluster: int, shift: int
) -> None:
    # random eigenvalues (some repeated at the bottom), random reflections: λ known exactly
    entries = st.integers(-(2**bits), 2**bits)
    D = data.draw(st.lists(entries, min_size=d, max_size=d))
    D.sort()
    D[: min(cluster, d)] = [D[0]] * min(cluster, d)
    v = data.draw(st.lists(st.integers(-9, 9), min_size=d, max_size=d).filter(any))
    G, lam = reflected(D, [v])
    num = abs(lam.numerator)
    edge = (num & -num).bit_length() - 1 if num else 0  # γ_G with an edge on λ …
    granularity = 2.0 ** max(-1000, min(1000, edge + shift))  # … or near it
    assert min_eigenvalue_steps(G, 1.0, granularity) == floor_steps(lam, 1.0, granularity)


def test_two_by_two_exactly_on_and_next_to_edges() -> None:
    # [[a, b], [b, a]] has eigenvalues a ± b: λ = a − |b| exactly
    for lam in (2**60, 2**60 + 1, 2**60 - 1, 3 * 2**52, 0, -(2**61)):
        b = 2**61 + 12345
        G = np.array([[lam + b, b], [b, lam + b]], dtype=object)
        for gran_exp in (0, 10, 52, 60):
            kstar = floor_steps(Fraction(lam), 1.0, 2.0**gran_exp)
            assert min_eigenvalue_steps(G, 1.0, 2.0**gran_exp) == kstar


@pytest.mark.parametrize("d", [3, 6, 12, 20, 60])
@pytest.mark.parametrize("offset", [0, 1, -1])
def test_eigenvalue_on_or_within_1e_15_of_a_grid_edge(d: int, offset: int) -> None:
    rng = np.random.default_rng(100 + d)
    vectors = [rng.integers(-40, 40, size=d) for _ in range(2)]
    D = [int(x) for x in rng.integers(2**55, 2**60, size=d)]
    D[0] = 2**50
    G, lam = reflected(D, vectors)
    for i in range(d):
        G[i, i] += offset  # eigenvalues shift by exactly `offset`
    edge = lam.numerator  # an integer: its largest power-of-two divisor puts an edge on it
    gran = 2.0 ** ((edge & -edge).bit_length() - 1)
    lam += offset
    assert abs(offset) / lam < 1e-15
    for unit, granularity in ((1.0, gran), (2.0**-40, gran * 2.0**-40)):
        kstar = floor_steps(lam, unit, granularity)
        k = min_eigenvalue_steps(G, unit, granularity)
        assert_sound(k, kstar)
        if d <= 12:
            assert k == kstar


def test_the_float_floor_breaks_the_charged_sensitivity_and_this_does_not(no_probes: None) -> None:
    # ‖S‖ ≈ 2⁹⁴ units of 2⁻⁴⁰ (≈ 2⁵⁴), γ = 2⁷: eigvalsh errs by thousands of grid steps
    rng = np.random.default_rng(7)
    d = 60
    vectors = [rng.integers(-40, 40, size=d) for _ in range(2)]
    D = [int(x) for x in rng.integers(2**55, 2**60, size=d)]
    D[0] = 2**50 + 3
    G, lam = reflected(D, vectors)
    unit, granularity = 2.0**-40, 2.0**7
    kstar = floor_steps(lam, unit, granularity)
    old = old_steps(G, unit, granularity)
    assert old not in (kstar - 1, kstar)  # the old approach violates (*)
    assert abs(old - kstar) > 100
    assert min_eigenvalue_steps(G, unit, granularity) == kstar


def test_lehmann_certifies_a_repeated_smallest_eigenvalue_without_the_fallback(
    no_probes: None,
) -> None:
    rng = np.random.default_rng(11)
    d = 60
    vectors = [rng.integers(-40, 40, size=d) for _ in range(2)]
    D = [int(x) for x in rng.integers(2**55, 2**60, size=d)]
    D[0] = D[1] = D[2] = 2**50 + 2**48  # multiplicity 3, mid-cell below
    G, lam = reflected(D, vectors)
    for granularity in (2.0**70, 2.0**72):  # ≈ 1e-15·‖S‖ < the float error d·u·‖S‖
        kstar = floor_steps(lam, 1.0, granularity)
        assert min_eigenvalue_steps(G, 1.0, granularity) == kstar


def test_lehmann_with_a_shift_off_the_integers(no_probes: None) -> None:
    # gap above the cluster ≈ 2³², so the shift ρ < β is a dyadic with a denominator;
    # ‖G‖ ≈ 2⁶²: the float error d·u·‖G‖ ≈ 2¹⁵ is far above γ_G = 2⁶, while Lehmann's
    # width ≈ (u‖G‖)²/gap ≪ γ_G; λ sits a quarter-cell from the edges
    rng = np.random.default_rng(13)
    d = 60
    v = rng.choice([-1, 1], size=d)
    D0 = 2**45 + 1
    D = [D0] * 3 + [D0 + 2**20] + [int(x) for x in rng.integers(2**47, 2**50, size=d - 4)]
    G, lam = reflected(D, [v])
    assert lam.denominator == 1 and lam.numerator % 64 in (16, 48)
    assert min_eigenvalue_steps(G, 1.0, 64.0) == floor_steps(lam, 1.0, 64.0)


def _cluster_of_30(seed: int, d: int) -> tuple[np.ndarray, Fraction, int]:
    """(G, exact λ, bit length of G's largest entry): 30 lowest eigenvalues within 2¹⁰."""
    rng = np.random.default_rng(seed)
    vectors = [rng.integers(-30, 30, size=d) for _ in range(2)]
    D = [2**70 + int(rng.integers(0, 2**10)) for _ in range(30)]
    D += [2**71 + int(rng.integers(0, 2**60)) for _ in range(d - 30)]
    G, lam = reflected(D, vectors)
    return G, lam, max(abs(int(v)) for v in G.flat).bit_length()


def test_a_cluster_too_large_for_lehmann_goes_to_the_exact_fallback() -> None:
    G, lam, top = _cluster_of_30(5, 60)
    calls = []
    real = _eigen.probe

    def counted(*args: Any) -> bool:
        calls.append(args)
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_eigen, "probe", counted)
        for granularity_exp in (top - 46, top - 47):
            kstar = floor_steps(lam, 1.0, 2.0**granularity_exp)
            assert_sound(min_eigenvalue_steps(G, 1.0, 2.0**granularity_exp), kstar)
    assert calls  # the fallback was needed


def test_without_any_float_estimate_the_exact_search_still_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_eigen, "_smallest_pairs", lambda A, count: None)  # as if eigh failed
    rng = np.random.default_rng(8)
    for d in (6, 20):
        vectors = [rng.integers(-9, 9, size=d)]
        D = [int(x) for x in rng.integers(2**20, 2**30, size=d)]
        G, lam = reflected(D, vectors)
        for granularity in (2.0**20, 2.0**30):
            kstar = floor_steps(lam, 1.0, granularity)
            k = min_eigenvalue_steps(G, 1.0, granularity)
            assert_sound(k, kstar)
            if d <= 12:
                assert k == kstar


# -- special matrices ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, -1, 5, 2**63, -(2**200), 3**700])
def test_one_by_one(value: int) -> None:
    for unit, granularity in ((1.0, 1.0), (2.0**-40, 2.0**-17), (2.0**-3, 2.0**5)):
        G = np.array([[value]], dtype=object)
        kstar = floor_steps(Fraction(value), unit, granularity)
        assert min_eigenvalue_steps(G, unit, granularity) == kstar


def test_diagonal_is_exact() -> None:
    G = np.diag(np.array([2**80 + 7, 3, 2**70, 5], dtype=object))
    assert min_eigenvalue_steps(G, 2.0**-1, 2.0**-3) == 12
    G = np.zeros((4, 4), dtype=np.int64)
    assert min_eigenvalue_steps(G, 1.0, 1.0) == 0


@pytest.mark.parametrize("d", [3, 8, 30])
def test_singular_gram_has_lambda_exactly_zero(d: int) -> None:
    rng = np.random.default_rng(d)
    M = rng.integers(-(2**20), 2**20, size=(d - 1, d)).astype(object)
    G = M.T.dot(M)  # rank ≤ d − 1: λ = 0 exactly, on a grid edge
    for unit, granularity in ((2.0**-40, 2.0**-17), (1.0, 1.0), (1.0, 2.0**-60)):
        assert min_eigenvalue_steps(G, unit, granularity, psd=True) == 0
        k = min_eigenvalue_steps(G, unit, granularity)
        assert_sound(k, 0)
        if d <= 12:
            assert k == 0


@pytest.mark.slow
def test_entries_beyond_int64_and_beyond_the_float_range() -> None:
    rng = np.random.default_rng(3)
    d = 6
    vectors = [rng.integers(-20, 20, size=d)]
    cases = [(70, 1.0, 2.0**80), (1100, 2.0**-1000, 2.0**120), (3000, 2.0**-1074, 2.0**1000)]
    for bits, unit, granularity in cases:
        D = [int(x) << bits for x in rng.integers(2**20, 2**40, size=d)]
        G, lam = reflected(D, vectors)
        assert max(abs(int(v)) for v in G.flat) > 2**bits
        kstar = floor_steps(lam, unit, granularity)
        assert min_eigenvalue_steps(G, unit, granularity) == kstar
        assert min_eigenvalue_steps(G, unit, granularity, psd=True) == kstar


def test_indefinite_and_negative_definite() -> None:
    rng = np.random.default_rng(9)
    d = 8
    vectors = [rng.integers(-30, 30, size=d) for _ in range(2)]
    for D in (
        [int(x) for x in rng.integers(-(2**50), 2**50, size=d)],
        [-int(x) for x in rng.integers(1, 2**50, size=d)],
    ):
        G, lam = reflected(D, vectors)
        for granularity in (1.0, 2.0**30, 2.0**60):
            assert min_eigenvalue_steps(G, 1.0, granularity) == floor_steps(lam, 1.0, granularity)


def test_integer_and_object_inputs_agree() -> None:
    rng = np.random.default_rng(4)
    M = rng.integers(0, 1000, size=(30, 10))
    G = M.T @ M  # non-negative entries, so every dtype holds them
    for dtype in (np.int64, np.int32, np.uint64, object):
        assert min_eigenvalue_steps(G.astype(dtype), 2.0**-3, 2.0**-9) == min_eigenvalue_steps(
            G, 2.0**-3, 2.0**-9
        )


def test_psd_promise_is_checked_where_a_witness_appears() -> None:
    G = np.array([[1, 2], [2, 1]])  # eigenvalues 3, −1
    assert min_eigenvalue_steps(G, 1.0, 1.0) == -1
    with pytest.raises(InvalidArgumentError, match="positive semidefinite"):
        min_eigenvalue_steps(G, 1.0, 1.0, psd=True)


# -- the rigorous building blocks, checked against exact eigenvalues --------------------------


@pytest.mark.parametrize("d", [4, 16, 64])
def test_cholesky_lower_bound_is_below_the_exact_eigenvalue_and_close_to_it(d: int) -> None:
    rng = np.random.default_rng(20 + d)
    for _ in range(5):
        vectors = [rng.integers(-50, 50, size=d) for _ in range(2)]
        D = [int(x) for x in rng.integers(-(2**60), 2**60, size=d)]
        G, lam = reflected(D, vectors)
        A, power, error = _eigen._float_matrix(G)
        center = float(np.linalg.eigvalsh(A)[0])
        rows = float(np.abs(A).sum(axis=1).max())
        bound = _eigen._cholesky_lower(A, error, center, (d + 2) * 2.0**-53 * rows)
        assert bound is not None
        exact = lam / Fraction(2) ** power
        assert bound <= exact
        assert exact - bound < 64 * d * 2.0**-53 * rows  # and not uselessly loose


@pytest.mark.parametrize("d", [5, 17])
def test_fixed_point_probe_answers_are_true(d: int) -> None:
    rng = np.random.default_rng(d)
    vectors = [rng.integers(-20, 20, size=d) for _ in range(2)]
    D = [int(x) for x in rng.integers(2**30, 2**40, size=d)]
    G, lam = reflected(D, vectors)
    for q in (10, 20, 30):  # coarse grids: the fuzz η = 2^q·⌈d²/2⌉ matters
        eta = Fraction(2) ** q * ((d * d + 1) // 2)
        for offset in (-3, -1, 0, 1, 3):
            tau = (math.floor((lam + offset * eta) / 2**q)) * Fraction(2) ** q
            if _eigen.probe(G, tau, q):
                assert lam > tau - eta
            else:
                assert lam <= tau + eta


def test_exact_semidefinite_tests() -> None:
    assert _eigen.exact_psd(np.array([[2, 2], [2, 2]], dtype=object))
    assert not _eigen.exact_psd(np.array([[0, 1], [1, 0]], dtype=object))
    assert _eigen.exact_psd(np.zeros((3, 3), dtype=object))
    assert not _eigen.exact_psd(np.array([[1, 0], [0, -1]], dtype=object))
    assert _eigen.exact_definite(np.array([[2, 1], [1, 2]], dtype=object))
    assert not _eigen.exact_definite(np.array([[1, 1], [1, 1]], dtype=object))
    G, lam = reflected([7, 9, 7, 12], [[1, 2, -1, 3]])
    assert _eigen.exact_psd(_eigen.shifted(G, lam))
    assert not _eigen.exact_psd(_eigen.shifted(G, lam + Fraction(1, 2**40)))


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gram", "match"),
    [
        (np.array([1, 2, 3]), "square"),
        (np.zeros((2, 3), dtype=int), "square"),
        (np.zeros((0, 0), dtype=int), "square"),
        (np.array([[1, 2], [3, 4]]), "symmetric"),
        (np.array([[1.0, 0.0], [0.0, 1.0]]), "integers"),
        (np.array([[1, 0.5], [0.5, 1]], dtype=object), "integers"),
        (np.array([[True, False], [False, True]]), "integers"),
        (np.array([[1, True], [True, 1]], dtype=object), "integers"),
        (np.array([["a"]]), "integers"),
    ],
)
def test_bad_gram(gram: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as info:
        min_eigenvalue_steps(gram, 1.0, 1.0)
    assert "`gram`" in str(info.value)


@pytest.mark.parametrize("name", ["unit", "granularity"])
@pytest.mark.parametrize("value", [3.0, 0.0, -2.0, math.nan, math.inf, 0.3, True, "1", 10**400])
def test_bad_unit_or_granularity(name: str, value: object) -> None:
    arguments: dict[str, Any] = {"unit": 1.0, "granularity": 1.0, name: value}
    with pytest.raises(InvalidArgumentError, match=f"`{name}`"):
        min_eigenvalue_steps(np.eye(2, dtype=int), **arguments)


def test_powers_of_two_of_every_kind_are_accepted() -> None:
    G = np.array([[4]])
    for unit in (1, 2.0**-1074, 2.0**1023, np.float32(0.5), np.int64(8)):
        assert min_eigenvalue_steps(G, unit, 1.0) == math.floor(4 * Fraction(float(unit)))
    with pytest.raises(InvalidArgumentError, match="`psd`"):
        min_eigenvalue_steps(G, 1.0, 1.0, psd=1)  # type: ignore[arg-type]


# -- speed ------------------------------------------------------------------------------------


def _unit_rows_gram(n: int, d: int, seed: int) -> np.ndarray:
    """Exact Σ mᵢmᵢᵀ of n unit-norm rows on the 2⁻²⁰ grid (as the statistics code does)."""
    rng = np.random.default_rng(seed)
    G = np.zeros((d, d), dtype=np.int64)
    for start in range(0, n, 1 << 15):
        X = rng.normal(size=(min(1 << 15, n - start), d))
        X /= np.linalg.norm(X, axis=1)[:, None]
        M = np.rint(X * 2.0**20)
        for s in range(0, M.shape[0], 1024):
            G += (M[s : s + 1024].T @ M[s : s + 1024]).astype(np.int64)  # exact blocks
    return G


def test_common_case_needs_no_fallback(no_probes: None) -> None:
    # the magnitudes of n ≈ 10⁶ rows at d = 200: the O(d²) certified path decides alone
    # (its speed is measured in benchmarks, not here)
    G = _unit_rows_gram(1 << 16, 200, seed=1) * 16
    k = min_eigenvalue_steps(G, 2.0**-40, 2.0**-17)
    lam = float(np.linalg.eigvalsh(G.astype(float) * 2.0**-40)[0])
    assert abs(k - lam / 2.0**-17) < 2


@pytest.mark.slow
def test_hard_regime_n_1e9_is_certified_without_the_fallback(no_probes: None) -> None:
    # ‖S‖ ≈ 10⁹ / d·…: the float error d·u·‖S‖ ≈ 10⁻⁵ exceeds γ = 2⁻¹⁷; Lehmann certifies
    rng = np.random.default_rng(2)
    for d in (50, 300):
        X = rng.normal(size=(4 * d, d)) + 0.3 * rng.normal(size=(4 * d, 1))
        X /= np.linalg.norm(X, axis=1)[:, None]
        F = np.rint(X.T @ X / (4 * d) * 1e9 * 2.0**40)
        F = np.triu(F) + np.triu(F, 1).T
        G = np.array([[int(v) for v in row] for row in F], dtype=object)
        k = min_eigenvalue_steps(G, 2.0**-40, 2.0**-17)
        low, high = mp_floor_bounds(G, 2.0**-40, 2.0**-17, dps=50) if d == 50 else (k, k)
        assert low <= k <= high


@pytest.mark.slow
def test_fallback_at_d_200_satisfies_the_bound() -> None:
    G, lam, top = _cluster_of_30(6, 200)
    for granularity_exp in (top - 46, top - 47, top - 50):
        kstar = floor_steps(lam, 1.0, 2.0**granularity_exp)
        assert_sound(min_eigenvalue_steps(G, 1.0, 2.0**granularity_exp), kstar)
