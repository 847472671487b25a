"""Small PettingZoo parallel games for the team agents' tests (env=pettingzoo_parallel env.id=team_games, and
+env.kwargs.game=steering for the continuous one): fast to play and with a known best return, so a learning test
can assert it."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

ROUNDS = 8


class RoundsGame(ParallelEnv):
    """Two agents see the same target each round, drawn anew every round, and share one reward for what they
    do together (``reward``); an episode is ``ROUNDS`` rounds."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, rounds: int = ROUNDS):
        self.possible_agents = ["agent_0", "agent_1"]
        self.rounds = rounds
        self._rng = np.random.default_rng()
        self._observation_space = observation_space  # one space object for every agent
        self._action_space = action_space

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.round = 0
        self.target = self.draw()
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict):
        reward = self.reward([actions[agent] for agent in self.agents])
        rewards = {agent: reward for agent in self.agents}
        self.round += 1
        self.target = self.draw()
        over = self.round >= self.rounds
        observations = self._observations()
        infos = {agent: {} for agent in self.agents}
        truncations = {agent: over for agent in self.agents}
        terminations = {agent: False for agent in self.agents}
        if over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, np.ndarray]:
        return {agent: self.seen() for agent in self.possible_agents}

    def draw(self):  # pragma: no cover - interface
        raise NotImplementedError

    def seen(self) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def reward(self, actions: list) -> float:  # pragma: no cover - interface
        raise NotImplementedError


class Coordination(RoundsGame):
    """Two agents see one of three targets each round (one-hot) and are rewarded together, 1 each, when both
    choose it. A round's best return is 1 for each agent, chance's 1/9: an episode of ``ROUNDS`` rounds returns 8
    at best and about 0.9 at random."""

    metadata = {"name": "coordination_v0"}

    def __init__(self, rounds: int = ROUNDS):
        super().__init__(spaces.Box(0.0, 1.0, (3,), np.float32), spaces.Discrete(3), rounds)

    def draw(self) -> int:
        return int(self._rng.integers(3))

    def seen(self) -> np.ndarray:
        return np.eye(3, dtype=np.float32)[self.target]

    def reward(self, actions: list) -> float:
        return float(all(int(action) == self.target for action in actions))


class Steering(RoundsGame):
    """Two agents see one target in [-1, 1] each round and steer together: the mean of their actions (each in
    [-1, 1]) is the team's move, and both are rewarded 1 - |move - target|. An episode of ``ROUNDS`` rounds
    returns 8 at best, about 3.3 with random actions."""

    metadata = {"name": "steering_v0"}

    def __init__(self, rounds: int = ROUNDS):
        box = spaces.Box(-1.0, 1.0, (1,), np.float32)
        super().__init__(box, box, rounds)

    def draw(self) -> float:
        return float(self._rng.uniform(-1, 1))

    def seen(self) -> np.ndarray:
        return np.array([self.target], np.float32)

    def reward(self, actions: list) -> float:
        move = float(np.mean([np.clip(action, -1, 1)[0] for action in actions]))
        return 1.0 - abs(move - self.target)


class Failing(Coordination):
    """The coordination game, broken: its third round raises (a game failing mid-run, for the samplers' tests)."""

    metadata = {"name": "failing_v0"}

    def step(self, actions: dict):
        if self.round == 2:
            raise RuntimeError("the game broke in round 3")
        return super().step(actions)


GAMES = {"coordination": Coordination, "steering": Steering, "failing": Failing}


def parallel_env(game: str = "coordination", **kwargs) -> ParallelEnv:
    return GAMES[game](**kwargs)
