"""The hostile-input sweep (issue 10 acceptance), run as a script in a limited subprocess.

Every public function, constructor and method (enumerated from the public namespaces)
is called with valid arguments except one, which is replaced in turn by each hostile
value; every CLI command is run with hostile flag values. Each call must return or raise
a dpledger error (a ValueError/TypeError subclass) — never another exception, never more
than ``LIMIT`` seconds (SIGALRM); the whole sweep runs under an address-space limit set
by the caller. Prints one JSON line per failure, then a summary line.

Usage: python -m tests._hostile [quick|full]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import math
import signal
import sys
import time
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

import dpledger as dpl
from dpledger import accountant, algorithms, audit, calibrate, mechanisms
from dpledger import events as ev
from dpledger.cli import main
from dpledger.errors import DPLedgerError

LIMIT = 60


class _Timeout(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _deep(depth: int) -> ev.Event:
    return functools.reduce(lambda e, _: ev.Repeated(e, 2), range(depth), ev.PureDP(0.001))


HOSTILE: list[tuple[str, Any]] = [
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("zero", 0),
    ("-1", -1),
    ("1e-300", 1e-300),
    ("1e300", 1e300),
    ("10**400", 10**400),
    ("Fraction", Fraction(10**400, 3)),
    ("np.nan", np.float64("nan")),
    ("np.int64", np.int64(3)),
    ("str", "1"),
    ("None", None),
    ("list", []),
    ("dict", {}),
    ("object", object()),
    ("bool", True),
    ("deep", _deep(3000)),
]

# valid values by parameter name (a function with a required parameter not named here is
# called with hostile values only in the parameters that have defaults or names here)
VALID: dict[str, Any] = {
    "epsilon": 1.0,
    "delta": 1e-5,
    "sigma": 2.0,
    "sensitivity": 1.0,
    "scale": 2.0,
    "count": 3,
    "rate": 0.1,
    "mu": 0.5,
    "tau": 0.5,
    "rho": 0.1,
    "xi": 0.0,
    "alpha": 2.0,
    "categories": 2,
    "dimension": 1,
    "epsilon0": 0.5,
    "delta_slack": 1e-6,
    "event": ev.Gaussian(2.0) * 3,
    "events": (ev.Gaussian(2.0), ev.PureDP(0.1)),
    "sample_size": 10,
    "population": 100,
    "p_truth": 0.7,
    "total": 1.0,
    "weights": [1.0, 2.0],
    "sensitivities": [1.0, 2.0],
    "sampling_rate": 0.1,
    "curve": lambda a: 0.5 * a,
    "factory": lambda s: mechanisms.Gaussian(s),
    "make_event": lambda s: ev.Gaussian(s) * 2,
    "trace_sensitivity": 1.0,
    "noise_scale": 1.0,
    "value": 1.0,
    "granularity": None,
    "norm": "l2",
    "noise": "exponential",
    "method": "auto",
    "grid": 1e-4,
    "initial": 1.0,
}

SKIP = {"ACCOUNTANTS", "METHODS", "VERDICTS", "events", "Accountant", "Summary", "Mechanism"}


def _callables() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for module, prefix in (
        (accountant, "accountant"),
        (calibrate, "calibrate"),
        (mechanisms, "mechanisms"),
    ):
        for name in module.__all__:
            obj = getattr(module, name)
            if name in SKIP or not callable(obj):
                continue
            if inspect.isclass(obj) and issubclass(obj, Warning):
                continue
            found.append((f"{prefix}.{name}", obj))
    for name in dir(ev):
        obj = getattr(ev, name)
        if inspect.isclass(obj) and issubclass(obj, ev.Event) and obj is not ev.Event:
            found.append((f"events.{name}", obj))
    found.append(("Ledger", dpl.Ledger))
    return found


def _signature_calls(name: str, fn: Any) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """(label, args, kwargs) for each (parameter, hostile value)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    if name.startswith("events.") and "events" in [p.name for p in params]:
        pass
    base: dict[str, Any] = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in VALID:
            base[p.name] = VALID[p.name]
        elif p.default is inspect.Parameter.empty:
            return []  # no valid value known for a required parameter
    calls = []
    for p in params:
        if p.name not in base and p.default is inspect.Parameter.empty:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        for label, value in HOSTILE:
            kwargs = {**base, p.name: value}
            calls.append((f"{name}({p.name}={label})", (), kwargs))
    return calls


