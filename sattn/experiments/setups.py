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
from dataclasses import dataclass, replace

import numpy as np

from ..patterns.sparse import sample_sparse
from .engine import ENGINE_VERSION
from .target import draw_generator

# The flat API (``sattn.<name>``): what chapters and readers call; the rule is in the
# docstring of :mod:`sattn`.
__flat__ = ["PROFILES", "SETUPS", "ExperimentError", "Task", "make_tasks", "describe_setup"]
# The module's public names: the flat ones, then the machinery that stays in this module.
__all__ = [
    *__flat__,
    "BUDGET_RANGE",
    "FIGURES",
    "L_RANGE",
    "ROOT_SEED",
    "Profile",
    "Setup",
    "get_profile",
    "grid_values",
    "ladder_values",
    "parse_setups",
    "validate_grid",
    "validate_lengths",
]

FIGURES = ("fig3", "fig4", "fig5", "decades")
#: Supported fixed draw budgets per width of the decades experiment (inclusive).
BUDGET_RANGE = (1, 100_000)
#: Supported sequence lengths of the experiments (inclusive). The shipped data stop at 32768; the
#: fast engine runs at 65536 too (a test decides draws there; peak memory under 1 GB), and the
#: registered out-of-sample acceptance curves go to 131072.
L_RANGE = (64, 131072)
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
    # k = 1: four tolerance pairs
    _setup(1, 1, 3.0, 0.9), _setup(1, 1, 7.0, 0.5), _setup(1, 1, 3.0, 0.5), _setup(1, 1, 7.0, 0.25),
    # k = 2: two tolerance pairs, both gamma
    _setup(2, 1, 3.0, 0.9), _setup(2, 2, 3.0, 0.9), _setup(2, 1, 7.0, 0.5), _setup(2, 2, 7.0, 0.5),
    # k = 3 and 4: one tolerance pair, both gamma
    _setup(3, 1, 7.0, 0.9), _setup(3, 2, 7.0, 0.9), _setup(4, 1, 7.0, 0.9), _setup(4, 2, 7.0, 0.9),
]}


def describe_setup(name) -> str:
    """A setting's code in words, for tables and prose: ``"k1-g1-e3-0.9"`` becomes
    ``"k = 1, γ = 1, ε₁ = 3, ε₂ = 0.9"`` (at most ``k`` nonzeros per row, nonzeros 1 or
    ``gamma``, tolerances of criteria (6) and (7)).

    Parameters
    ----------
    name : str
        A key of :data:`SETUPS` (a :class:`Setup` is accepted too).

    Returns
    -------
    str

    Raises
    ------
    ExperimentError
        An unknown code (the message lists the valid ones).

    References
    ----------
    The settings are the book's (:ref:`ch-experiments`).
    """
    if isinstance(name, Setup):
        name = name.name
    if not isinstance(name, str) or name not in SETUPS:
        raise ExperimentError(f"name: unknown setting code {name!r}; valid codes: "
                              + ", ".join(SETUPS))
    s = SETUPS[name]
    return f"k = {s.k}, γ = {s.gamma:g}, ε₁ = {s.eps1:g}, ε₂ = {s.eps2:g}"


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
    decades: dict | None = None  # the decades experiment of this profile (see DECADES_PAPER)

    def grid(self, setup: str) -> tuple:
        return self.grids[setup]


def grid_values(grid) -> list[int]:
    """The widths of an inclusive grid ``(start, stop, step)``."""
    start, stop, step = grid
    return list(range(start, stop + 1, step))


