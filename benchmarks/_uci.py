"""The 15 UCI regression sets of Wang (2018): loading and Wang's preprocessing.

The files are NOT part of the project (never commit them). They are looked for in
``$DPLEDGER_DATA/uci`` (the project's own data folder when the variable is unset).
:func:`data_dir` returns ``None`` when the folder is absent, so a script can say so and
exit cleanly.

Every set is described by one row of :data:`SETS` (files, target column, log or not,
feature columns), exactly as the data sets' README lists them (columns 0-based).
Text files are parsed by splitting on whitespace *and* commas with universal newlines
(concrete and protein have CR-only line ends, airfoil and bike CRLF); the ``.mat`` files
hold one matrix ``data``.

:func:`preprocess` is Wang's preprocessing, as in his ``exp_uci.m`` and the data README:
centre y and divide by max|y − ȳ|; z-score each feature column (sample sd, ddof = 1, as
MATLAB's ``zscore``); scale each row to unit L2 norm. So ‖x‖ ≤ 1 and |y| ≤ 1. These
statistics come from the WHOLE data set, before any cross-validation split, as in Wang's
experiments: identical for every method compared, and NOT private (a private pipeline
must take such constants as public inputs or pay for them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _common import data_root, where_to_look


@dataclass(frozen=True)
class UciSet:
    """One data set: where it is and which columns are the target and the features."""

    folder: str
    files: tuple[str, ...]
    target: int  # column of y; negative counts from the end
    log: str = ""  # "", "log" (log y) or "log1p" (log(y + 1))
    drop: tuple[int, ...] = ()  # columns that are neither target nor feature


#: The 15 sets (README table). Features are every column except ``target`` and ``drop``.
SETS: dict[str, UciSet] = {
    s.folder: s
    for s in (
        UciSet("airfoil", ("airfoil_self_noise.dat.txt",), target=5),
        UciSet("autompg", ("auto-mpg.txt",), target=0),
        # col 0 is the row id; cols 16-17 (casual, registered) sum to cnt: kept, as Wang did
        UciSet("bike", ("hour.csv",), target=18, log="log", drop=(0,)),
        UciSet("concrete", ("Concrete_Data.txt",), target=8),
        UciSet("elevators", ("elevators.data", "elevators.test"), target=18, log="log"),
        UciSet("energy", ("energy.txt",), target=8, drop=(9,)),  # col 9: cooling load
        UciSet("housing", ("housing.txt",), target=13),
        UciSet("kin40k", ("kin40k_all.mat",), target=-1),
        UciSet("parkinsons", ("parkinsons.txt",), target=5, drop=(4,)),
        UciSet("pol", ("pol_all.mat",), target=-1),
        UciSet("protein", ("CASP.csv",), target=0, log="log1p"),
        UciSet("pumadyn32nm", ("pumadyn32nm_all.mat",), target=-1),
        UciSet("skillcraft", ("SkillCraft.txt",), target=12, log="log"),
        UciSet("wine", ("winequality-red.csv",), target=10),
        UciSet("yacht", ("yacht_hydrodynamics.data.txt",), target=6, log="log"),
    )
}

#: (rows, features) of each set after loading (the README's table; checked on load).
SHAPES = {
    "airfoil": (1503, 5),
    "autompg": (392, 7),
    "bike": (17379, 17),
    "concrete": (1030, 8),
    "elevators": (16599, 18),
    "energy": (768, 8),
    "housing": (506, 13),
    "kin40k": (40000, 8),
    "parkinsons": (5875, 20),
    "pol": (15000, 26),
    "protein": (45730, 9),
    "pumadyn32nm": (8192, 32),
    "skillcraft": (3338, 19),
    "wine": (1599, 11),
    "yacht": (308, 6),
}


def data_dir() -> Path | None:
    """The data folder (``$DPLEDGER_DATA``, or the project's own), or None if absent."""
    return data_root() if (data_root() / "uci").is_dir() else None


_SPLIT = re.compile(r"[\s,]+")


def _read_text(path: Path) -> np.ndarray:
    rows = []
    with open(path, newline=None) as handle:  # universal newlines: CR, LF and CRLF
        for line in handle:
            fields = [f for f in _SPLIT.split(line.strip()) if f]
            if fields:
                rows.append([float(f) for f in fields])
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValueError(f"{path}: rows have different numbers of fields {sorted(widths)}")
    return np.array(rows, dtype=float)


def _read(path: Path) -> np.ndarray:
    if path.suffix == ".mat":
        from scipy.io import loadmat

        return np.asarray(loadmat(path)["data"], dtype=float)
    return _read_text(path)


def load(name: str, folder: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The raw features and target of set ``name`` (target log-transformed where listed)."""
    spec = SETS[name]
    folder = folder or data_dir()
    if folder is None:
        raise FileNotFoundError(f"UCI data not found (looked in {where_to_look()})")
    data = np.vstack([_read(folder / "uci" / spec.folder / f) for f in spec.files])
    width = data.shape[1]
    target = spec.target % width
    drop = {target, *(c % width for c in spec.drop)}
    y = data[:, target]
    X = data[:, [c for c in range(width) if c not in drop]]
    if spec.log == "log":
        y = np.log(y)
    elif spec.log == "log1p":
        y = np.log(y + 1.0)
    X = np.where(np.isnan(X), 0.0, X)  # Wang: NaN -> 0 (no set here has any)
    if (X.shape[0], X.shape[1]) != SHAPES[name]:
        raise ValueError(f"{name}: loaded shape {X.shape}, expected {SHAPES[name]}")
    return X, y


def preprocess(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wang's preprocessing with whole-data statistics (not private; see module docstring)."""
    yc = y - y.mean()
    ys = yc / np.max(np.abs(yc))
    sd = X.std(axis=0, ddof=1)
    Xz = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    norms = np.linalg.norm(Xz, axis=1)
    Xs = Xz / np.where(norms > 0, norms, 1.0)[:, None]
    return Xs, ys


def load_preprocessed(name: str, folder: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`load` then :func:`preprocess`: ‖x‖ ≤ 1, |y| ≤ 1."""
    return preprocess(*load(name, folder))


#: Wang's own results (``code/exp_results.mat`` of github:yuxiangw/optimal_dp_linear_regression,
#: as digested in the issue-12 spec, section 5): mean 10-fold CV test MSE, one run, δ = 1e-6,
#: at ε = 0.01, 0.1, 1, 10. His non-private baseline is ridge with λ = 1 (XᵀX + I), and his
#: AdaSSP/SSP add I to XᵀX as well. Columns: trivial, ridge, AdaSSP at the four ε, SSP at them.
_WANG = """
airfoil      0.1033   0.05333  0.1245   0.09121  0.0588   0.05336  4.33    0.795   0.0537  0.0533
autompg      0.1134   0.02211  0.09405  0.1179   0.0449   0.02583  4.21    5.93    0.381   0.0223
bike         0.1073   0.0279   0.104    0.04718  0.02874  0.02792  138     0.177   0.0349  0.0279
concrete     0.1274   0.04447  0.1399   0.132    0.06369  0.04525  476     1.02    0.21    0.0448
elevators    0.03667  0.00861  0.0385   0.02613  0.01317  0.00875  8.05    2.09    5.86    0.0093
energy       0.2352   0.02324  0.3205   0.1477   0.04289  0.0255   25.5    2.4     0.119   0.0244
housing      0.112    0.03935  0.1177   0.09851  0.06799  0.04379  54.3    24      6.35    0.0399
kin40k       0.06336  0.06325  0.07479  0.06393  0.06325  0.06325  0.0711  0.0633  0.0632  0.0632
parkinsons   0.1697   0.1278   0.169    0.1543   0.133    0.1282   13.6    3.9     0.319   0.128
pol          0.3448   0.1349   0.327    0.2236   0.1398   0.1351   41.6    2.04    0.155   0.135
protein      0.1671   0.1189   0.1451   0.1259   0.1199   0.1189   0.622   1.53    0.119   0.119
pumadyn32nm  0.09347  0.09411  0.09687  0.09575  0.09551  0.09412  134     2.13    0.0943  0.0941
skillcraft   0.04387  0.02031  0.05084  0.03815  0.02426  0.02049  9.66    146     0.0588  0.0204
wine         0.05663  0.02015  0.06446  0.06269  0.03259  0.02045  8.94    3.6     0.0226  0.0202
yacht        0.1053   0.0176   0.1268   0.1177   0.0628   0.01969  65.8    596     0.057   0.0178
"""
WANG: dict[str, dict[str, object]] = {
    name: {"trivial": v[0], "ridge": v[1], "adassp": tuple(v[2:6]), "ssp": tuple(v[6:10])}
    for name, *cells in (line.split() for line in _WANG.strip().splitlines())
    for v in [[float(c) for c in cells]]
}
