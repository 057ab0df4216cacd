"""Data for the functional-mechanism benchmark: the capeFM sets and UCI Adult.

The files are NOT part of the project (never commit them). They are looked for in
``$DPLEDGER_DATA`` (the project's own data folder when the variable is unset):
``capefm/*.mat`` and ``adult/adult.{data,test,names}``. :func:`capefm_dir` and
:func:`adult_dir` return ``None`` when a folder is absent, so a script can say so and skip
that part cleanly.

capeFM sets (MATLAB v5, from the authors' code github:hafizimtiaz/capeFM): ``X`` (N × D,
‖x‖ ≤ 1), ``y`` (N × 1, in [−1, 1]) and, in *both* synthetic files, the true ``beta``
(the data README says only D = 50 has it; both do). The synthetic sets are noise-free
(y = Xβ). The files are used as given: their preprocessing (column max-abs, y / max|y|,
a global row-norm divisor) used statistics of the data and is not private; it is the
same for every method compared.

Adult: train = ``adult.data`` (32,561 rows), test = ``adult.test`` (16,281 rows; first
line a comment, labels end in "."). Label y = 1{income > 50K}. The 8 categoricals are
one-hot encoded over the levels listed in ``adult.names`` (public), with '?' as its own
level where it occurs (workclass, occupation, native-country): 102 columns, exactly one
1 per categorical. The 6 numerics are clipped to declared public ranges (:data:`RANGES`,
not data maxima) and scaled to [0, 1]. Each row is then divided by the public constant
√14 (8 one-hot ones + 6 numerics ≤ 1), so ‖x‖ ≤ 1 for every row — record-local, hence
privacy-neutral, and linear (the one-hot blocks still sum to a constant, so no intercept
column is needed). D = 108. The Gaussian FM paper uses Adult with D = 13 (not one-hot)
and a 90:10 split; this one-hot version follows the issue instead.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from _common import data_root, where_to_look

#: capeFM files by short name.
CAPEFM = {
    "synth_D_20_N_20000": "synth_D_20_N_20000.mat",
    "synth_D_50_N_10000": "synth_D_50_N_10000.mat",
    "crime": "crime_D_101_N_1800.mat",
    "twitter": "twitter_D_77_N_20000.mat",
}

#: Adult's columns (adult.names); numeric ones with their declared public ranges.
COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)
RANGES = {
    "age": (0.0, 100.0),
    "fnlwgt": (0.0, 1.5e6),
    "education-num": (0.0, 16.0),
    "capital-gain": (0.0, 1e5),
    "capital-loss": (0.0, 5000.0),
    "hours-per-week": (0.0, 100.0),
}
ROW_DIVISOR = math.sqrt(14.0)


def capefm_dir() -> Path | None:
    """The ``capefm`` folder, or None if absent."""
    folder = data_root() / "capefm"
    return folder if folder.is_dir() else None


def adult_dir() -> Path | None:
    """The ``adult`` folder, or None if absent (or incomplete)."""
    folder = data_root() / "adult"
    needed = ("adult.data", "adult.test", "adult.names")
    return folder if all((folder / f).is_file() for f in needed) else None


def load_capefm(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(X, y, beta or None) of capeFM set ``name`` (a key of :data:`CAPEFM`)."""
    from scipy.io import loadmat

    folder = capefm_dir()
    if folder is None:
        raise FileNotFoundError(f"capefm data not found (looked in {where_to_look()})")
    data = loadmat(folder / CAPEFM[name])
    X = np.asarray(data["X"], dtype=float)
    y = np.asarray(data["y"], dtype=float).ravel()
    beta = np.asarray(data["beta"], dtype=float).ravel() if "beta" in data else None
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{name}: X has {X.shape[0]} rows, y {y.shape[0]}")
    norms = np.linalg.norm(X, axis=1)
    if norms.max() > 1 + 1e-9 or np.abs(y).max() > 1 + 1e-9:
        raise ValueError(f"{name}: rows must have ‖x‖ ≤ 1 and |y| ≤ 1 (max {norms.max():.4g})")
    return X, y, beta


def _levels(folder: Path) -> dict[str, list[str]]:
    """The categorical levels listed in adult.names."""
    levels: dict[str, list[str]] = {}
    for line in (folder / "adult.names").read_text().splitlines():
        head, _, rest = line.partition(":")
        if head in COLUMNS and rest.strip() and not rest.strip().startswith("continuous"):
            levels[head] = [v.strip() for v in rest.strip().rstrip(".").split(",")]
    return levels


def _encoded_levels(folder: Path, rows: list[list[str]]) -> dict[str, list[str]]:
    """The levels each categorical column is one-hot encoded with ("?" where it occurs)."""
    levels = _levels(folder)
    for column in levels:
        if any(r[COLUMNS.index(column)] == "?" for r in rows):
            levels[column] = [*levels[column], "?"]
    return levels


def adult_layout() -> list[int]:
    """The encoded column blocks of :func:`load_adult`, in order: 1 per numeric column,
    one per level for a categorical one (the schema of the encoding, no values)."""
    folder = adult_dir()
    if folder is None:
        raise FileNotFoundError(f"adult data not found (looked in {where_to_look()})")
    rows = _read_adult(folder / "adult.data") + _read_adult(folder / "adult.test")
    levels = _encoded_levels(folder, rows)
    return [1 if column in RANGES else len(levels[column]) for column in COLUMNS]


#: ‖x‖₁ of an encoded Adult row is at most 14/√14: 14 columns, each contributing one entry
#: of size ≤ 1 (a numeric in [0, 1], or a one-hot block's single 1), divided by √14.
ADULT_L1_BOUND = len(COLUMNS) / ROW_DIVISOR


def _read_adult(path: Path) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == len(COLUMNS) + 1:
            rows.append(fields)
    return rows


def load_adult() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test): one-hot, public ranges, ‖x‖ ≤ 1, y ∈ {0, 1}."""
    folder = adult_dir()
    if folder is None:
        raise FileNotFoundError(f"adult data not found (looked in {where_to_look()})")
    train = _read_adult(folder / "adult.data")
    test = _read_adult(folder / "adult.test")
    levels = _encoded_levels(folder, train + test)

    def encode(rows: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        blocks = []
        for i, column in enumerate(COLUMNS):
            values = [r[i] for r in rows]
            if column in RANGES:
                low, high = RANGES[column]
                v = np.clip(np.array(values, dtype=float), low, high)
                blocks.append(((v - low) / (high - low))[:, None])
            else:
                index = {level: k for k, level in enumerate(levels[column])}
                onehot = np.zeros((len(rows), len(index)))
                onehot[np.arange(len(rows)), [index[v] for v in values]] = 1.0
                blocks.append(onehot)
        X = np.hstack(blocks) / ROW_DIVISOR
        y = np.array([r[-1].rstrip(".") == ">50K" for r in rows], dtype=float)
        return X, y

    Xtr, ytr = encode(train)
    Xte, yte = encode(test)
    if Xtr.shape != (32561, 108) or Xte.shape != (16281, 108):
        raise ValueError(f"adult: shapes {Xtr.shape}, {Xte.shape}; expected (32561|16281, 108)")
    return Xtr, ytr, Xte, yte
