"""Pipeline declarations: what a pipeline claims, and what it releases.

A declaration is a TOML file (or the same structure as a Python dict) with one
``[claim]`` table and one ``[[release]]`` table per kind of release::

    [claim]
    epsilon = 1.0
    delta = 1e-5
    adjacency = "add_remove"     # or "replace_one"
    notion = "approx_dp"         # pure_dp | approx_dp | zcdp (rho) | mcdp (mu, tau)
                                 # | rdp (alpha, epsilon) | gdp (mu)

    [[release]]
    mechanism = "gaussian"
    sigma = 4.0
    sensitivity = 1.0            # or { add_remove = 1.0, replace_one = 2.0 }
    count = 100
    sampling = "poisson"         # poisson | without_replacement | shuffled | fixed_batches
    sampling_rate = 0.01
    label = "gradient steps"

Validation is strict: unknown keys, missing or mistyped parameters and impossible values
are all reported at once, each with its line in the file (:class:`PipelineError`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpledger._public import namespace
from dpledger.audit._problems import MAX_COUNT, KeyLines, is_number, kind, suggest
from dpledger.errors import PipelineError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "ADJACENCIES",
    "MECHANISMS",
    "NOTIONS",
    "SAMPLING",
    "Claim",
    "Pipeline",
    "PipelineError",
    "Release",
    "load_pipeline",
    "parse_pipeline",
]

ADJACENCIES = ("add_remove", "replace_one")
NOTIONS = ("approx_dp", "pure_dp", "zcdp", "mcdp", "rdp", "gdp")
SAMPLING = ("none", "poisson", "without_replacement", "shuffled", "fixed_batches")

#: mechanism → (required parameters, optional parameters). Noise parameters may instead
#: come from ``calibration`` (see :data:`CALIBRATIONS`).
MECHANISMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gaussian": (("sensitivity",), ("sigma",)),
    "laplace": (("sensitivity",), ("scale",)),
    "discrete_gaussian": (("sigma", "sensitivity"), ("dimension",)),
    "discrete_laplace": (("scale", "sensitivity"), ("dimension",)),
    "randomized_response": (("epsilon",), ("categories",)),
    "exponential": (("epsilon",), ()),
    "report_noisy_max": (("epsilon",), ()),
    "permute_and_flip": (("epsilon",), ()),
    "pure_dp": (("epsilon",), ()),
    "approx_dp": (("epsilon", "delta"), ()),
    "zcdp": (("rho",), ()),
    "mcdp": (("mu", "tau"), ()),
    "gdp": (("mu",), ()),
    "wishart": (("epsilon",), ()),
}

#: ``calibration`` values: how a published pipeline chose its noise from a per-release
#: (epsilon, delta). The auditor recomputes the noise with the formula, then accounts for
#: the noise — never for the per-release claim.
CALIBRATIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "gaussian": {"classical": ("epsilon", "delta"), "analytic": ("epsilon", "delta")},
    "laplace": {"standard": ("epsilon",)},
}
#: With a calibration, ``noise_sensitivity`` (optional) is the Δ the *formula* used, when
#: it differs from the true sensitivity under the claim's adjacency (e.g. a paper that
#: calibrated for add/remove but claims replace-one).

_RELEASE_COMMON: tuple[str, ...] = (
    *("mechanism", "count", "epochs", "sampling", "sampling_rate", "batch_size"),
    *("population", "label", "calibration", "note"),
)
_CLAIM_KEYS: tuple[str, ...] = (
    *("epsilon", "delta", "adjacency", "notion", "rho", "mu", "tau", "alpha"),
    *("name", "source", "note"),
)


@dataclass(frozen=True)
class Claim:
    """What a pipeline claims: a notion, its parameters, and the adjacency."""

    adjacency: str
    notion: str = "approx_dp"
    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    mu: float | None = None
    tau: float | None = None
    alpha: float | None = None
    name: str = ""
    source: str = ""
    note: str = ""

    def describe(self) -> str:
        """The claim in words, e.g. ``(ε = 1, δ = 1e-05)-DP under add/remove``."""
        adj = "add/remove" if self.adjacency == "add_remove" else "replace-one"
        if self.notion in ("approx_dp", "pure_dp"):
            text = f"(ε = {self.epsilon:g}, δ = {self.delta:g})-DP"
        elif self.notion == "zcdp":
            text = f"ρ = {self.rho:g} zCDP"
        elif self.notion == "mcdp":
            text = f"(μ = {self.mu:g}, τ = {self.tau:g})-mean-concentrated DP"
        elif self.notion == "rdp":
            text = f"(α = {self.alpha:g}, ε = {self.epsilon:g})-Rényi DP"
        else:
            text = f"μ = {self.mu:g} Gaussian DP"
        return f"{text} under {adj} adjacency"


@dataclass(frozen=True)
class Release:
    """One declared kind of release (validated; parameters as given)."""

    mechanism: str
    params: Mapping[str, Any]
    count: int = 1
    sampling: str = "none"
    sampling_rate: float | None = None
    batch_size: int | None = None
    population: int | None = None
    calibration: str | None = None
    label: str = ""
    line: int | None = None

    def describe(self) -> str:
        """A short human-readable description of the mechanism and its parameters."""
        shown = []
        for key, value in self.params.items():
            if isinstance(value, Mapping):
                inner = ", ".join(f"{k}={v:g}" for k, v in value.items())
                shown.append(f"{key}={{{inner}}}")
            else:
                shown.append(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}")
        if self.calibration:
            shown.append(f"calibration={self.calibration}")
        return f"{self.mechanism}({', '.join(shown)})"

    def describe_sampling(self) -> str:
        """The sampling scheme in words."""
        if self.sampling == "none":
            return "—"
        if self.sampling == "without_replacement":
            return f"without replacement {self.batch_size}/{self.population}"
        rate = self.sampling_rate
        if rate is None and self.batch_size and self.population:
            rate = self.batch_size / self.population
        return f"{self.sampling} q={rate:g}"


@dataclass(frozen=True)
class Pipeline:
    """A validated declaration."""

    claim: Claim
    releases: tuple[Release, ...]
    source: str = "pipeline"
    text: str | None = field(default=None, repr=False)


def load_pipeline(path: str | Path) -> Pipeline:
    """Read and validate a TOML declaration (:class:`PipelineError` lists every problem)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PipelineError(
            [(None, f"cannot read {str(path)!r}: {exc.strerror}")], str(path)
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise PipelineError(
            [(line, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column}")],
            str(path),
        ) from exc
    return parse_pipeline(text, source=str(path))


def parse_pipeline(declaration: str | Mapping[str, Any], *, source: str = "pipeline") -> Pipeline:
    """Validate a declaration given as TOML text or as a dict of the same structure."""
    text: str | None = None
    if isinstance(declaration, str):
        text = declaration
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            match = re.search(r"line (\d+)", str(exc))
            line = int(match.group(1)) if match else None
            raise PipelineError([(line, f"not valid TOML: {exc}")], source) from exc
    elif isinstance(declaration, Mapping):
        data = dict(declaration)
    else:
        raise PipelineError(
            [(None, f"a declaration is TOML text or a dict; found {type(declaration).__name__}")],
            source,
        )
    return _Validator(data, text, source).run()


class _Validator:
    def __init__(self, data: dict[str, Any], text: str | None, source: str) -> None:
        self.data, self.text, self.source = data, text, source
        self.lines = KeyLines(text)
        self.problems: list[tuple[int | None, str]] = []

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append((line, message))

    def unknown_keys(
        self,
        table: Any,
        known: Any,
        line: Any,
        where: str,
        allowed: str,
        what: str = "",
    ) -> None:
        """A problem for each key of ``table`` not in ``known``, with a suggestion."""
        for key in table:
            if key not in known:
                self.problem(
                    line(key),
                    f"{where}: unknown key {key!r}{suggest(key, known)}{what} (allowed: {allowed})",
                )

    def run(self) -> Pipeline:
        for key in self.data:
            if key not in ("claim", "release"):
                self.problem(
                    self.lines.tables.get(key),
                    f"unknown table [{key}] (expected [claim] and [[release]])"
                    + suggest(key, ("claim", "release")),
                )
        claim = self._claim()
        releases = self._releases(claim.adjacency if claim else None)
        if self.problems:
            raise PipelineError(self.problems, self.source)
        assert claim is not None
        return Pipeline(claim, tuple(releases), self.source, self.text)

    # ------------------------------------------------------------------ claim
    def _claim(self) -> Claim | None:
        raw = self.data.get("claim")
        if raw is None:
            self.problem(None, "missing [claim] table")
            return None
        if not isinstance(raw, Mapping):
            self.problem(self.lines.of_claim(), "[claim] must be a table")
            return None
        line = self.lines.of_claim
        self.unknown_keys(raw, _CLAIM_KEYS, line, "[claim]", ", ".join(_CLAIM_KEYS))
        adjacency = raw.get("adjacency")
        if adjacency is None:
            self.problem(
                line(), '[claim]: \'adjacency\' is required: "add_remove" or "replace_one"'
            )
        elif not isinstance(adjacency, str) or adjacency not in ADJACENCIES:
            self.problem(
                line("adjacency"),
                f"[claim]: adjacency must be one of {ADJACENCIES}; found {adjacency!r}",
            )
        notion = raw.get("notion", "approx_dp")
        if not isinstance(notion, str) or notion not in NOTIONS:
            self.problem(
                line("notion"), f"[claim]: notion must be one of {NOTIONS}; found {notion!r}"
            )
            return None
        values: dict[str, Any] = {}
        needed = {
            "approx_dp": ("epsilon", "delta"),
            "pure_dp": ("epsilon",),
            "zcdp": ("rho",),
            "mcdp": ("mu", "tau"),
            "rdp": ("alpha", "epsilon"),
            "gdp": ("mu",),
        }[notion]
        for key in needed:
            if key not in raw:
                self.problem(line(), f"[claim]: notion {notion!r} needs {key!r}")
        for key in ("epsilon", "delta", "rho", "mu", "tau", "alpha"):
            if key not in raw:
                continue
            value = raw[key]
            if not is_number(value) or value < 0:
                self.problem(
                    line(key),
                    f"[claim]: {key} must be a finite number ≥ 0; found {kind(value)}",
                )
                continue
            if key == "delta" and value >= 1:
                self.problem(line(key), f"[claim]: delta must be < 1; found {value!r}")
                continue
            if key == "alpha" and value <= 1:
                self.problem(line(key), f"[claim]: alpha must be > 1; found {value!r}")
                continue
            if key not in needed and not (key == "delta" and notion == "pure_dp"):
                self.problem(line(key), f"[claim]: {key!r} does not apply to notion {notion!r}")
                continue
            values[key] = float(value)
        if notion == "pure_dp" and values.get("delta", 0.0) != 0.0:
            self.problem(line("delta"), "[claim]: notion 'pure_dp' means delta = 0")
        for key in ("name", "source", "note"):
            if key in raw and not isinstance(raw[key], str):
                self.problem(line(key), f"[claim]: {key} must be a string")
        if not isinstance(adjacency, str) or adjacency not in ADJACENCIES:
            return None
        strings = {k: raw[k] for k in ("name", "source", "note") if isinstance(raw.get(k), str)}
        return Claim(adjacency=adjacency, notion=notion, **values, **strings)

    # --------------------------------------------------------------- releases
    def _releases(self, adjacency: str | None) -> list[Release]:
        raw = self.data.get("release")
        if raw is None:
            self.problem(None, "no [[release]] tables: declare at least one release")
            return []
        if isinstance(raw, Mapping):
            raw = [raw]
        if not isinstance(raw, list) or not raw:
            self.problem(None, "[[release]] must be an array of tables")
            return []
        out = []
        for index, table in enumerate(raw):
            release = self._release(index, table)
            if release is not None:
                out.append(release)
        return out

    def _release(self, index: int, table: Any) -> Release | None:
        where = f"release #{index + 1}"

        def line(key: str = "") -> int | None:
            return self.lines.of_release(index, key)

        if not isinstance(table, Mapping):
            self.problem(line(), f"{where}: must be a table")
            return None
        before = len(self.problems)
        mechanism = table.get("mechanism")
        if mechanism is None:
            self.problem(
                line(), f"{where}: 'mechanism' is required (one of {', '.join(MECHANISMS)})"
            )
            return None
        if not isinstance(mechanism, str) or mechanism not in MECHANISMS:
            found = repr(mechanism) if isinstance(mechanism, str) else kind(mechanism)
            self.problem(
                line("mechanism"),
                f"{where}: unknown mechanism {found}{suggest(mechanism, MECHANISMS)} (one of "
                f"{', '.join(MECHANISMS)})",
            )
            # still check the keys every mechanism shares, so all problems come at once
            every = set(_RELEASE_COMMON) | {k for r, o in MECHANISMS.values() for k in (*r, *o)}
            for key in table:
                if key not in every | {"noise_sensitivity", "epsilon", "delta"}:
                    self.problem(line(key), f"{where}: unknown key {key!r}{suggest(key, every)}")
            self._count(table, where, line)
            return None
        required, optional = MECHANISMS[mechanism]
        calibration = table.get("calibration")
        calib_keys: tuple[str, ...] = ()
        if calibration is not None:
            allowed = CALIBRATIONS.get(mechanism, {})
            if not isinstance(calibration, str) or calibration not in allowed:
                choices = ", ".join(allowed) if allowed else "none for this mechanism"
                self.problem(
                    line("calibration"),
                    f"{where}: unknown calibration {calibration!r} for {mechanism} ({choices})",
                )
            else:
                calib_keys = allowed[calibration]
        noise_key = {"gaussian": "sigma", "laplace": "scale"}.get(mechanism)
        if noise_key is not None:
            if calibration is None and noise_key not in table:
                self.problem(
                    line(),
                    f"{where}: {mechanism} needs {noise_key!r} "
                    "(or a 'calibration' with its epsilon/delta)",
                )
            if calibration is not None and noise_key in table:
                self.problem(
                    line(noise_key),
                    f"{where}: give either {noise_key!r} or 'calibration', not both",
                )
        known = set(_RELEASE_COMMON) | set(required) | set(optional) | set(calib_keys)
        if calibration is not None:
            known.add("noise_sensitivity")
        keys = ", ".join(sorted(known))
        self.unknown_keys(table, known, line, where, keys, f" for mechanism {mechanism!r}")
        params: dict[str, Any] = {}
        for key in (*required, *calib_keys):
            if key not in table:
                self.problem(line(), f"{where}: {mechanism} needs {key!r}")
        extra = ("noise_sensitivity",) if calibration is not None else ()
        for key in (*required, *optional, *calib_keys, *extra):
            if key not in table:
                continue
            value = table[key]
            if key == "sensitivity":
                params[key] = self._sensitivity(value, where, line(key))
            elif key in ("categories", "dimension"):
                least = 2 if key == "categories" else 1
                if (
                    not isinstance(value, int)
                    or isinstance(value, bool)
                    or not least <= value <= MAX_COUNT
                ):
                    self.problem(
                        line(key),
                        f"{where}: {key} must be an integer from {least} to 2**63 − 1; found "
                        f"{kind(value)}",
                    )
                params[key] = value
            else:
                if not is_number(value) or value < 0:
                    self.problem(
                        line(key),
                        f"{where}: {key} must be a finite number ≥ 0; found {kind(value)}",
                    )
                elif (
                    key in ("sigma", "scale", "mu", "tau", "noise_sensitivity", "rho")
                    and value == 0
                ):
                    what = "releases nothing" if key == "rho" else "is no noise at all"
                    self.problem(line(key), f"{where}: {key} must be positive ({key} = 0 {what})")
                elif key == "delta" and value >= 1:
                    self.problem(line(key), f"{where}: delta must be < 1; found {value!r}")
                params[key] = float(value) if is_number(value) else value
        count = self._count(table, where, line)
        sampling = table.get("sampling", "none")
        rate = table.get("sampling_rate")
        batch = table.get("batch_size")
        population = table.get("population")
        if not isinstance(sampling, str) or sampling not in SAMPLING:
            self.problem(
                line("sampling"), f"{where}: sampling must be one of {SAMPLING}; found {sampling!r}"
            )
        if rate is not None and (not is_number(rate) or not 0 < rate <= 1):
            self.problem(
                line("sampling_rate"), f"{where}: sampling_rate must be in (0, 1]; found {rate!r}"
            )
        for key, value in (("batch_size", batch), ("population", population)):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_COUNT
            ):
                self.problem(
                    line(key),
                    f"{where}: {key} must be an integer from 1 to 2**63 − 1; found {kind(value)}",
                )
        if sampling == "poisson" and rate is None:
            self.problem(line("sampling"), f"{where}: Poisson sampling needs 'sampling_rate'")
        if sampling == "without_replacement" and (batch is None or population is None):
            self.problem(
                line("sampling"),
                f"{where}: sampling without replacement needs 'batch_size' and 'population'",
            )
        if (
            sampling in ("shuffled", "fixed_batches")
            and rate is None
            and (batch is None or population is None)
        ):
            self.problem(
                line("sampling"),
                f"{where}: {sampling} batches need 'sampling_rate' (batch/population) "
                "or 'batch_size' and 'population'",
            )
        if sampling == "none" and (rate is not None or batch is not None):
            self.problem(
                line("sampling_rate" if rate is not None else "batch_size"),
                f"{where}: a sampling parameter is given but 'sampling' is not",
            )
        if isinstance(batch, int) and isinstance(population, int) and batch > population:
            self.problem(
                line("batch_size"), f"{where}: batch_size {batch} exceeds population {population}"
            )
        label = table.get("label", "")
        if not isinstance(label, str):
            self.problem(line("label"), f"{where}: label must be a string")
            label = ""
        if len(self.problems) > before:
            return None
        return Release(
            mechanism=mechanism,
            params=params,
            count=count,
            sampling=sampling,
            sampling_rate=float(rate) if rate is not None else None,
            batch_size=batch,
            population=population,
            calibration=calibration,
            label=label,
            line=line(),
        )

    def _count(self, table: Mapping[str, Any], where: str, line: Any) -> Any:
        """``count`` (default 1), or ``epochs`` × ⌈population / batch_size⌉ steps.

        The Opacus convention: an epoch is ⌈N/B⌉ steps, so 60 epochs of batch 256 over
        60,000 records are 14,100 steps.
        """
        count = table.get("count", 1)
        epochs = table.get("epochs")
        if epochs is not None:
            batch, population = table.get("batch_size"), table.get("population")
            ok = all(
                isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_COUNT
                for v in (epochs, batch, population)
            )
            if "count" in table:
                self.problem(line("epochs"), f"{where}: give 'count' or 'epochs', not both")
            elif not ok:
                self.problem(
                    line("epochs"),
                    f"{where}: 'epochs' needs integer epochs, batch_size and population ≥ 1; "
                    f"found epochs = {kind(epochs)}",
                )
            else:
                assert isinstance(population, int) and isinstance(batch, int)
                count = epochs * -(-population // batch)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
            self.problem(
                line("count"),
                f"{where}: count must be an integer from 1 to 2**63 − 1; found {kind(count)}",
            )
        return count

    def _sensitivity(self, value: Any, where: str, line: int | None) -> Any:
        if is_number(value):
            if value <= 0:
                self.problem(
                    line, f"{where}: sensitivity must be a positive finite number; found {value!r}"
                )
            return float(value)
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                if key not in ADJACENCIES:
                    self.problem(
                        line,
                        f"{where}: sensitivity table keys are {ADJACENCIES}; found "
                        f"{key!r}{suggest(key, ADJACENCIES)}",
                    )
                elif not is_number(item) or item <= 0:
                    self.problem(
                        line,
                        f"{where}: sensitivity.{key} must be a positive number; found {item!r}",
                    )
                else:
                    out[key] = float(item)
            if not value:
                self.problem(line, f"{where}: sensitivity table is empty")
            return out
        self.problem(
            line,
            f"{where}: sensitivity must be a positive finite number or a table by adjacency; "
            f"found {kind(value)}",
        )
        return value


__dir__ = namespace(__all__)
