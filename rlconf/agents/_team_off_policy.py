"""What the team agents that learn from replay share (QMIX and VDN, MADDPG and IDDPG, MASAC and ISAC), so that
each of their files holds only its algorithm: one group's learning.

- ``TeamOffPolicy``: the team agent. Every ``act`` lets each group's learner explore and store the frame; after a
  warm-up of ``replay_start_size`` frames (and once every group's replay holds as many: a run resumed without
  its replay refills it first), every ``update_frequency`` frames bring ``gradient_steps`` updates of every
  group. A *frame* is one step of one copy, every agent's action in it: the clock, schedules, warm-up, cadence
  and batches count frames, as BenchMARL's do.
- ``GroupReplay``: a group's replay, rlconf's ``ReplayBuffer`` with a column per lane (``n_envs x agents``
  columns, rlconf.agents._team). Each lane's row holds its inputs, then the global state where a learner reads
  it (QMIX's mixer, a centralised critic), then whether the agent acts in this frame; ``sample`` draws whole
  frames: (row, copy) pairs, each with all its agents' columns side by side.
- ``GroupActorCritic``: what one group's MADDPG and MASAC share: the actor on each agent's own view, its critics
  and their inputs (centralised: the global state and every agent's action; else the agent's own view and
  action), the warm-up's random actions, the weighting of each agent's loss by whether it acts, and export.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents._agent import Buildable, PolicyGraph, ReplayLearner
from rlconf.agents._off_policy import optimizer, random_actions
from rlconf.agents._team import AgentNetworks, GroupsTestAgent, Lanes, TeamBuildContext
from rlconf.agents.specs._plays import TEAM_CONTINUOUS
from rlconf.approximation import Approximation, PolyakTarget, QContinuous
from rlconf.core import AgentGroup, StateArray, TeamState
from rlconf.core.layout import ACTION_MASK
from rlconf.errors import ConfigError
from rlconf.memory import Transitions, replay_buffer
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import ActionBounds

Frame = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # the agents' inputs, the global state, who acts


class GroupLearner(Protocol):
    """One group's learner of a ``TeamOffPolicy``."""

    replay: GroupReplay

    def explore(self, states: StateArray) -> torch.Tensor: ...

    def update(self) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...

    def generators(self) -> dict[str, Any]: ...


class GroupReplay:
    """A group's frames (see the module's docstring). ``team_reward``: every lane's reward is the mean of its
    group's agents' (QMIX's and VDN's team reward, BenchMARL's), else each agent's own. A lane's ``mask`` is
    whether its value counts in the next frame's target (alive, and not terminated; with
    ``bootstrap_time_limits`` false a time limit ends it too, as BenchMARL counts VMAS's), its ``done`` the
    group's."""

    def __init__(self, view: Lanes, frames: int, n_envs: int, state_size: int, config: Any, seed: int,
                 device: torch.device, team_reward: bool):
        self.view = view
        self.size = view.group.size
        self.state_size = state_size
        self.team_reward = team_reward
        self.bootstrap_time_limits = config.bootstrap_time_limits
        row = gym.spaces.Box(-np.inf, np.inf, (view.actor_inputs + state_size + 1,), np.float32)
        self.buffer = replay_buffer(frames * self.size, n_envs * self.size, row, torch.float32, device=device,
                                    seed=seed, action_space=view.group.action_space)

    def store(self, states: StateArray, grid: StateArray, actions: torch.Tensor) -> None:
        """One frame of the group's ``states``, its lanes ``grid`` and the agents' ``actions`` ``(n_envs,
        agents, ...)``."""
        n_envs, agents = grid.shape
        alive = states["alive"]
        goes_on = states["mask"] > 0 if self.bootstrap_time_limits else ~states["done"]
        parts = [grid["observation"]]
        if self.state_size:
            parts.append(states["global_state"].flatten(2).float())
        parts.append((alive & ~states["done"]).unsqueeze(-1).float())
        reward = states["reward"].float()
        if self.team_reward:
            reward = reward.mean(1, keepdim=True).expand(n_envs, agents)
        frame = {"observation": torch.cat(parts, dim=-1).flatten(0, 1), "reward": reward.flatten(),
                 "mask": (alive & goes_on).float().flatten(),
                 "done": states["done"].all(1, keepdim=True).expand(n_envs, agents).flatten()}
        if ACTION_MASK in states:
            frame[ACTION_MASK] = states[ACTION_MASK].flatten(0, 1)
        self.buffer.store(frame, actions.flatten(0, 1))

    def holds(self, frames: int) -> bool:
        """Whether replay holds ``frames`` (a resumed run without its replay refills it first)."""
        return self.buffer.holds(frames * self.size)

    def sample(self, frames: int) -> Transitions:
        """``frames`` whole frames, ``[frames * agents]`` agent-minor: (row, copy) pairs drawn uniformly, each
        with all its agents' columns in order."""
        rows, cols, _ = self.buffer.draw(frames)
        first = cols - cols % self.size  # the copy's first lane
        lanes = first.unsqueeze(1) + torch.arange(self.size, device=cols.device)
        return self.buffer.gather(rows.unsqueeze(1).expand_as(lanes).flatten(), lanes.flatten())

    def frames(self, frames: int) -> tuple[Transitions, Frame, Frame]:
        """A minibatch of ``frames`` whole frames (``sample``), and its rows and next rows, each split into the
        agents' inputs ``[frames, agents, width]``, the frame's global state (the first lane's: every lane holds
        the same) and whether each agent acts ``[frames, agents]``."""
        batch = self.sample(frames)
        return batch, self._split(batch.observation), self._split(batch.next_observation)

    def _split(self, rows: torch.Tensor) -> Frame:
        rows, a = rows.view(-1, self.size, rows.shape[-1]), self.view.actor_inputs
        return rows[..., :a], rows[:, 0, a:a + self.state_size], rows[..., -1]