def ladder_values(start, stop, rel) -> list[int]:
    """The widths of a ladder: ``d_0 = start``, ``d_{j+1} = d_j + max(1, floor(rel d_j))`` while
    ``d_j <= stop``.

    Steps of about ``rel`` of the width (one where that is less than one), so that the rounding
    of d_min to the ladder is about the same fraction of d_min at every L.

    Raises
    ------
    ExperimentError
        ``start < 1``, ``stop < start`` or ``rel`` outside ``(0, 0.5]``.
    """
    if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 1:
        raise ExperimentError(f"ladder start must be an integer >= 1, got {start!r}")
    if isinstance(stop, bool) or not isinstance(stop, numbers.Integral) or stop < start:
        raise ExperimentError(f"ladder stop must be an integer >= start = {start}, got {stop!r}")
    if isinstance(rel, bool) or not isinstance(rel, numbers.Real) or not 0 < rel <= 0.5:
        raise ExperimentError(f"ladder step rel must be a number in (0, 0.5], got {rel!r}")
    out, d = [], int(start)
    while d <= stop:
        out.append(d)
        d += max(1, math.floor(rel * d))
    return out


#: d grids (start, stop, step) per setup: the paper profile's start about 0.65 x a pilot estimate
#: of d_min at L = 512 (levels far below d_min are rejected cheaply by the partial draws), step
#: about 8% of that estimate (2 to 12), generous stop (never reached); the quick profile's grids are small.
#: setup              paper             quick
_GRIDS = {
    "k1-g1-e3-0.9":     ((18, 200, 2),     (12, 128, 4)),
    "k1-g1-e7-0.5":     ((32, 300, 4),     (20, 128, 4)),
    "k1-g1-e3-0.5":     ((40, 300, 4),     (24, 128, 4)),
    "k1-g1-e7-0.25":    ((54, 400, 6),     (24, 128, 4)),
    "k2-g1-e3-0.9":     ((42, 400, 6),     (24, 128, 4)),
    "k2-g2-e3-0.9":     ((54, 400, 6),     (28, 128, 4)),
    "k2-g1-e7-0.5":     ((64, 400, 8),     (32, 128, 4)),
    "k2-g2-e7-0.5":     ((72, 400, 8),     (32, 128, 4)),
    "k3-g1-e7-0.9":     ((64, 480, 8),     (36, 128, 4)),
    "k3-g2-e7-0.9":     ((72, 480, 8),     (36, 128, 4)),
    "k4-g1-e7-0.9":     ((80, 480, 10),    (36, 128, 4)),
    "k4-g2-e7-0.9":     ((96, 480, 12),    (40, 128, 4)),
}
_PAPER_GRIDS = {name: g[0] for name, g in _GRIDS.items()}
_QUICK_GRIDS = {name: g[1] for name, g in _GRIDS.items()}

#: The decades experiment of the paper profile (:ref:`ch-log-law`): six of the twelve setups
#: (k = 1..4, both gamma), ten lengths 64..32768, three independent targets per (setup, L), a
#: fixed budget of 16 draws per width (independent of L, so that a growing budget does not itself
#: lower d_min at large L, as ceil(Q L) does), widths on a 2% ladder from ``starts`` (L >= 512;
#: the paper grids' starts, about 0.65 x d_min at L = 512 with a larger budget) or from 2
#: (L < 512), scanned every 4th width first (see :func:`~sattn.experiments.protocol.dmin_search`).
DECADES_PAPER = {
    "setups": ("k1-g1-e3-0.9", "k2-g1-e7-0.5", "k2-g2-e7-0.5", "k3-g1-e7-0.9", "k4-g1-e7-0.9",
               "k4-g2-e7-0.9"),
    "lengths": tuple(2 ** p for p in range(6, 16)),
    "targets": 3,
    "budget": 16,
    "ladder": 0.02,
    "coarse": 4,
    "starts": {name: g[0] for name, g in _PAPER_GRIDS.items()},
    "small_start": 2,
    "small_below": 512,
    "description": ("Three decades of L: six of the twelve setups, L = 64, 128, ..., 32768, three "
                    "independent targets per (setup, L), a fixed budget of 16 draws per width, "
                    "widths on a 2% ladder scanned every 4th width first."),
}

_DECADES_QUICK = {
    "setups": ("k1-g1-e3-0.9", "k2-g2-e7-0.5"),
    "lengths": (64, 128, 256),
    "targets": 2,
    "budget": 8,
    "ladder": 0.05,
    "coarse": 3,
    "starts": {name: g[0] for name, g in _QUICK_GRIDS.items()},
    "small_start": 2,
    "small_below": 128,
    "description": "A small decades run for tests: two setups, L = 64..256, two targets, 8 draws.",
}

