"""The agent interfaces: an agent sees states and returns actions; nothing else about the world."""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents.specs._plays import DISCRETE
from rlconf.core import State, StateArray
from rlconf.core.generators import Generator, OwnsGenerators, generators_state, load_generators_state
from rlconf.errors import ConfigError
from rlconf.optim import Clock, LinearScheduler


class Learner(ABC):
    """What every learning agent can do besides acting: save and restore what it has learned."""

    @abstractmethod
    def state_dict(self) -> dict:
        """Everything needed to continue learning: models, optimisers, counters, the generators it draws from
        (each component's, by a name the agent writes out)."""

    @abstractmethod
    def load_state_dict(self, state: dict) -> None:
        """The inverse of ``state_dict``, for an agent built from the same config."""

    def schedules(self) -> dict[str, LinearScheduler]:
        """The scheduled hyperparameters (epsilon, learning rates...) by name, for verbose logs (none here)."""
        return {}

    def replay_state_dict(self) -> dict:
        """The replay memory's contents, for checkpoints that ask for them (empty without replay)."""
        return {}

    def load_replay_state_dict(self, state: dict) -> None:
        pass


class Checkpointed(Learner):
    """A learner with a step clock and random generators: its ``state_dict`` holds the clock's steps and,
    under ``generators``, the state of each generator ``generators()`` names. An agent extends both methods
    with what it learns (``super().state_dict() | {...}``), each component saving itself."""

    clock: Clock

    def state_dict(self) -> dict:
        return {"steps": self.clock.steps, "generators": generators_state(self.generators())}

    def load_state_dict(self, state: dict) -> None:
        self.clock.steps = state["steps"]
        load_generators_state(self.generators(), state.get("generators", {}))

    @abstractmethod
    def generators(self) -> dict[str, Generator | OwnsGenerators | None]:
        """Every random generator the agent draws from while training, by a name of its own: its own
        generators and the components that save theirs (policy, replay). A resumed run continues each."""

    def schedules(self) -> dict[str, LinearScheduler]:
        return self.clock.named_schedules()


