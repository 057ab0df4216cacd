"""Declared releases as the events they really are, under the claim's adjacency.

The translation half of :func:`dpledger.audit.check_claim`: each declared release becomes
the event of its noise — its sensitivity under the *claim's* adjacency, its sampling
scheme, its count — never the ε its authors assigned it. A noise given by a published
formula (``calibration``) is recomputed from the formula. A release with no valid
accounting raises :class:`~dpledger.errors.UnsupportedReleaseError`, collected in
:class:`DeclaredEvents` (the verdict is then ``unsupported``).

Batching models (``sampling``) are accounted under the adjacency their theorem needs:
Poisson sampling under add/remove (Mironov, Talwar & Zhang 2019), sampling without
replacement under replace-one (Wang, Balle & Kasiviswanathan 2019), and shuffled or
fixed batches — for which no amplification theorem exists — without amplification, with
the replace-one sensitivity even for an add/remove claim (adding a record pushes another
out of the batches).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from dpledger._format import up as fmt_up
from dpledger.accountant import events as ev
from dpledger.accountant.lower_bounds import wishart_delta
from dpledger.audit._dp_accounting import KEY as DP_ACCOUNTING
from dpledger.audit._dp_accounting import dp_accounting_event
from dpledger.audit.pipeline import Claim, Pipeline, Release
from dpledger.errors import InvalidArgumentError, UnsupportedReleaseError

__all__ = ["WORST_CASE_NOT_ATTAINED", "DeclaredEvents", "declared_events"]

# Accounted as a worst case they do not attain, so they certify no lower bound:
# report-noisy-max and permute-and-flip are accounted as ε-DP, whose worst case
# (randomized response) they do not attain. Wishart: its (0, δ) event is attained for each
# release alone, but its worst pair (mass 1 − e^{−ε} at infinite loss, a constant loss −ε
# on the rest) is not the canonical (0, δ) pair, whose composition with other releases can
# exceed the true one; its own lower bound is
# :func:`~dpledger.accountant.lower_bounds.wishart_epsilon_lower`.
WORST_CASE_NOT_ATTAINED = ("report_noisy_max", "permute_and_flip", "wishart")


@dataclass
class DeclaredEvents:
    """What a declared pipeline releases, as events (:func:`declared_events`).

    Attributes:
        events: The event of each supported release, in the declaration's order.
        attained: Those whose accounted worst case some input attains (the releases a
            certified lower bound may be computed from).
        rows: One row per declared release: label, mechanism, count, sampling, and the
            event (``repr``) where it is supported.
        findings: What the translation assumed or derived, in words.
        unsupported: Why each unsupported release has no valid accounting.
        unamplified: Whether some batches were accounted without (unproved) amplification.
        wishart_epsilon: Σ count·ε of the unsampled Wishart releases, exactly.
    """

    events: list[ev.Event] = field(default_factory=list)
    attained: list[ev.Event] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    unamplified: bool = False
    wishart_epsilon: Fraction = Fraction(0)

    @property
    def event(self) -> ev.Event:
        """The composition of every supported release (at least one must be)."""
        return _composed(self.events)

    @property
    def lower_event(self) -> ev.Event | None:
        """The composition of the attained releases, or None if there is none.

        Releasing more never lowers ε: a lower bound for the attained releases alone is a
        lower bound for the whole pipeline.
        """
        return _composed(self.attained) if self.attained else None

    @property
    def complete(self) -> bool:
        """Whether every release is attained (then :attr:`lower_event` is the whole)."""
        return len(self.attained) == len(self.events)


def _composed(events: list[ev.Event]) -> ev.Event:
    return events[0] if len(events) == 1 else ev.Composed(tuple(events))


def declared_events(pipe: Pipeline, claim: Claim) -> DeclaredEvents:
    """Translate every release of ``pipe`` into its event under ``claim``'s adjacency."""
    out = DeclaredEvents()
    for release in pipe.releases:
        row = {
            "label": release.label,
            "mechanism": release.describe(),
            "count": release.count,
            "sampling": release.describe_sampling(),
        }
        try:
            built, batches = _release_event(release, claim, out.findings)
        except UnsupportedReleaseError as exc:
            out.unsupported.append(str(exc))
            out.rows.append(row)
            continue
        out.unamplified = out.unamplified or batches
        row["event"] = repr(built)
        out.rows.append(row)
        out.events.append(built)
        # a batch accounted without amplification is an upper bound only (the true
        # mechanism amplifies by an unknown amount)
        if not batches and release.mechanism not in WORST_CASE_NOT_ATTAINED:
            out.attained.append(built)
        if release.mechanism == "wishart" and release.sampling == "none":
            out.wishart_epsilon += release.count * Fraction(release.params["epsilon"])
    return out