_PAPER = Profile(
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
    decades=DECADES_PAPER,
)

PROFILES: dict[str, Profile] = {
    "paper": _PAPER,
    # Figure 3 with the paper's budget: everything else as in the paper profile
    "paper-q1": replace(
        _PAPER,
        name="paper-q1",
        Q=1.0,
        fig4_Q=(1.0,),
        description=("Figure 3 as the paper ran it: the same twelve setups, L grid and d grids as "
                     "the paper profile, with the paper's budget of ceil(L) draws per width "
                     "(Q = 1). The same targets and the same first draws as the Q = 0.1 data, so "
                     "d_min can only decrease."),
        out="data/q1",
        decades=None,
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
        decades=_DECADES_QUICK,
    ),
}


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One measurement of d_min: (figure, setup, L, Q) for Figures 3-4, (setup, L, target,
    budget) for the decades experiment.

    ``budget`` (decades only, else 0) is a fixed number of draws per width in place of
    ``ceil(Q L)``; ``target`` numbers the independent targets of one (setup, L); ``ladder`` (else
    0) says that the widths are :func:`ladder_values` ``(grid[0], grid[1], ladder)`` instead of
    the uniform grid.
    """

    figure: str
    setup: Setup
    L: int
    Q: float
    grid: tuple
    root_seed: int = ROOT_SEED
    target: int = 0
    budget: int = 0
    ladder: float = 0.0
    coarse: int = 1

    @property
    def task_id(self) -> str:
        if self.budget:
            return f"{self.figure}_{self.setup.name}_L{self.L}_t{self.target}_B{self.budget}"
        return f"{self.figure}_{self.setup.name}_L{self.L}_Q{self.Q:g}"

    @property
    def n_draws(self) -> int:
        if self.budget:
            return self.budget
        return max(1, math.ceil(self.Q * self.L))

    def widths(self) -> list[int]:
        """The widths this task scans, in order (at most ``L``)."""
        start, stop, step = self.grid
        stop = min(stop, self.L)
        if self.ladder:
            return ladder_values(start, stop, self.ladder)
        return grid_values((start, stop, step))

    def target_key(self) -> tuple:
        """Seed key of the target A: the setup's parameters and L (shared by Figures 3 and 4);
        ``(setup_key, L, 2, target)`` for the decades experiment."""
        if self.budget:
            return (self.setup.key(), self.L, 2, self.target)
        return (self.setup.key(), self.L, 0)

    def sample_target(self, root_seed=None):
        """The task's target pattern ``A`` (CSR): the paper's sampler with the generator of
        :meth:`target_key` under ``root_seed`` (default: the task's own, ``ROOT_SEED``).
        This is the one place where a task's target is drawn."""
        s = self.setup
        seed = self.root_seed if root_seed is None else root_seed
        return sample_sparse(self.L, s.k, s.gamma, draw_generator(seed, self.target_key()),
                             as_csr=True)

    def draw_key(self) -> tuple:
        """Prefix of the draws' seed keys; draw i at width d uses ``draw_key() + (d, i)``.

        It does not contain Q or the figure: the first ``ceil(Q L)`` draws at each width are the
        same for every Q, so d_min is pathwise non-increasing in Q (Figure 4). The decades
        experiment's draws use ``(setup_key, L, 3, target)``: independent of Figures 3-4.
        """
        if self.budget:
            return (self.setup.key(), self.L, 3, self.target)
        return (self.setup.key(), self.L, 1)

    def params(self) -> dict:
        p = {"figure": self.figure, "setup": self.setup.name, **self.setup.params(),
             "L": self.L, "Q": self.Q, "n_draws": self.n_draws, "grid": list(self.grid),
             "root_seed": self.root_seed, "target_key": list(self.target_key()),
             "draw_key": list(self.draw_key()), "engine": ENGINE_VERSION}
        if self.budget:
            p.update(target=self.target, budget=self.budget, ladder=self.ladder,
                     coarse=self.coarse)
        return p


def parse_setups(setups) -> list[Setup]:
    """The :class:`Setup` objects named by ``setups`` (names, or one string of names separated by
    commas or spaces; None: all twelve); ExperimentError for an unknown or missing name."""
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


def validate_lengths(lengths) -> tuple:
    """``lengths`` as a tuple of integers, strictly increasing, each in ``L_RANGE``;
    ExperimentError otherwise."""
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


def validate_grid(name, grid, lengths):
    """The width grid ``(start, stop, step)`` of setup ``name``, checked: ascending, ``start >= 1``,
    ``step > 0`` and ``start <= min(lengths)``; ExperimentError otherwise."""
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


def _check_budget(budget) -> int:
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Integral):
        raise ExperimentError(f"budget must be an integer number of draws per width, got "
                              f"{budget!r}")
    if not BUDGET_RANGE[0] <= budget <= BUDGET_RANGE[1]:
        raise ExperimentError(f"budget = {budget} draws per width is outside the supported range "
                              f"[{BUDGET_RANGE[0]}, {BUDGET_RANGE[1]}]")
    return int(budget)