class TeamOffPolicy(ReplayLearner, Buildable):
    """Every group's learner on one clock (see the module's docstring); ``groups[name]`` is the group's."""

    def __init__(self, groups: dict[str, GroupLearner], clock: Clock, config: Any, n_envs: int):
        self.groups = groups
        self.clock = clock
        self.config = config
        # Periods are given in frames; one act() is n_envs frames.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._calls = 0

    @classmethod
    def of_groups(cls, config: Any, context: TeamBuildContext, clock: Clock,
                  build: Callable[[Any, str, AgentGroup, int], GroupLearner]) -> TeamOffPolicy:
        """The team agent whose learner of each group is ``build(own, name, group, seed)``: ``own`` the group's
        config (``agent.groups.<name>``'s values where it has any), ``seed`` its own, all on ``clock``."""
        groups = {name: build(config.for_group(name), name, group, context.seed_of(g))
                  for g, (name, group) in enumerate(context.groups.items())}
        return cls(groups, clock, config, context.n_envs)

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        self.clock.tick(team.n_envs)
        self._calls += 1
        actions = {name: group.explore(team[name]) for name, group in self.groups.items()}
        self._between_updates()
        if self._due(self._train_every) and self._learning():
            for _ in range(self.config.gradient_steps):
                for group in self.groups.values():
                    group.update()
        return actions

    def _due(self, every: int) -> bool:
        """Whether this act() is an ``every``-th one."""
        return self._calls % every == 0

    def _between_updates(self) -> None:
        """What is due after every act besides updates (QMIX's fixed target copies)."""

    def _learning(self) -> bool:
        """Past the warm-up, with every group's replay holding as many frames."""
        start = self.config.replay_start_size
        return self.clock.steps >= start and all(group.replay.holds(start) for group in self.groups.values())

    # -- checkpoints ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return super().state_dict() | {"calls": self._calls,
                                       "groups": {name: group.state_dict() for name, group in self.groups.items()}}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._calls = state["calls"]
        for name, group in self.groups.items():
            group.load_state_dict(state["groups"][name])

    def generators(self) -> dict[str, Any]:
        return {f"{name}/{part}": owner for name, group in self.groups.items()
                for part, owner in (group.generators() | {"replay": group.replay.buffer}).items()}

    def replay_state_dict(self) -> dict:
        return {name: group.replay.buffer.state_dict() for name, group in self.groups.items()}

    def load_replay_state_dict(self, state: dict) -> None:
        for name, group in self.groups.items():
            group.replay.buffer.load_state_dict(state[name])


