"""The test data makers, one each (the algorithm tests share them)."""

from __future__ import annotations

import numpy as np


def unit_rows(n: int, d: int, seed: int) -> tuple[np.ndarray, np.random.Generator]:
    """n Gaussian rows in d dimensions, shrunk into the unit ball, and the generator."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, rng


def unit_direction(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random unit vector."""
    theta = rng.normal(size=d)
    return theta / np.linalg.norm(theta)


def noisy_linear(
    X: np.ndarray, theta: np.ndarray, rng: np.random.Generator, offset: float = 0.0
) -> np.ndarray:
    """y = offset + Xθ + N(0, 0.1²), clipped to [−1, 1]."""
    return np.clip(offset + X @ theta + 0.1 * rng.normal(size=len(X)), -1, 1)


def contract_data(classifier: bool, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """The estimator contract's data: 4 features in a ball of radius ~1, y in [−1, 1].

    Labels 0 and 1 (the sign of y) for a classifier.
    """
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 4)) / 2.5
    y = np.clip(X @ np.array([0.4, -0.3, 0.2, 0.1]) + 0.05 * rng.normal(size=n), -1, 1)
    return X, (y > 0).astype(float) if classifier else y