def _sensitivity(release: Release, adjacency: str, findings: list[str]) -> float:
    value = release.params["sensitivity"]
    if not isinstance(value, Mapping):
        return float(value)
    if adjacency in value:
        return float(value[adjacency])
    name = release.label or release.mechanism
    if adjacency == "replace_one" and "add_remove" in value:
        findings.append(
            f"{name}: no replace-one sensitivity declared; used 2 × the add/remove one "
            f"({2 * value['add_remove']:g}), valid because replacing a record is removing it "
            "and adding another."
        )
        return 2.0 * float(value["add_remove"])
    raise UnsupportedReleaseError(
        f"{name}: only a replace-one sensitivity is declared; an add/remove sensitivity "
        "cannot be derived from it."
    )


def _classical_sigma(epsilon: float, delta: float, sensitivity: float, name: str) -> float:
    """Δ√(2 ln(1.25/δ))/ε, the classical Gaussian σ (ln(1.25/δ) taken without overflow)."""
    sigma = sensitivity * math.sqrt(2 * (math.log(1.25) - math.log(delta))) / epsilon
    return _finite_noise(sigma, "sigma", name, epsilon)


def _finite_noise(value: float, what: str, name: str, epsilon: float) -> float:
    """A calibrated noise scale, or an error naming the release if it overflows a float."""
    if not math.isfinite(value):
        raise InvalidArgumentError(
            f"{name}: the {what} its calibration gives at epsilon = {epsilon!r} overflows a "
            f"float ({value!r}); declare the noise ({what} = ...) instead."
        )
    return value


def _base_event(release: Release, adjacency: str, findings: list[str]) -> ev.Event:
    p = release.params
    mech = release.mechanism
    name = release.label or mech
    if mech in ("gaussian", "laplace", "discrete_gaussian", "discrete_laplace"):
        sens = _sensitivity(release, adjacency, findings)
    if mech == "gaussian":
        if release.calibration is None:
            sigma = p["sigma"]
        else:
            eps_r, delta_r = p["epsilon"], p["delta"]
            if eps_r <= 0 or delta_r <= 0:
                raise UnsupportedReleaseError(
                    f"{name}: a Gaussian calibration needs epsilon > 0 and delta > 0"
                )
            noise_sens = p.get("noise_sensitivity", sens)
            if release.calibration == "classical":
                sigma = _classical_sigma(eps_r, delta_r, noise_sens, name)
                if eps_r >= 1:
                    findings.append(
                        f"{name}: the classical Gaussian σ = Δ√(2 ln(1.25/δ))/ε is only proved "
                        f"for ε < 1 (Dwork & Roth 2014, Thm A.1); here ε = {eps_r:g}."
                    )
            else:
                from dpledger.calibrate import gaussian_sigma

                sigma = gaussian_sigma(eps_r, delta_r, sensitivity=noise_sens)
        return ev.Gaussian(sigma=sigma, sensitivity=sens)
    if mech == "laplace":
        if release.calibration is None:
            scale = p["scale"]
        else:
            if p["epsilon"] <= 0:
                raise UnsupportedReleaseError(f"{name}: a Laplace calibration needs epsilon > 0")
            scale = _finite_noise(
                p.get("noise_sensitivity", sens) / p["epsilon"], "scale", name, p["epsilon"]
            )
        return ev.Laplace(scale=scale, sensitivity=sens)
    if mech == "discrete_gaussian":
        return ev.DiscreteGaussian(p["sigma"], sens, dimension=p.get("dimension"))
    if mech == "discrete_laplace":
        return ev.DiscreteLaplace(p["scale"], sens, dimension=p.get("dimension"))
    if mech == "randomized_response":
        return ev.RandomizedResponse(epsilon=p["epsilon"], categories=int(p.get("categories", 2)))
    if mech == "exponential":
        # ε-bounded range (Durfee & Rogers 2019): tighter than ε-DP, and its worst case is
        # not randomized response — no lower bound is certified from it
        return ev.BoundedRange(epsilon=p["epsilon"])
    if mech in ("report_noisy_max", "permute_and_flip", "pure_dp"):
        return ev.PureDP(epsilon=p["epsilon"])
    if mech == "approx_dp":
        return ev.ApproxDP(epsilon=p["epsilon"], delta=p["delta"])
    if mech == "zcdp":
        return ev.ZCDP(rho=p["rho"])
    if mech == "mcdp":
        return ev.MCDP(mu=p["mu"], tau=p["tau"])
    if mech == "gdp":
        # μ-GDP is the Gaussian with Δ/σ = μ; σ = 1/μ would round (to either side)
        return ev.Gaussian(sigma=1.0, sensitivity=p["mu"])
    if mech == "wishart":
        delta_w = wishart_delta(p["epsilon"])
        findings.append(
            f"{name}: Wishart noise is not ε-DP for any ε — the noisy matrix's support "
            "depends on the data, and an output outside the neighbour's support (probability "
            f"1 − e^(−ε) = {fmt_up(delta_w)}) has infinite privacy loss. It is "
            f"(0, {fmt_up(delta_w)})-DP and no better at any ε (dpledger.mechanisms.Wishart; "
            "diffprivlib removed its Wishart mechanism for this reason, its issue #23)."
        )
        return ev.ApproxDP(epsilon=0.0, delta=delta_w)
    raise InvalidArgumentError(f"internal error: unhandled mechanism {mech!r}")


