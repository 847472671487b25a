"""What an agent can play, declared by its class (``plays``): the kinds of environment and of action space.

The builder reads the declaration before it builds anything (``rlconf.experiments.build.pairing``), so a pairing
that cannot work is one line naming what the agent needs, never an error from deep inside its networks.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym

from rlconf.core import EnvKind

# How refusals name an action space's kind, and environments that have it.
_ACTION_KINDS: dict[type[gym.Space], tuple[str, str, str]] = {
    gym.spaces.Discrete: ("discrete", "Discrete", "env=classic/cartpole or env=atari/<game>"),
    gym.spaces.Box: ("continuous (Box)", "Box", "env=classic/pendulum or env=mujoco/half_cheetah"),
}


@dataclass(frozen=True)
class Plays:
    """The kinds of environment an agent plays, and the action spaces it acts in (``gym.Space``: any)."""

    kinds: frozenset[EnvKind]
    actions: tuple[type[gym.Space], ...]

    @classmethod
    def single_agent(cls, *actions: type[gym.Space]) -> Plays:
        return cls(frozenset({EnvKind.SINGLE_AGENT}), actions)

    @property
    def multiagent(self) -> bool:
        """Whether it plays multi-agent games as a whole (all players), not one player's seat."""
        return EnvKind.MULTI_AGENT in self.kinds

    def refuses_actions(self, space: gym.Space) -> bool:
        return not isinstance(space, self.actions)

    def actions_refusal(self, agent: str, space: gym.Space) -> str:
        """The one line saying that ``agent`` cannot act in ``space``."""
        words, names, examples = zip(*(_ACTION_KINDS[kind] for kind in self.actions), strict=True)
        return (f"agent={agent}: needs {' or '.join(words)} actions, not {space}; allowed: envs with "
                f"{' or '.join(names)} actions, e.g. {' or '.join(examples)} (rlconf list env)")


DISCRETE = Plays.single_agent(gym.spaces.Discrete)  # the value-based and tabular agents
CONTINUOUS = Plays.single_agent(gym.spaces.Box)  # DDPG, TD3, SAC
