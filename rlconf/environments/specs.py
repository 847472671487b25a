"""What each environment family is, read without importing it (nor torch): its spec.

A family's spec is the one place that says which adapter class runs it (imported only when the environment
is built), the kind of run it makes (``EnvKind``: the loop that runs it, the agents that can play it), whether
its observations are frames (the image networks' input) or vectors, whether its games have lives (the atari
body's episodic lives count them), whether tests are bounded (``test_bounds``: the adapter takes ``test=True``)
and the pip extra that installs its simulator. Checking a config reads these; so does the builder. A user's
family is declared the same way: ``rlconf.register(EnvSpec(...))`` in a module named in ``plugins=``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlconf import registry
from rlconf.core.kinds import EnvKind

OBSERVATIONS = ("vector", "image")


@dataclass(frozen=True)
class EnvSpec:
    """An environment family: ``env.family`` names it (``classic``, ``atari``, ...)."""

    registry_kind: ClassVar[str] = "environment"

    name: str
    class_path: str  # the adapter class, "package.module:Class"
    description: str
    kind: EnvKind
    observations: str = "vector"  # "image": frames, what the image networks (nature_cnn) take
    lives: bool = False  # states carry life_lost, which the atari body's episodic lives read
    test_bounds: bool = False  # built with test=True, the adapter bounds the games of tests (AtariEnvironment)
    extra: str | None = None  # the pip extra that installs its simulator (pip install 'rlconf[EXTRA]')
    # env.id is a gymnasium id, looked up in gymnasium's registry before anything is built, once these modules
    # are imported (they register the family's ids: ale_py, minigrid); None: ids of the family's own.
    gymnasium_ids: tuple[str, ...] | None = None
    wrappers: bool = False  # takes env.wrappers: its adapter makes every copy with gym.make (environments.registered)

    def __post_init__(self):
        if self.observations not in OBSERVATIONS:
            raise ValueError(f"EnvSpec {self.name!r}: observations={self.observations!r}; allowed: "
                             f"{', '.join(OBSERVATIONS)}")

    @property
    def image_observations(self) -> bool:
        return self.observations == "image"


SINGLE, MULTI, BANDIT, TEAM = EnvKind.SINGLE_AGENT, EnvKind.MULTI_AGENT, EnvKind.BANDIT, EnvKind.TEAM
GYM = "rlconf.environments.gym:GymVectorEnvironment"
PETTINGZOO = "rlconf.environments.pettingzoo"
PACKAGES = "rlconf.environments.packages"
ANY_GYM = {"gymnasium_ids": (), "wrappers": True}  # gymnasium's own ids, copies made by gym.make

for spec in (
    EnvSpec("classic", GYM, "gymnasium environments, vectorised", SINGLE, **ANY_GYM),
    EnvSpec("atari", "rlconf.environments.atari:AtariEnvironment",
            "Atari 2600 games (ale-py), DeepMind preprocessing", SINGLE, observations="image", lives=True,
            test_bounds=True, extra="atari", gymnasium_ids=("ale_py",)),
    EnvSpec("continuous", GYM, "gymnasium tasks with continuous (Box) actions: Pendulum, MountainCarContinuous",
            SINGLE, **ANY_GYM),
    EnvSpec("mujoco", "rlconf.environments.mujoco:MujocoEnvironment", "MuJoCo robots (gymnasium v5), vectorised",
            SINGLE, extra="mujoco", **ANY_GYM),
    EnvSpec("pettingzoo_classic", f"{PETTINGZOO}:MultiagentEnvironment",
            "PettingZoo board games (tictactoe, connect four): turns, action masks", MULTI, extra="pettingzoo"),
    EnvSpec("pettingzoo_atari", f"{PETTINGZOO}:MultiagentAtariEnvironment",
            "multi-player Atari (PettingZoo, multi-agent ALE): 84x84 frames, frame skip", MULTI,
            observations="image", lives=True, extra="pettingzoo"),
    EnvSpec("pettingzoo_mpe", f"{PETTINGZOO}:MultiagentEnvironment",
            "multi-agent particle worlds (mpe2): vector observations", MULTI, extra="pettingzoo"),
    EnvSpec("pettingzoo_butterfly", f"{PETTINGZOO}:MultiagentFrameEnvironment",
            "PettingZoo butterfly pixel games (pistonball): grey 84x84 frames", MULTI, observations="image",
            extra="pettingzoo"),
    EnvSpec("box2d", f"{PACKAGES}:Box2DEnvironment",
            "gymnasium's Box2D tasks: LunarLander (discrete and continuous), BipedalWalker", SINGLE, extra="box2d",
            **ANY_GYM),
    EnvSpec("minigrid", f"{PACKAGES}:MinigridEnvironment",
            "MiniGrid grid worlds: Dict observations (a 7x7 partial view, a direction), discrete actions", SINGLE,
            extra="minigrid", gymnasium_ids=("minigrid",), wrappers=True),
    EnvSpec("highway", f"{PACKAGES}:HighwayEnvironment",
            "highway-env driving: kinematics observations, discrete meta-actions or continuous control", SINGLE,
            extra="highway", gymnasium_ids=("highway_env",), wrappers=True),
    EnvSpec("tabular", GYM, "gymnasium's toy text: discrete states (FrozenLake, Taxi, CliffWalking)", SINGLE,
            **ANY_GYM),
    EnvSpec("vmas", "rlconf.environments.vmas:VmasEnvironment",
            "VMAS multi-robot scenarios (balance, navigation...): torch-vectorised copies, agents acting at once",
            TEAM, extra="vmas"),
    EnvSpec("pettingzoo_parallel", "rlconf.environments.pettingzoo_parallel:ParallelTeamEnvironment",
            "PettingZoo parallel games (mpe2, sisl): copies in one process, agents acting at once, a global state",
            TEAM, extra="pettingzoo"),
    EnvSpec("bandit", "rlconf.environments.bandit:MultiArmedBandit",
            "multi-armed bandits (Bernoulli, Gaussian): no observation, one pull per step", BANDIT),
    EnvSpec("contextual_bandit", "rlconf.environments.bandit:ContextualBandit",
            "contextual bandits (synthetic linear, a CSV of features and labels, UCI data sets)", BANDIT),
):
    registry.built_in(spec)
