"""What the d_min experiments compute: setups, profiles and tasks (:ref:`ch-experiments`).

* the twelve setups ``(k, gamma, eps1, eps2)`` and their ``d`` grids (the paper's own are not
  recoverable, see :data:`SETUPS`), and two profiles, ``quick`` (tests, minutes) and ``paper``
  (the shipped data);
* tasks (one per figure, setup, ``L`` and ``Q``) with seeds derived from the task's identity by
  one :class:`numpy.random.SeedSequence`, so results do not depend on ``--jobs`` or on which tasks
  were already done.

References
----------
Section 4 and Figures 3-5 of Likhosherstov, Choromanski & Weller (2021); :ref:`ch-experiments`.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass

import numpy as np

from .engine import ENGINE_VERSION

__all__ = [
    "FIGURES",
    "L_RANGE",
    "PROFILES",
    "ROOT_SEED",
    "SETUPS",
    "ExperimentError",
    "Profile",
    "Setup",
    "Task",
    "get_profile",
    "grid_values",
    "make_tasks",
]

FIGURES = ("fig3", "fig4", "fig5")
#: Supported sequence lengths of the experiments (inclusive).
L_RANGE = (64, 32768)
ROOT_SEED = 20210607  # arXiv v1 date of the paper; the one root of every random number here


class ExperimentError(ValueError):
    """Bad experiment request (unknown figure or setup, bad grid, L out of range)."""


# ----------------------------------------------------------------------------- setups
@dataclass(frozen=True)
class Setup:
    """One panel of Figure 3: the pattern class ``(k, gamma)`` and tolerances ``(eps1, eps2)``."""

    name: str
    k: int
    gamma: float
    eps1: float
    eps2: float

    def params(self) -> dict:
        return {"k": self.k, "gamma": self.gamma, "eps1": self.eps1, "eps2": self.eps2}

    def key(self) -> int:
        """An integer naming the setup's parameters (not its name or position)."""
        s = f"k={self.k};gamma={self.gamma!r};eps1={self.eps1!r};eps2={self.eps2!r}"
        return int.from_bytes(hashlib.sha256(s.encode()).digest()[:4], "big")


def _setup(k, gamma, eps1, eps2) -> Setup:
    return Setup(f"k{k}-g{gamma:g}-e{eps1:g}-{eps2:g}", k, float(gamma), float(eps1), float(eps2))


#: The book's twelve setups (the paper's are not recoverable; see :ref:`ch-experiments`). They span
#: k in {1, 2, 3, 4}, gamma in {1, 2} (gamma plays no role when k = 1: a row with one nonzero has
#: no ratios) and five tolerance pairs, all loose enough that d_min stays well below L on
#: 512..3072 (tight tolerances push d_min towards L; spec of the book, 8.8).
SETUPS: dict[str, Setup] = {s.name: s for s in [
    _setup(1, 1, 3.0, 0.9),
    _setup(1, 1, 7.0, 0.5),
    _setup(1, 1, 3.0, 0.5),
    _setup(1, 1, 7.0, 0.25),
    _setup(2, 1, 3.0, 0.9),
    _setup(2, 2, 3.0, 0.9),
    _setup(2, 1, 7.0, 0.5),
    _setup(2, 2, 7.0, 0.5),
    _setup(3, 1, 7.0, 0.9),
    _setup(3, 2, 7.0, 0.9),
    _setup(4, 1, 7.0, 0.9),
    _setup(4, 2, 7.0, 0.9),
]}


@dataclass(frozen=True)
class Profile:
    """Lengths, ``d`` grids and budgets of one run of the experiments."""

    name: str
    lengths: tuple
    grids: dict            # setup name -> (start, stop, step), inclusive stop
    Q: float
    fig4_setups: tuple
    fig4_Q: tuple
    fig4_lengths: tuple
    fig5: dict
    description: str
    out: str = "data/quick"  # default output folder of ``reproduce`` for this profile

    def grid(self, setup: str) -> tuple:
        return self.grids[setup]


def grid_values(grid) -> list[int]:
    """The widths of an inclusive grid ``(start, stop, step)``."""
    start, stop, step = grid
    return list(range(start, stop + 1, step))