def _batch_release(release: Release, claim: Claim, findings: list[str]) -> Release:
    """A fixed-size-batch release under add/remove, restated under replace-one.

    With a fixed number of steps and a fixed batch size, adding a record pushes another
    out of the batches: the neighbouring runs differ by a *substitution*. So fixed-size
    batches are accounted with the replace-one sensitivity (declared, or 2 × the
    add/remove one) even for an add/remove claim.
    """
    if claim.adjacency != "add_remove" or "sensitivity" not in release.params:
        return release
    value = release.params["sensitivity"]
    declared = value if isinstance(value, Mapping) else {"add_remove": value}
    name = release.label or release.mechanism
    findings.append(
        f"{name}: batches of fixed size under add/remove adjacency — adding a record pushes "
        "another out of its batch, so the runs differ by a substitution; accounted with the "
        "replace-one sensitivity."
    )
    return replace(release, params={**release.params, "sensitivity": declared})


def _release_event(release: Release, claim: Claim, findings: list[str]) -> tuple[ev.Event, bool]:
    """The release's event, and whether it was accounted without (unproved) amplification."""
    if release.mechanism == DP_ACCOUNTING:  # a dp_accounting event: its own sampling, count
        return dp_accounting_event(release, claim), False
    if release.sampling in ("shuffled", "fixed_batches"):
        release = _batch_release(release, claim, findings)
        base = _base_event(release, "replace_one", findings)
    else:
        base = _base_event(release, claim.adjacency, findings)
    name = release.label or release.mechanism
    count = release.count
    if release.sampling == "poisson":
        assert release.sampling_rate is not None
        if claim.adjacency != "add_remove":
            raise UnsupportedReleaseError(
                f"{name}: Poisson subsampling is analysed under add/remove adjacency; no "
                "replace-one amplification for it is implemented (a replace-one neighbour is "
                "a group of two add/remove changes). Declare the claim under add_remove."
            )
        base = ev.PoissonSampled(base, rate=release.sampling_rate)
    elif release.sampling == "without_replacement":
        assert release.batch_size is not None and release.population is not None
        if claim.adjacency != "replace_one":
            raise UnsupportedReleaseError(
                f"{name}: sampling a fixed-size batch without replacement is analysed under "
                "replace-one adjacency (Wang, Balle & Kasiviswanathan 2019); under "
                "add/remove the batch composition itself changes. Declare the claim under "
                "replace_one."
            )
        base = ev.SampledWithoutReplacement(base, release.batch_size, release.population)
    elif release.sampling in ("shuffled", "fixed_batches"):
        rate = release.sampling_rate
        if release.batch_size is not None and release.population is not None:
            # an epoch is ⌈N/B⌉ steps (the last batch may be short): 14,100 steps of
            # batch 256 over 60,000 records are 60 epochs (Opacus' convention)
            per_epoch = -(-release.population // release.batch_size)
            epochs = -(-count // per_epoch)
            rate = release.batch_size / release.population
        else:
            assert rate is not None
            epochs = max(1, math.ceil(count * rate - 1e-9))
        kind = "shuffled" if release.sampling == "shuffled" else "fixed"
        if kind == "fixed" and claim.adjacency == "add_remove":
            # Without a shuffle, where the added record lands is the adversary's choice:
            # inserted first, it shifts every later record by one slot, so *every* batch
            # differs by one substitution — one release per step, not per epoch.
            findings.append(
                f"{name}: fixed (unshuffled) batches under add/remove — an added record can "
                "shift every later record into the next batch, so every step's batch may "
                f"differ by a substitution: accounted as all {count} steps, without "
                "amplification (no amplification theorem covers fixed batches)."
            )
            return (base * count if count > 1 else base), True
        # A shuffle couples the neighbours so that they differ in at most one slot per
        # epoch: the added record takes a uniformly random slot and its occupant is left
        # out (or the added record itself is left out). By joint convexity of the
        # hockey-stick divergence over that coupling, each epoch is at most one release of
        # one substitution; with a fixed partition under replace-one the replaced record is
        # likewise in one batch per epoch.
        findings.append(
            f"{name}: {kind} batches have no amplification theorem (the amplification "
            "results are for Poisson sampling or sampling without replacement, and shuffled "
            "batches can leak far more than Poisson accounting says: Chua et al. 2024). "
            f"Accounted without amplification: each record is in one batch per epoch, so "
            f"{count} steps at rate {rate:g} are {epochs} unsampled release(s) per record."
        )
        return (base * epochs if epochs > 1 else base), True
    return (base * count if count > 1 else base), False