def make_tasks(figure, profile="quick", *, setups=None, lengths=None, budget=None) -> list[Task]:
    """The tasks of one figure under a profile, optionally restricted.

    Parameters
    ----------
    figure : {"fig3", "fig4", "decades"}
    profile : str or Profile
    setups : list of str, optional
        Setup names (default: all twelve for Figure 3, the profile's for Figure 4 and decades).
    lengths : list of int, optional
        Strictly increasing lengths within :data:`L_RANGE` (default: the profile's).
    budget : int, optional
        Decades only: draws per width, within :data:`BUDGET_RANGE` (default: the profile's).

    Raises
    ------
    ExperimentError
        Unknown figure, profile or setup; empty or non-increasing lengths; L or budget out of
        range; a budget for Figures 3-4 (they use ``ceil(Q L)``); a profile without decades.
    """
    prof = get_profile(profile)
    if figure not in ("fig3", "fig4", "decades"):
        raise ExperimentError(f"figure must be one of {FIGURES} (tasks exist for fig3, fig4, "
                              f"decades), got {figure!r}")
    if budget is not None and figure != "decades":
        raise ExperimentError(f"budget applies to the decades experiment only ({figure} uses "
                              f"ceil(Q L) draws per width), got budget={budget!r}")
    if figure == "decades":
        return _decades_tasks(prof, setups, lengths, budget)
    if figure == "fig3":
        chosen = parse_setups(setups)
        Ls = validate_lengths(prof.lengths if lengths is None else lengths)
        Qs = (prof.Q,)
    else:
        chosen = parse_setups(prof.fig4_setups if setups is None else setups)
        Ls = validate_lengths(prof.fig4_lengths if lengths is None else lengths)
        Qs = prof.fig4_Q
    tasks = []
    for s in chosen:
        grid = validate_grid(s.name, prof.grid(s.name), Ls)
        for Q in Qs:
            for L in Ls:
                tasks.append(Task(figure, s, L, float(Q), grid))
    return tasks


def _decades_tasks(prof: Profile, setups, lengths, budget) -> list[Task]:
    cfg = prof.decades
    if cfg is None:
        raise ExperimentError(f"profile {prof.name!r} has no decades experiment; use one of "
                              + ", ".join(n for n, p in PROFILES.items() if p.decades))
    chosen = parse_setups(cfg["setups"] if setups is None else setups)
    Ls = validate_lengths(cfg["lengths"] if lengths is None else lengths)
    budget = _check_budget(cfg["budget"] if budget is None else budget)
    tasks = []
    for s in chosen:
        for L in Ls:
            start = cfg["small_start"] if L < cfg["small_below"] else cfg["starts"][s.name]
            # widths above 1500 are never needed here and would exceed float32 screening
            grid = validate_grid(s.name, (start, min(L, 1500), 1), (L,))
            for t in range(cfg["targets"]):
                tasks.append(Task("decades", s, L, 0.0, grid, target=t, budget=budget,
                                  ladder=cfg["ladder"], coarse=cfg["coarse"]))
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