#: d grids of the paper profile: start about 0.65 x a pilot estimate of d_min at L = 512 (levels
#: far below d_min are rejected cheaply by the partial draws), step about 8% of that estimate
#: (2 to 12), generous stop (never reached).
_PAPER_GRIDS = {
    "k1-g1-e3-0.9": (18, 200, 2),
    "k1-g1-e7-0.5": (32, 300, 4),
    "k1-g1-e3-0.5": (40, 300, 4),
    "k1-g1-e7-0.25": (54, 400, 6),
    "k2-g1-e3-0.9": (42, 400, 6),
    "k2-g2-e3-0.9": (54, 400, 6),
    "k2-g1-e7-0.5": (64, 400, 8),
    "k2-g2-e7-0.5": (72, 400, 8),
    "k3-g1-e7-0.9": (64, 480, 8),
    "k3-g2-e7-0.9": (72, 480, 8),
    "k4-g1-e7-0.9": (80, 480, 10),
    "k4-g2-e7-0.9": (96, 480, 12),
}

_QUICK_GRIDS = {
    "k1-g1-e3-0.9": (12, 128, 4),
    "k1-g1-e7-0.5": (20, 128, 4),
    "k1-g1-e3-0.5": (24, 128, 4),
    "k1-g1-e7-0.25": (24, 128, 4),
    "k2-g1-e3-0.9": (24, 128, 4),
    "k2-g2-e3-0.9": (28, 128, 4),
    "k2-g1-e7-0.5": (32, 128, 4),
    "k2-g2-e7-0.5": (32, 128, 4),
    "k3-g1-e7-0.9": (36, 128, 4),
    "k3-g2-e7-0.9": (36, 128, 4),
    "k4-g1-e7-0.9": (36, 128, 4),
    "k4-g2-e7-0.9": (40, 128, 4),
}

PROFILES: dict[str, Profile] = {
    "paper": Profile(
        name="paper",
        lengths=tuple(range(512, 3072 + 1, 256)),
        grids=_PAPER_GRIDS,
        Q=0.1,
        fig4_setups=("k1-g1-e3-0.9", "k2-g1-e3-0.9"),
        fig4_Q=(0.1, 0.25, 0.5, 1.0, 2.0, 5.0),
        fig4_lengths=(512, 1024, 1536),
        fig5={"setup": "k2-g2-e7-0.5", "L": 128, "d_grid": (4, 128, 4)},
        description=("The data the book ships: the paper's L grid 512..3072 step 256 and twelve "
                     "setups of the book; Figure 3 uses ceil(L/10) draws per width (Q = 0.1, "
                     "reduced from the paper's Q = 1 to fit two shared CPU cores; Figure 4 "
                     "measures the effect of Q from 0.1 to 5 on two setups, L = 512..1536)."),
        out="data",
    ),
    "paper-q1": Profile(
        name="paper-q1",
        lengths=tuple(range(512, 3072 + 1, 256)),
        grids=_PAPER_GRIDS,
        Q=1.0,
        fig4_setups=("k1-g1-e3-0.9", "k2-g1-e3-0.9"),
        fig4_Q=(1.0,),
        fig4_lengths=(512, 1024, 1536),
        fig5={"setup": "k2-g2-e7-0.5", "L": 128, "d_grid": (4, 128, 4)},
        description=("Figure 3 as the paper ran it: the same twelve setups, L grid and d grids as "
                     "the paper profile, with the paper's budget of ceil(L) draws per width "
                     "(Q = 1). The same targets and the same first draws as the Q = 0.1 data, so "
                     "d_min can only decrease."),
        out="data/q1",
    ),
    "quick": Profile(
        name="quick",
        lengths=(128, 192, 256),
        grids=_QUICK_GRIDS,
        Q=0.5,
        fig4_setups=("k1-g1-e3-0.9", "k2-g1-e3-0.9"),
        fig4_Q=(0.1, 0.5, 1.0),
        fig4_lengths=(128, 256),
        fig5={"setup": "k2-g2-e7-0.5", "L": 64, "d_grid": (4, 64, 4)},
        description="A small run for tests and a first look (minutes on 2 cores); not the paper's L.",
    ),
}


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One (figure, setup, L, Q) measurement of d_min."""

    figure: str
    setup: Setup
    L: int
    Q: float
    grid: tuple
    root_seed: int = ROOT_SEED

    @property
    def task_id(self) -> str:
        return f"{self.figure}_{self.setup.name}_L{self.L}_Q{self.Q:g}"

    @property
    def n_draws(self) -> int:
        return max(1, math.ceil(self.Q * self.L))

    def target_key(self) -> tuple:
        """Seed key of the target A: the setup's parameters and L (shared by Figures 3 and 4)."""
        return (self.setup.key(), self.L, 0)

    def draw_key(self) -> tuple:
        """Prefix of the draws' seed keys; draw i at width d uses ``draw_key() + (d, i)``.

        It does not contain Q or the figure: the first ``ceil(Q L)`` draws at each width are the
        same for every Q, so d_min is pathwise non-increasing in Q (Figure 4).
        """
        return (self.setup.key(), self.L, 1)

    def params(self) -> dict:
        return {"figure": self.figure, "setup": self.setup.name, **self.setup.params(),
                "L": self.L, "Q": self.Q, "n_draws": self.n_draws, "grid": list(self.grid),
                "root_seed": self.root_seed, "target_key": list(self.target_key()),
                "draw_key": list(self.draw_key()), "engine": ENGINE_VERSION}