# -- off-policy actor-critics for teams: MADDPG, MASAC ----------------------------------------------------------
class GroupActorCritic:
    """One group's actor, critics and replay (see the module's docstring). A subclass builds its actor
    (``policy``) and critics (``critic`` makes each) and says how it explores and what one update does.

    A critic's lanes: with centralised critics that the group's agents share and that see no agent index, every
    agent's Q(s, a_1..a_n) is the same number, computed once for the frame (``[B, 1]``, broadcast over the
    agents' targets as BenchMARL's shared critic is); otherwise one per agent (``[B, agents]``)."""

    policy: Any
    actor: AgentNetworks  # the policy's networks

    def __init__(self, agent: str, config: Any, context: TeamBuildContext, name: str, group: AgentGroup,
                 seed: int, clock: Clock):
        space = group.action_space  # the pairing's refusal, for a direct build too: a Box of one dimension
        if TEAM_CONTINUOUS.refuses_actions(space) or len(space.shape) != 1:
            raise ConfigError(f"{TEAM_CONTINUOUS.actions_refusal(agent, space)} (group {name})")
        self.name = name
        self.config = config
        self.clock = clock
        self.device = context.device
        self.view = Lanes(group, config.share_parameters, config.agent_id, critic=None)
        self.bounds = ActionBounds(space, context.device)
        self.centralised = config.centralised_critic
        self.one_value = self.view.same_critic_inputs(self.centralised)
        state_size = int(np.prod(group.state_space.shape)) if self.centralised else 0
        self.replay = GroupReplay(self.view, config.replay_buffer_size, context.n_envs, state_size, config, seed,
                                  context.device, team_reward=False)
        self.generator = torch.Generator(device=context.device).manual_seed(seed)  # the warm-up's, the noise's
        self.logger = context.logger_of(name)

    @property
    def size(self) -> int:
        return self.view.group.size

    def actor_networks(self, context: TeamBuildContext, outputs: int) -> AgentNetworks:
        """The actor's networks on each agent's own view (and index): one shared, or one per agent."""
        settings = model_settings(context.approximation)
        return AgentNetworks([settings.head(self.view.actor_space, outputs)
                              for _ in range(self.view.learners)]).to(context.device)

    def critic(self, context: TeamBuildContext, name: str) -> QContinuous:
        """Q(x_i, actions) (see the class's docstring) with Adam at ``lr_q`` and a Polyak target."""
        n, d = self.size, self.bounds.dim
        reads = self.replay.state_size + self.view.id_width if self.centralised else self.view.actor_inputs
        width = reads + (n * d if self.centralised else d)
        space = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)
        settings = model_settings(context.approximation)
        model = AgentNetworks([settings.head(space, 1) for _ in range(self.view.learners)]).to(context.device)
        return QContinuous(model, **optimizer(model, self.config.lr_q, self.config, context.approximation), name=name,
                           clip_grad=self.config.clip_grad, target=PolyakTarget(self.config.polyak_rate),
                           logger=self.logger)

    def critic_inputs(self, own: torch.Tensor, state: torch.Tensor, actions: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        """What each critic lane reads besides the actions, and the actions, ``[B, lanes, ...]``: the agents'
        ``own`` inputs and ``actions``, or, centralised, the frame's ``state`` (with each agent's one-hot) and
        every agent's action."""
        if not self.centralised:
            return own, actions
        b, n = actions.shape[:2]
        joint = actions.flatten(1).unsqueeze(1)
        if self.one_value:
            return state.unsqueeze(1), joint
        ids = own[..., own.shape[-1] - self.view.id_width:]
        return torch.cat([state.unsqueeze(1).expand(b, n, -1), ids], dim=-1), joint.expand(b, n, -1)

    def bootstrap(self, batch: Transitions, next_values: torch.Tensor) -> torch.Tensor:
        """Each agent's TD target ``r_i + gamma * mask'_i * next_values`` ``[B, agents]``."""
        n = self.size
        return batch.reward.view(-1, n) + self.config.discount_factor * batch.next_mask.view(-1, n) * next_values

    def explore(self, states: StateArray) -> torch.Tensor:
        """Every agent's action ``(n_envs, agents, d)``: uniformly random during the warm-up, the policy's
        (``_act``) after; the frame goes into replay."""
        grid = self.view.grid(states).to(self.device)
        n_envs = grid.shape[0]
        if self.clock.steps <= self.config.replay_start_size:
            actions = random_actions(self.bounds, n_envs * self.size, self.generator).view(n_envs, self.size, -1)
        else:
            actions = self._act(grid["observation"])
        self.replay.store(states.to(self.device), grid, actions)
        return actions

    def approximations(self) -> dict[str, Approximation]:  # pragma: no cover - interface
        """The group's networks by name: what its checkpoint holds."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {name: approximation.state_dict() for name, approximation in self.approximations().items()}

    def load_state_dict(self, state: dict) -> None:
        for name, approximation in self.approximations().items():
            approximation.load_state_dict(state[name])

    def _act(self, own: torch.Tensor) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def greedy(self, own: torch.Tensor) -> torch.Tensor:  # pragma: no cover - interface
        """The test agent's action for the agents' own inputs ``[B, agents, width]``."""
        raise NotImplementedError

    def exported(self, network: torch.nn.Module):  # pragma: no cover - interface
        """The greedy action of one agent's inputs ``[B, width]`` through the shared actor ``network``."""
        raise NotImplementedError


def acted_mean(values: torch.Tensor, acts: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` ``[B, agents]`` (or ``[B, 1]``, every agent's) over the agents that act."""
    return (values * acts).sum() / acts.sum().clamp(min=1.0)


class TeamActorCriticTestAgent(GroupsTestAgent):
    """Every agent's greedy action (the deterministic policy's, or the squashed mean of the Gaussian)."""

    def __init__(self, groups: dict[str, GroupActorCritic]):
        self.groups = groups

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        return {name: group.greedy(group.view.grid(team[name]).to(group.device)["observation"])
                for name, group in self.groups.items()}

    def group_graph(self, name: str) -> tuple[PolicyGraph, gym.Space]:
        """Group ``name``'s greedy policy as a graph of each agent's inputs (its view, then its one-hot index
        where the shared actor reads one), and their space (``rlconf export --group``)."""
        group = self.groups[name]
        network = self.shared(group.actor.networks, name, "a policy")
        return group.view.fed_ids(PolicyGraph(group.exported(network), {"policy": network})), group.view.actor_space
