"""What an agent can play, declared in its spec (``AgentSpec.plays``): the kinds of environment and of action
space. Importing it imports no gymnasium (nor torch): a config is checked against it before anything is built.

The builder reads the declaration before it builds anything (``rlconf.experiments.build.pairing``), so a pairing
that cannot work is one line naming what the agent needs, never an error from deep inside its networks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from rlconf.core.kinds import EnvKind

# The action spaces a spec may name, how refusals name them and environments that have them. "any": every
# gymnasium space (what the agent acts in is its own business: random, the multi-agent agents).
ACTION_KINDS: dict[str, tuple[str, str, str]] = {
    "discrete": ("discrete", "Discrete", "env=classic/cartpole or env=atari/<game>"),
    "box": ("continuous (Box)", "Box", "env=classic/pendulum or env=mujoco/half_cheetah"),
    "multi_discrete": ("multi-discrete", "MultiDiscrete", "env=gym env.id=<an id with MultiDiscrete actions>"),
    "multi_binary": ("multi-binary", "MultiBinary", "env=gym env.id=<an id with MultiBinary actions>"),
    "any": ("any", "any", "any env"),
}


def _space_class(action_kind: str) -> type:
    """The gymnasium class of ``action_kind``; gymnasium is imported here, where a space is at hand (building
    an agent), never where a spec is only read."""
    import gymnasium as gym

    return {"discrete": gym.spaces.Discrete, "box": gym.spaces.Box, "multi_discrete": gym.spaces.MultiDiscrete,
            "multi_binary": gym.spaces.MultiBinary, "any": gym.Space}[action_kind]


@dataclass(frozen=True)
class Plays:
    """The kinds of environment an agent plays, and the action spaces it acts in (names of ``ACTION_KINDS``)."""

    kinds: frozenset[EnvKind]
    actions: tuple[str, ...] = ("any",)
    # Dict and Tuple observations (packed rows, rlconf.core.layout): every agent whose networks come from
    # rlconf.nn reads them through its multi-input encoder; a table or a bandit's arms do not.
    structured: bool = True

    def __post_init__(self):
        unknown = [a for a in self.actions if a not in ACTION_KINDS]
        if unknown or not self.actions:
            raise ValueError(f"Plays.actions={self.actions!r}; allowed: {', '.join(ACTION_KINDS)}")

    @classmethod
    def single_agent(cls, *actions: str) -> Plays:
        return cls(frozenset({EnvKind.SINGLE_AGENT}), actions or ("any",))

    @property
    def multiagent(self) -> bool:
        """Whether it plays multi-agent games as a whole (all players), not one player's seat."""
        return EnvKind.MULTI_AGENT in self.kinds

    def refuses_actions(self, space: Any) -> bool:
        return not isinstance(space, tuple(_space_class(kind) for kind in self.actions))

    def refuses_observations(self, space: Any) -> bool:
        return not self.structured and _structured(space)

    def observations_refusal(self, agent: str, space: Any) -> str:
        """The one line saying that ``agent`` cannot read the structured observations of ``space``."""
        return (f"agent={agent}: reads plain observations (a Box or Discrete), not {space.original}; allowed: an "
                f"agent with networks, e.g. agent=dqn or agent=ppo (rlconf check-env ID lists all that can play it)")

    def actions_needed(self, agent: str, space: Any) -> str:
        """What a refusal of ``space`` starts with: ``agent=X: needs ... actions, not <space>``."""
        words = " or ".join(ACTION_KINDS[kind][0] for kind in self.actions)
        return f"agent={agent}: needs {words} actions, not {space}"

    def actions_refusal(self, agent: str, space: Any) -> str:
        """The one line saying that ``agent`` cannot act in ``space``."""
        _, names, examples = zip(*(ACTION_KINDS[kind] for kind in self.actions), strict=True)
        return (f"{self.actions_needed(agent, space)}; allowed: envs with "
                f"{' or '.join(names)} actions, e.g. {' or '.join(examples)} (rlconf list env)")


DISCRETE = Plays.single_agent("discrete")  # the value-based agents
TABULAR = Plays(frozenset({EnvKind.SINGLE_AGENT}), ("discrete",), structured=False)  # a table of Discrete states
CONTINUOUS = Plays.single_agent("box")  # DDPG, TD3, SAC
# The policy gradients: softmax policies (independent categoricals, Bernoullis) or Gaussian ones.
STOCHASTIC = Plays.single_agent("discrete", "multi_discrete", "multi_binary", "box")
BANDITS = Plays(frozenset({EnvKind.BANDIT}), ("discrete",), structured=False)  # bandits, and only those
MULTIAGENT = Plays(frozenset({EnvKind.MULTI_AGENT}))  # a whole game's players; each player's agent checks its own
# Teams (MAPPO, IPPO): each group's agents act with softmax or Gaussian policies; vector observations
TEAM_STOCHASTIC = Plays(frozenset({EnvKind.TEAM}), ("discrete", "box"), structured=False)
# Teams (QMIX, VDN): each agent picks one of its group's discrete actions by its utilities
TEAM_DISCRETE = Plays(frozenset({EnvKind.TEAM}), ("discrete",), structured=False)
# Teams (MADDPG, MASAC and their independent kin): each agent acts in its group's Box
TEAM_CONTINUOUS = Plays(frozenset({EnvKind.TEAM}), ("box",), structured=False)


def _structured(space: Any) -> bool:
    """Whether ``space`` is a structured observation's PackedSpace. Its module imports torch, which reading specs
    must not: a PackedSpace exists only once that module is imported, so none is there before it is."""
    layout = sys.modules.get("rlconf.core.layout")
    return layout is not None and isinstance(space, layout.PackedSpace)