def _parse_setups(setups) -> list[Setup]:
    if setups is None:
        return list(SETUPS.values())
    if isinstance(setups, str):
        setups = [setups]
    try:
        setups = list(setups)
    except TypeError:
        raise ExperimentError(f"setups must be a list of setup names, got {setups!r}") from None
    names = []
    for item in setups:
        names += [s for s in str(item).replace(",", " ").split() if s]
    if not names:
        raise ExperimentError("setups must name at least one setup; valid names: "
                              + ", ".join(SETUPS))
    bad = [n for n in names if n not in SETUPS]
    if bad:
        raise ExperimentError(f"setups: unknown setup name(s) {bad}; valid names: " + ", ".join(SETUPS))
    if len(set(names)) != len(names):
        raise ExperimentError(f"setups must not repeat a name, got {names}")
    return [SETUPS[n] for n in names]


def _check_lengths(lengths) -> tuple:
    try:
        lengths = list(lengths)
    except TypeError as exc:
        raise ExperimentError(f"lengths must be integers, got {lengths!r}") from exc
    if any(isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral) for x in lengths):
        raise ExperimentError(f"lengths must be integers, got {lengths!r}")
    lengths = [int(x) for x in lengths]
    if not lengths:
        raise ExperimentError("lengths must contain at least one L, got an empty list")
    for L in lengths:
        if not (L_RANGE[0] <= L <= L_RANGE[1]):
            raise ExperimentError(f"lengths: L = {L} is outside the supported range "
                                  f"[{L_RANGE[0]}, {L_RANGE[1]}]")
    if any(b <= a for a, b in zip(lengths, lengths[1:])):
        raise ExperimentError(f"lengths must be strictly increasing, got {lengths}")
    return tuple(lengths)


def _check_grid(name, grid, lengths):
    try:
        start, stop, step = (int(x) for x in grid)
    except (TypeError, ValueError) as exc:
        raise ExperimentError(f"grid of {name} must be (start, stop, step), got {grid!r}") from exc
    if step <= 0 or start < 1 or stop < start:
        raise ExperimentError(f"grid of {name} must be ascending with start >= 1 and step > 0, "
                              f"got start={start}, stop={stop}, step={step} (empty or "
                              "non-increasing)")
    if start > min(lengths):
        raise ExperimentError(f"grid of {name} starts at d = {start} > L = {min(lengths)}; "
                              "widths must satisfy d <= L")
    return (start, stop, step)


def make_tasks(figure, profile="quick", *, setups=None, lengths=None) -> list[Task]:
    """The tasks of one figure under a profile, optionally restricted.

    Parameters
    ----------
    figure : {"fig3", "fig4"}
    profile : str or Profile
    setups : list of str, optional
        Setup names (default: all twelve for Figure 3, the profile's two for Figure 4).
    lengths : list of int, optional
        Strictly increasing lengths within :data:`L_RANGE` (default: the profile's).

    Raises
    ------
    ExperimentError
        Unknown figure, profile or setup; empty or non-increasing lengths; L out of range.
    """
    prof = get_profile(profile)
    if figure not in ("fig3", "fig4"):
        raise ExperimentError(f"figure must be one of {FIGURES} (tasks exist for fig3, fig4), "
                              f"got {figure!r}")
    if figure == "fig3":
        chosen = _parse_setups(setups)
        Ls = _check_lengths(prof.lengths if lengths is None else lengths)
        Qs = (prof.Q,)
    else:
        chosen = _parse_setups(prof.fig4_setups if setups is None else setups)
        Ls = _check_lengths(prof.fig4_lengths if lengths is None else lengths)
        Qs = prof.fig4_Q
    tasks = []
    for s in chosen:
        grid = _check_grid(s.name, prof.grid(s.name), Ls)
        for Q in Qs:
            for L in Ls:
                tasks.append(Task(figure, s, L, float(Q), grid))
    return tasks


def get_profile(profile) -> Profile:
    """The profile named ``profile`` (or ``profile`` itself if it is a :class:`Profile`).

    Raises
    ------
    ExperimentError
        For an unknown name.
    """
    if isinstance(profile, Profile):
        return profile
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ExperimentError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    return PROFILES[profile]
