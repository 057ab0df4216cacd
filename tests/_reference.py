"""Independent reference computations in mpmath (no dpledger code is used here)."""

from __future__ import annotations

import mpmath

mpmath.mp.dps = 50


def gaussian_delta(epsilon: float, mu: float) -> mpmath.mpf:
    """Balle & Wang 2018, Thm 8, in 50-digit arithmetic."""
    m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
    return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def gaussian_epsilon(delta: float, mu: float) -> mpmath.mpf:
    """Root of gaussian_delta(ε) = δ by bisection in mpmath (monotone, no tolerance games)."""
    target = mpmath.mpf(delta)
    if gaussian_delta(0, mu) <= target:
        return mpmath.mpf(0)
    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    while gaussian_delta(hi, mu) > target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if gaussian_delta(mid, mu) > target:
            lo = mid
        else:
            hi = mid
    return hi


def gaussian_sigma(epsilon: float, delta: float) -> mpmath.mpf:
    """Smallest σ (Δ = 1) with gaussian_delta(ε, 1/σ) ≤ δ, by bisection."""
    target = mpmath.mpf(delta)
    lo, hi = mpmath.mpf("0.01"), mpmath.mpf(1)
    while gaussian_delta(epsilon, 1 / hi) > target:
        hi *= 2
    for _ in range(120):
        mid = (lo + hi) / 2
        if gaussian_delta(epsilon, 1 / mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def kov_delta(epsilon: float, groups: list[tuple[float, int]], deltas: list[tuple[float, int]]):
    """Exact δ(ε) of composing εᵢ-RR pairs (and δᵢ atoms) by brute-force enumeration."""
    support = {mpmath.mpf(0): mpmath.mpf(1)}
    for eps_i, count in groups:
        e = mpmath.mpf(eps_i)
        p = mpmath.exp(e) / (1 + mpmath.exp(e))
        step = {}
        for low in range(count + 1):
            prob = mpmath.binomial(count, low) * p ** (count - low) * (1 - p) ** low
            step[(count - 2 * low) * e] = prob
        new: dict = {}
        for v1, p1 in support.items():
            for v2, p2 in step.items():
                new[v1 + v2] = new.get(v1 + v2, 0) + p1 * p2
        support = new
    eps = mpmath.mpf(epsilon)
    d_rr = mpmath.fsum(p * (1 - mpmath.exp(eps - v)) for v, p in support.items() if v > eps)
    keep = mpmath.mpf(1)
    for d, k in deltas:
        keep *= (1 - mpmath.mpf(d)) ** k
    return 1 - keep * (1 - d_rr)


def kov_epsilon(delta: float, groups, deltas=()) -> mpmath.mpf:
    """Smallest ε with kov_delta(ε) ≤ δ, by bisection."""
    deltas = list(deltas)
    target = mpmath.mpf(delta)
    lo = mpmath.mpf(0)
    hi = mpmath.fsum(mpmath.mpf(e) * k for e, k in groups)
    for _ in range(120):
        mid = (lo + hi) / 2
        if kov_delta(mid, groups, deltas) > target:
            lo = mid
        else:
            hi = mid
    return hi


def rdp_epsilon(curve, delta: float, lo: float = 1.0001, hi: float = 1e4) -> mpmath.mpf:
    """min over α of the Balle et al. 2020 conversion, by golden-section search in mpmath."""
    log_delta = mpmath.log(mpmath.mpf(delta))

    def f(a):
        return curve(a) + mpmath.log(1 - 1 / a) - (log_delta + mpmath.log(a)) / (a - 1)

    # coarse log scan then golden section
    grid = [
        mpmath.mpf(lo) + (mpmath.mpf(hi) - lo) * mpmath.mpf(10) ** (k / 40 - 4) for k in range(161)
    ]
    values = [f(a) for a in grid]
    i = min(range(len(grid)), key=lambda k: values[k])
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    ratio = (mpmath.sqrt(5) - 1) / 2
    for _ in range(200):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if f(c) < f(d):
            b = d
        else:
            a = c
    return f((a + b) / 2)


def _integer_atoms_epsilon(
    atoms: dict[int, mpmath.mpf], unit: mpmath.mpf, count: int, delta: float, top: mpmath.mpf
) -> mpmath.mpf:
    """ε(δ) of ``count`` releases whose loss is key·unit with P-mass atoms[key]: exact
    convolution of the atoms (keys add), then bisection of δ(ε) on [0, top]."""
    dist: dict[int, mpmath.mpf] = {0: mpmath.mpf(1)}
    for _ in range(count):
        nxt: dict[int, mpmath.mpf] = {}
        for key, p in dist.items():
            for a, pa in atoms.items():
                nxt[key + a] = nxt.get(key + a, 0) + p * pa
        dist = nxt

    def delta_at(eps: mpmath.mpf) -> mpmath.mpf:
        return mpmath.fsum(
            p * (1 - mpmath.e ** (eps - key * unit)) for key, p in dist.items() if key * unit > eps
        )

    lo, hi = mpmath.mpf(0), top
    for _ in range(100):
        mid = (lo + hi) / 2
        if delta_at(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def discrete_laplace_epsilon(scale: float, shift: int, count: int, delta: float) -> mpmath.mpf:
    """ε(δ) of ``count`` releases of DLap(0, t) vs DLap(shift, t), by exact enumeration.

    Independent of the library: the loss atoms are enumerated from the two-sided geometric
    probabilities, convolved exactly in 30-digit arithmetic, and δ(ε) is bisected.
    """
    with mpmath.workdps(30):
        t = mpmath.mpf(scale)
        r = mpmath.e ** (-1 / t)
        c = (1 - r) / (1 + r)
        # loss in units of 1/t: x ≤ 0 → shift; x ≥ shift → −shift; else shift − 2x
        atoms: dict[int, mpmath.mpf] = {shift: 1 / (1 + r), -shift: r**shift / (1 + r)}
        for x in range(1, shift):
            atoms[shift - 2 * x] = atoms.get(shift - 2 * x, 0) + c * r**x
        return _integer_atoms_epsilon(atoms, 1 / t, count, delta, count * shift / t)


def discrete_gaussian_epsilon(sigma: float, shift: int, count: int, delta: float) -> mpmath.mpf:
    """ε(δ) of ``count`` releases of N_Z(0, σ²) vs N_Z(shift, σ²), by exact enumeration.

    30-digit arithmetic; atoms beyond ±(14σ + shift), and atoms of mass below 1e-45, are
    left out (dropping mass can only lower δ: the reference is a slight under-estimate).
    The loss (s² − 2sx)/(2σ²) is (s − 2x)·s/(2σ²), so atoms are keyed by s − 2x.
    """
    with mpmath.workdps(30):
        s2 = mpmath.mpf(sigma) ** 2
        half = int(14 * sigma) + shift + 1
        weights = {x: mpmath.e ** (-mpmath.mpf(x * x) / (2 * s2)) for x in range(-half, half + 1)}
        norm = mpmath.fsum(weights.values())
        atoms: dict[int, mpmath.mpf] = {}
        for x, w in weights.items():
            if w / norm >= mpmath.mpf(10) ** -45:
                atoms[shift - 2 * x] = atoms.get(shift - 2 * x, 0) + w / norm
        return _integer_atoms_epsilon(atoms, shift / (2 * s2), count, delta, mpmath.mpf(100))


def laplace_rr_delta(
    epsilon: float, step: float, laplace: int, rr: int = 0, dps: int = 100
) -> mpmath.mpf:
    """Exact δ(ε) of ``laplace`` Laplace releases with ε₀ = ``step`` (Lap(0, 1) vs
    Lap(step, 1)) and ``rr`` binary randomized responses with ε₀ = ``step``.

    A closed form independent of the library's Bernstein recursion. In U = (ε₀ − L)/2 the
    tilted measure e^{u}P(du) of one Laplace release is ½(δ₀ + δ_g + λ[0, g]) and of one
    randomized response p(δ₀ + δ_g), p = e^g/(1 + e^g); the composition's S = ΣU has law
    e^{−s}ν^{*}(ds) with ν^{*} = 2^{−L}p^R Σₘ C(L, m) Σᵢ C(L − m + R, i) δ_{ig} * λ^{*m}, the
    m-fold convolution of λ[0, g] having the truncated-power (Irwin–Hall) density
    Σₖ(−1)ᵏC(m, k)(x − kg)₊^{m−1}/(m − 1)!. Then δ(ε) = ∫_{s<t}(e^{−s} − e^{ε−T}e^{s}) ν^{*}(ds),
    t = (T − ε)/2, T = (L + R)g, and ∫₀^Y e^{∓u}u^{m−1}/(m − 1)! du = Yᵐ/m!·₁F₁(m; m+1; ∓Y).
    The alternating sums cancel: ``dps`` digits (compare two precisions).
    """
    with mpmath.workdps(dps):
        g, eps = mpmath.mpf(step), mpmath.mpf(epsilon)
        top = (laplace + rr) * g
        t = (top - eps) / 2
        c = mpmath.e ** (eps - top)
        p = mpmath.e**g / (1 + mpmath.e**g)
        cache: dict[tuple[int, int], tuple[mpmath.mpf, mpmath.mpf]] = {}

        def integrals(m: int, shift: int) -> tuple[mpmath.mpf, mpmath.mpf]:
            if (m, shift) not in cache:
                y = t - shift * g
                base = y**m / mpmath.factorial(m)
                cache[(m, shift)] = (
                    base * mpmath.hyp1f1(m, m + 1, -y),
                    base * mpmath.hyp1f1(m, m + 1, y),
                )
            return cache[(m, shift)]

        total = mpmath.mpf(0)
        for m in range(laplace + 1):
            atoms = laplace - m + rr
            inner = mpmath.mpf(0)
            for i in range(atoms + 1):
                if i * g >= t:
                    break
                if m == 0:
                    term = mpmath.e ** (-i * g) - c * mpmath.e ** (i * g)
                else:
                    term = mpmath.mpf(0)
                    for k in range(m + 1):
                        if (i + k) * g >= t:
                            break
                        minus, plus = integrals(m, i + k)
                        sign = -1 if k % 2 else 1
                        term += (
                            sign
                            * mpmath.binomial(m, k)
                            * (
                                mpmath.e ** (-(i + k) * g) * minus
                                - c * mpmath.e ** ((i + k) * g) * plus
                            )
                        )
                inner += mpmath.binomial(atoms, i) * term
            total += mpmath.binomial(laplace, m) * inner
        return total * mpmath.mpf(2) ** (-laplace) * p**rr
