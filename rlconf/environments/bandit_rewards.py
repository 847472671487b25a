"""Reward rules of the data bandits: how a labelled row pays each arm (``env.kwargs.reward``).

A data bandit (rlconf.environments.bandit.LabelledRows) shows a row's features as the context; its reward
rule says what the arms are and what each pays for a row of a given label. Built in: ``label`` (each label is
an arm, which pays 1 for its rows and 0 for others: a classification data set as a bandit) and ``mushroom``
(Riquelme et al. 2018's rule for the UCI Mushroom data). A rule of your own is a class registered under the
``reward`` kind in a module named in ``plugins=``::

    from rlconf import register
    from rlconf.environments.bandit_rewards import RewardRule

    @register("reward", "costly_mistakes")
    class CostlyMistakes(RewardRule): ...      # then env.kwargs.reward=costly_mistakes

A rule is built with the data set's label names (sorted) and answers, for rows given by their label indices,
every arm's expected reward (what regret is measured against: the best expected reward of each context) and
a draw of the pulled arms' rewards (the expected one unless the rule overrides ``draw``).
"""

from __future__ import annotations

import numpy as np

from rlconf.errors import ConfigError


class RewardRule:
    """The arms of a labelled data set and what they pay (see the module's docstring)."""

    reward_range: tuple[float, float] = (-np.inf, np.inf)

    def __init__(self, label_names: list[str]):
        self.label_names = label_names

    @property
    def arms(self) -> int:
        """The number of arms."""
        raise NotImplementedError

    def expected(self, labels: np.ndarray) -> np.ndarray:
        """Every arm's expected reward for rows of these labels (indices into ``label_names``): (rows, arms)."""
        raise NotImplementedError

    def draw(self, rng: np.random.Generator, labels: np.ndarray, arms: np.ndarray,
             expected: np.ndarray) -> np.ndarray:
        """The pulled ``arms``' rewards for rows of ``labels``; ``expected`` is ``expected(labels)``."""
        return expected[np.arange(len(arms)), arms]


class LabelPays(RewardRule):
    """Each label is an arm; the arm of the row's label pays 1, every other 0 (nothing random)."""

    reward_range = (0.0, 1.0)

    @property
    def arms(self) -> int:
        return len(self.label_names)

    def expected(self, labels):
        onehot = np.zeros((len(labels), self.arms))
        onehot[np.arange(len(labels)), labels] = 1.0
        return onehot


class MushroomRewards(RewardRule):
    """Two arms: 0 passes (pays 0), 1 eats: +5 for an edible mushroom (label ``e``), and for a poisonous one
    (``p``) +5 or -35 with equal chance, so -15 expected (Riquelme et al. 2018, Deep Bayesian Bandits
    Showdown). The best arm eats the edible ones and passes the poisonous ones."""

    PASS, EAT = 0, 1
    EDIBLE, LUCKY, UNLUCKY = 5.0, 5.0, -35.0
    reward_range = (UNLUCKY, EDIBLE)

    def __init__(self, label_names: list[str]):
        super().__init__(label_names)
        if sorted(label_names) != ["e", "p"]:
            raise ConfigError(f"env.kwargs.reward=mushroom: needs the labels e (edible) and p (poisonous), not "
                              f"{', '.join(label_names)}; allowed: the UCI Mushroom data (agaricus-lepiota.data)")
        self.poisonous = label_names.index("p")

    @property
    def arms(self) -> int:
        return 2

    def expected(self, labels):
        eat = np.where(labels == self.poisonous, (self.LUCKY + self.UNLUCKY) / 2, self.EDIBLE)
        return np.stack([np.zeros(len(labels)), eat], axis=1)

    def draw(self, rng, labels, arms, expected):
        luck = np.where(rng.random(len(arms)) < 0.5, self.LUCKY, self.UNLUCKY)
        eat = np.where(labels == self.poisonous, luck, self.EDIBLE)
        return np.where(arms == self.EAT, eat, 0.0)