def arrays_state(owner: Any, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The numpy arrays ``owner.<name>`` as tensors (copies), for a checkpoint that loads with weights_only."""
    return {name: torch.from_numpy(np.array(getattr(owner, name))) for name in names}


def load_arrays(owner: Any, names: tuple[str, ...], state: dict[str, torch.Tensor]) -> None:
    """The inverse of ``arrays_state``; an array of another shape (another config's) is a ValueError."""
    for name in names:
        saved = state[name].numpy()
        if saved.shape != getattr(owner, name).shape:
            raise ValueError(f"{name}: the checkpoint's has shape {saved.shape}, this agent's "
                             f"{getattr(owner, name).shape}")
        setattr(owner, name, saved.astype(getattr(owner, name).dtype))


class ReplayLearner(Checkpointed):
    """A learner with a replay memory, ``self.replay``, whose contents checkpoints may carry."""

    replay: Any

    def replay_state_dict(self) -> dict:
        return self.replay.state_dict()

    def load_replay_state_dict(self, state: dict) -> None:
        self.replay.load_state_dict(state)


class Stateless(Learner):
    """A learner with nothing to save (a plugin's baseline that learns nothing); agents that learn override
    both methods."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class Agent(Stateless):
    """An agent for one environment: ``act(state) -> action``.

    Learning happens inside ``act``: the agent decides when to store experience and when to update. The
    state carries the reward for the previous action and whether the episode ended.
    """

    @abstractmethod
    def act(self, state: State) -> Any: ...


class ParallelAgent(Stateless):
    """An agent for a batch of environments: ``act(states: StateArray) -> actions`` (one per environment)."""

    @abstractmethod
    def act(self, states: StateArray) -> torch.Tensor: ...


class TestAgent(ABC):
    """How a trained agent behaves when it is evaluated: no learning, usually greedy. One that draws random
    numbers draws them from the global generators (torch's, numpy's, Python's), which ``evaluate`` seeds, so
    that an evaluation repeats exactly (``rlconf eval`` reproduces a run's final test)."""

    @abstractmethod
    def act(self, states: StateArray) -> torch.Tensor: ...

    def policy_graph(self) -> PolicyGraph:
        """The greedy policy as a module of observations alone (``rlconf export``); NotExportable, saying why,
        for an agent whose actions are not a function of one observation's tensor."""
        raise NotExportable("its test agent acts on more than one observation's tensor (tabular, bandit and "
                            "multi-agent agents keep tables, contexts or players of their own)")


class NotExportable(Exception):
    """A test agent that ``rlconf export`` cannot write as a graph; the message says why, in a few words."""


class PolicyGraph(torch.nn.Module):
    """A test agent as a function of a batch of observations: what ``rlconf export`` writes as a TorchScript
    module or an ONNX graph.

    ``act`` maps observations, as the agent receives them, to its greedy actions; ``networks`` are the modules
    it reads, registered here so that their weights are the graph's parameters. Bodies put their preprocessing
    in front (``preceded_by``). What a body keeps per environment (a frame stack, an episode's time) is not a
    function of one observation: the graph takes it as already done, ``feeding`` says how, for the caller, and
    ``input_space`` gives the observations the graph then takes. Where the environment masks actions, the graph
    takes the states' ``action_mask`` too (``forward(observation, action_mask)``) and hands it to ``act``.

    A recurrent policy's graph is given its ``core`` (rlconf.nn.recurrent.RecurrentCore): ``act(observations,
    state, mask)`` then maps the flat state ``[batch, state_size]`` too and returns ``(actions, state after)``,
    and ``forward(observation, action_mask, state)`` takes and returns the state as its parts (``state_parts``:
    ``h`` and ``c`` of an LSTM, ``h`` of a GRU), each ``[batch, state_width]``: zeros at an episode's start.
    One whose network also reads the previous action and reward (``previous_actions``, the number of actions:
    R2D1's ``prev_action_reward``) takes them as ``previous``, the previous action (int64 ``[batch]``, -1 at an
    episode's first step) and reward (``[batch]``, 0 there): ``forward(observation, action_mask, state,
    previous)`` hands them to ``act(observations, state, mask, action, reward)``.
    """

    def __init__(self, act: Callable[..., Any], networks: dict[str, torch.nn.Module], core: Any = None,
                 previous_actions: int = 0):
        super().__init__()
        self._act = act
        self.networks = torch.nn.ModuleDict(networks)
        self.previous_actions = previous_actions
        self.state_parts: tuple[str, ...] = () if core is None else core.state_parts
        self.state_width = 0 if core is None else core.hidden
        self._preprocessing: list[Callable[[torch.Tensor], torch.Tensor]] = []
        self.feeding: list[str] = []
        self._fed_spaces: list[Callable[[gym.Space], gym.Space]] = []

    def preceded_by(self, step: Callable[[torch.Tensor], torch.Tensor]) -> PolicyGraph:
        self._preprocessing.insert(0, step)
        return self

    def fed_by_caller(self, how: str, space: Callable[[gym.Space], gym.Space]) -> PolicyGraph:
        """A body's work left to the caller: ``how`` it is done, and the ``space`` of what it hands on."""
        self.feeding.insert(0, how)
        self._fed_spaces.insert(0, space)
        return self

    def input_space(self, observation_space: gym.Space) -> gym.Space:
        """The observations the graph takes, for an environment's ``observation_space``."""
        for transform in self._fed_spaces:
            observation_space = transform(observation_space)
        return observation_space

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor | None = None,
                state: tuple[torch.Tensor, ...] | None = None, previous: tuple[torch.Tensor, ...] = ()) -> Any:
        for step in self._preprocessing:
            observation = step(observation)
        if self.state_parts:  # recurrent: (actions, the state's parts after this step)
            actions, after = self._act(observation, torch.cat(state, dim=-1), action_mask, *previous)
            return actions, after.split(self.state_width, dim=-1)
        return self._act(observation) if action_mask is None else self._act(observation, action_mask)


@dataclass
class BuildContext:
    """What an agent's builder may know about the run: spaces, sizes, device and budget, never the env."""

    observation_space: gym.Space
    action_space: gym.Space
    n_envs: int
    device: torch.device
    total_steps: int
    approximation: dict = field(default_factory=dict)
    logger: Any = None
    # The rewards the environment can give, (low, high): bandit agents pick their posteriors by it (Beta for
    # rewards in [0, 1]). None: unknown (gymnasium dropped reward_range).
    reward_range: tuple[float, float] | None = None
    seed: int = 0
    # Parameters shared among the agents built with this same dict (self-play: one network for every
    # player); None: each agent builds its own.
    shared: dict[str, Any] | None = None
    # Data-parallel learners training this agent together (hardware.learners); total_steps is this one's share.
    learners: int = 1
    # The last ``critic_inputs`` features of each observation are for the critic alone (a team's centralised
    # critic reads the global state there, rlconf.agents._team); the actor reads the others. 0: one input.
    critic_inputs: int = 0
    # Consecutive observations that are one frame's agents (a team's group sharing a learner): minibatches keep
    # a frame's lanes together, as BenchMARL's minibatches of frames; with ``same_critic_inputs`` each frame's
    # lanes give the critic the same inputs, and it computes one value a frame (rlconf.nn.layers.OncePerFrame).
    frame_lanes: int = 1
    same_critic_inputs: bool = False

    def generator(self, stream: str) -> np.random.Generator:
        """A generator of the agent's own, seeded from the run's seed and the name of its ``stream``. Not
        ``default_rng(seed)``: gymnasium seeds an environment's generator exactly so on ``reset(seed)``, and an
        agent drawing the same numbers as its environment (a slippery FrozenLake's slips) is not exploring."""
        return np.random.default_rng(np.random.SeedSequence([self.seed, zlib.crc32(stream.encode())]))

    def share(self, name: str, build: Callable[[], Any]) -> Any:
        """``build()``, or the object the first agent built with this context's ``shared`` dict under ``name``.
        Agents whose networks may be shared build them through here (the DQN family's ``q``)."""
        if self.shared is None:
            return build()
        if name not in self.shared:
            self.shared[name] = build()
        return self.shared[name]

    def n_actions(self, agent: str) -> int:
        """The number of discrete actions, for agents that choose among them; other spaces: one clear line."""
        if DISCRETE.refuses_actions(self.action_space):  # built without the run's pairing check (tests do)
            raise ConfigError(DISCRETE.actions_refusal(agent, self.action_space))
        return int(self.action_space.n)

    @property
    def observation_dtype(self) -> torch.dtype:
        """The torch dtype of the observations (uint8 frames stay uint8 in memory)."""
        return torch.from_numpy(np.zeros(0, self.observation_space.dtype)).dtype


class Buildable:
    """Mixin for registry agents: a typed ``Config`` dataclass and ``from_config`` that builds the agent."""

    # Its schema; what it plays and can do (recurrent core, data-parallel learners, async runner, alternating
    # sampler) is declared in its spec, never on the class (rlconf.agents.specs.AgentSpec).
    Config: ClassVar[type]

    @classmethod
    def from_config(cls, config: Any, context: BuildContext) -> ParallelAgent:  # pragma: no cover - interface
        raise NotImplementedError

    def test_agent(self) -> TestAgent:  # pragma: no cover - interface
        raise NotImplementedError


class AgentWrapper(Learner):
    """A wrapper around ``self.agent`` (bodies, adapters): what it has learned is the wrapped agent's."""

    agent: Any

    def state_dict(self) -> dict:
        return self.agent.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.agent.load_state_dict(state)

    def schedules(self) -> dict[str, LinearScheduler]:
        return self.agent.schedules()

    def replay_state_dict(self) -> dict:
        return self.agent.replay_state_dict()

    def load_replay_state_dict(self, state: dict) -> None:
        self.agent.load_replay_state_dict(state)


class SingleEnvAgent(AgentWrapper, ParallelAgent):
    """Lets an ``Agent`` written for one State run in the vectorised loop (with one environment)."""

    def __init__(self, agent: Agent):
        self.agent = agent

    def act(self, states: StateArray) -> torch.Tensor:
        action = self.agent.act(states[0])
        return torch.as_tensor(action).unsqueeze(0)

    def test_agent(self) -> TestAgent:
        return _SingleEnvTestAgent(self.agent.test_agent())


class _SingleEnvTestAgent(TestAgent):
    def __init__(self, agent):
        self.agent = agent

    def act(self, states: StateArray) -> torch.Tensor:
        return torch.stack([torch.as_tensor(self.agent.act(states[i])) for i in range(len(states))])