def _ledger_calls() -> list[tuple[str, Any]]:
    """Methods of a Ledger, each with a hostile argument."""
    out: list[tuple[str, Any]] = []
    for label, value in HOSTILE:
        out.append((f"Ledger.spend({label})", lambda v=value: dpl.Ledger(1.0, 1e-6).spend(v)))
        out.append(
            (f"Ledger.spend(epsilon={label})", lambda v=value: dpl.Ledger(1.0).spend(epsilon=v))
        )
        out.append((f"Ledger.fits({label})", lambda v=value: dpl.Ledger(1.0, 1e-6).fits(v)))
        out.append((f"Ledger.plan([{label}])", lambda v=value: dpl.Ledger(1.0, 1e-6).plan([v])))
        out.append(
            (
                f"Ledger.calibrate(count={label})",
                lambda v=value: dpl.Ledger(1.0, 1e-6).calibrate(
                    lambda s: mechanisms.Gaussian(s), count=v
                ),
            )
        )
        out.append(
            (
                f"Ledger.calibrate(share={label})",
                lambda v=value: dpl.Ledger(1.0, 1e-6).calibrate(
                    lambda s: mechanisms.Gaussian(s), share=v
                ),
            )
        )
        out.append(
            (
                f"Ledger.release(Gaussian, {label})",
                lambda v=value: dpl.Ledger(1.0, 1e-6).release(mechanisms.Gaussian(50.0), v),
            )
        )
        out.append((f"Ledger.from_dict({label})", lambda v=value: dpl.Ledger.from_dict(v)))
        out.append((f"Ledger.open({label})", lambda v=value: dpl.Ledger.open(v)))
        out.append(
            (
                f"algorithms.mean(bounds={label})",
                lambda v=value: algorithms.mean(
                    np.arange(10.0), bounds=(0, v), ledger=dpl.Ledger(1.0, 1e-6), share=0.5
                ),
            )
        )
        out.append(
            (
                f"algorithms.count(share={label})",
                lambda v=value: algorithms.count(
                    np.arange(10.0), ledger=dpl.Ledger(1.0, 1e-6), share=v
                ),
            )
        )
        out.append(
            (
                f"audit.check_claim(epsilon={label})",
                lambda v=value: audit.check_claim(
                    {
                        "claim": {"epsilon": v, "delta": 1e-5, "adjacency": "add_remove"},
                        "release": [{"mechanism": "gaussian", "sigma": 2.0, "sensitivity": 1.0}],
                    }
                ),
            )
        )
        out.append(
            (
                f"audit.check_claim(sigma={label})",
                lambda v=value: audit.check_claim(
                    {
                        "claim": {"epsilon": 1.0, "delta": 1e-5, "adjacency": "add_remove"},
                        "release": [{"mechanism": "gaussian", "sigma": v, "sensitivity": 1.0}],
                    }
                ),
            )
        )
        out.append((f"audit.parse_pipeline({label})", lambda v=value: audit.parse_pipeline(v)))
    return out


CLI_VALUES = ["nan", "inf", "-inf", "0", "-1", "1e-300", "1e300", "1" + "0" * 400, "x", ""]


def _cli_calls() -> list[tuple[str, Any]]:
    commands = [
        ["account", "gaussian", "--sigma", "{}", "--count", "3", "--delta", "1e-5"],
        ["account", "gaussian", "--sigma", "2", "--count", "{}", "--delta", "1e-5"],
        ["account", "pure", "--epsilon0", "{}", "--count", "3", "--delta", "1e-6"],
        ["account", "laplace", "--scale", "1", "--count", "3", "--delta", "{}"],
        ["account", "gaussian", "--sigma", "2", "--sampling-rate", "{}", "--delta", "1e-5"],
        ["calibrate", "gaussian", "--epsilon", "{}", "--delta", "1e-5"],
        ["calibrate", "gaussian", "--epsilon", "1", "--delta", "{}"],
        ["calibrate", "laplace", "--epsilon", "{}"],
        ["calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "{}"],
        ["ledger", "show", "{}"],
        ["audit", "{}"],
    ]
    out: list[tuple[str, Any]] = []
    for command in commands:
        for value in CLI_VALUES:
            argv = [part.replace("{}", value) for part in command]
            out.append((f"cli {' '.join(argv)[:80]}", lambda a=argv: _run_cli(a)))
    return out


def _run_cli(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            status = main(argv)
        except SystemExit as exit_:  # argparse refusing a flag value: a clean usage error
            status = int(exit_.code or 0)
    if status not in (0, 1, 2):
        raise AssertionError(f"exit status {status}")


def run(mode: str) -> list[dict[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for name, fn in _callables():
        for label, args, kwargs in _signature_calls(name, fn):
            cases.append((label, lambda f=fn, a=args, k=kwargs: f(*a, **k)))
    cases += _ledger_calls()
    cases += _cli_calls()
    if mode == "quick":
        cases = cases[::5]
    failures = []
    signal.signal(signal.SIGALRM, _alarm)
    warnings.simplefilter("ignore")
    for label, call in cases:
        start = time.monotonic()
        signal.alarm(LIMIT)
        try:
            call()
        except DPLedgerError as error:
            if not isinstance(error, (ValueError, TypeError)):
                failures.append({"case": label, "error": f"{type(error).__name__} not Value/Type"})
        except _Timeout:
            failures.append({"case": label, "error": f"more than {LIMIT} s"})
        except Exception as error:  # the defect the sweep looks for
            failures.append({"case": label, "error": f"{type(error).__name__}: {error}"[:300]})
        finally:
            signal.alarm(0)
        elapsed = time.monotonic() - start
        if elapsed > LIMIT:
            failures.append({"case": label, "error": f"took {elapsed:.0f} s"})
    for failure in failures:
        print(json.dumps(failure, ensure_ascii=False))
    print(json.dumps({"cases": len(cases), "failures": len(failures)}))
    return failures


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "quick")
