"""QMIX and VDN: value decomposition for teams, each group's Q_tot mixed from its agents' utilities.

VDN (Sunehag et al. 2018, "Value-Decomposition Networks For Cooperative Multi-Agent Learning") writes the team's
action value as the sum of every agent's utility, Q_tot = sum_i Q_i(o_i, a_i). QMIX (Rashid et al. 2018,
"QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement Learning") mixes them with a
network whose weights hypernetworks make from the global state, kept non-negative (``abs``) so that Q_tot is
monotonic in every Q_i: each agent's greedy action is then the team's, and execution stays decentralised. VDN
is QMIX with the sum as its mixer (``agent.mixer``), here and in this file.

Each group of a team is a ``GroupQ``: its agents' utility network (one shared, fed a one-hot of the agent's index
with ``agent.agent_id``, or one per agent), its mixer, a target copy of both (Polyak averaged after every update,
or copied every ``target_update_frequency`` frames), its replay and its epsilon-greedy exploration (every agent
flips its own coin; action masks are honoured). A *frame* is one step of one copy, every agent's action in it:
the agent's clock, the exploration schedule, the warm-up, the update cadence and the batches count frames, as
BenchMARL's do. Every ``update_frequency`` frames come ``gradient_steps`` updates, each on ``batch_size`` frames
drawn from replay, of the squared TD error of Q_tot against

    r + gamma * mask' * Q_tot_target(max_a Q_target_i(o'_i, a), s')

where r is the team reward, the mean of the group's agents' rewards (BenchMARL's), and mask' is 0 only where the
group's episode truly ended: a time limit bootstraps, unless ``bootstrap_time_limits`` is false (BenchMARL counts
it as terminal; the VMAS presets do so, configs/preset/vmas/qmix.yaml says why). With ``double_q`` the online
utilities pick the next actions and the target values them. An agent that is not alive (it finished before its
game) counts in neither Q_tot: its utility is left out of the mix (0 in it), so its actions are never learned
from.

Replay is rlconf's ``ReplayBuffer`` with one column per lane (``n_envs x agents`` columns, rlconf.agents._team):
each lane's row holds its inputs, then the global state (QMIX's mixer reads it), then whether it acts; its
reward is the team's, its ``mask`` whether its value counts in the next state's mix, its ``done`` the group's.
A minibatch draws (row, copy) pairs and gathers the copy's agents' columns side by side: whole frames.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlconf.agents._agent import Buildable, NotExportable, PolicyGraph, ReplayLearner, TestAgent
from rlconf.agents._team import Lanes, TeamBuildContext, flat_lanes
from rlconf.agents.dqn import LOSS_FUNCTIONS
from rlconf.agents.specs._plays import TEAM_DISCRETE
from rlconf.agents.specs.qmix import QMIXConfig, VDNConfig
from rlconf.approximation import QNetwork, adam, make_target
from rlconf.core import AgentGroup, StateArray, TeamState
from rlconf.core.layout import ACTION_MASK
from rlconf.errors import ConfigError
from rlconf.memory import ReplayBuffer, Transitions, replay_buffer
from rlconf.nn import model_settings
from rlconf.optim import Clock, schedule
from rlconf.policies import ParallelGreedyPolicy, legal_argmax, legal_max


# -- mixers: the agents' chosen utilities [B, agents] and the global state [B, state] -> Q_tot [B] ---------------
class VDNMixer(nn.Module):
    """Q_tot = sum_i Q_i; no parameters, no state."""

    reads_state = False

    def forward(self, values: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return values.sum(-1)


class QMixer(nn.Module):
    """QMIX's mixing network: one hidden layer of ``embed`` ELUs whose weights (``abs`` of a linear hypernetwork
    of the state: non-negative, so Q_tot is monotonic in each Q_i) and biases come from the global state; the
    output's bias V(s) is a small MLP of the state (Linear-ReLU-Linear), as the paper's."""

    reads_state = True

    def __init__(self, agents: int, state_size: int, embed: int):
        super().__init__()
        self.agents, self.embed = agents, embed
        self.hyper_w1 = nn.Linear(state_size, embed * agents)
        self.hyper_b1 = nn.Linear(state_size, embed)
        self.hyper_w2 = nn.Linear(state_size, embed)
        self.value = nn.Sequential(nn.Linear(state_size, embed), nn.ReLU(), nn.Linear(embed, 1))

    def forward(self, values: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        w1 = self.hyper_w1(state).abs().view(-1, self.agents, self.embed)
        hidden = F.elu(torch.bmm(values.unsqueeze(1), w1).squeeze(1) + self.hyper_b1(state))
        return (hidden * self.hyper_w2(state).abs()).sum(-1) + self.value(state).squeeze(-1)


class Utilities(nn.Module):
    """The agents' utilities Q_i(o_i, .): inputs ``[B, agents, width]`` -> ``[B, agents, n_actions]``, from one
    network every agent shares or from one network per agent."""

    def __init__(self, networks: list[nn.Module]):
        super().__init__()
        self.networks = nn.ModuleList(networks)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if len(self.networks) == 1:
            return self.networks[0](inputs.flatten(0, 1)).view(*inputs.shape[:2], -1)
        return torch.stack([network(inputs[:, a]) for a, network in enumerate(self.networks)], dim=1)


class TeamQ(nn.Module):
    """Q_tot of a group: its agents' utilities of the given actions (or, without actions, of each agent's best
    legal one), weighted by ``weights`` (0: the agent is out of the mix), mixed on the state."""

    def __init__(self, utilities: Utilities, mixer: nn.Module):
        super().__init__()
        self.utilities = utilities
        self.mixer = mixer

    def forward(self, inputs: torch.Tensor, state: torch.Tensor, weights: torch.Tensor,
                actions: torch.Tensor | None = None, action_mask: torch.Tensor | None = None) -> torch.Tensor:
        values = self.utilities(inputs)
        if actions is None:
            chosen = legal_max(values, action_mask)
        else:
            chosen = values.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        return self.mixer(chosen * weights, state)


MIXERS = {"vdn": lambda group, state_size, config: VDNMixer(),
          "qmix": lambda group, state_size, config: QMixer(group.size, state_size, config.mixing_embed_dim)}


# -- one group --------------------------------------------------------------------------------------------------
class GroupQ:
    """One group's learner (see the module's docstring): ``q`` (utilities and mixer, with the optimiser and the
    target copy), ``replay`` of its lanes and ``policy``, the agents' epsilon-greedy coins."""

    def __init__(self, view: Lanes, q: QNetwork, policy: ParallelGreedyPolicy, replay: ReplayBuffer,
                 state_size: int, device: torch.device, bootstrap_time_limits: bool = True):
        self.view = view
        self.bootstrap_time_limits = bootstrap_time_limits
        self.q = q
        self.policy = policy
        self.replay = replay
        self.state_size = state_size
        self.device = device

    @property
    def size(self) -> int:
        return self.view.group.size

    @classmethod
    def build(cls, config: QMIXConfig, context: TeamBuildContext, name: str, group: AgentGroup, seed: int,
              epsilon: Any) -> GroupQ:
        if TEAM_DISCRETE.refuses_actions(group.action_space):  # the pairing's refusal, for a direct build too
            raise ConfigError(f"{TEAM_DISCRETE.actions_refusal(config.mixer, group.action_space)} (group {name})")
        view = Lanes(group, config.share_parameters, config.agent_id, critic=None)
        n_actions = int(group.action_space.n)
        state_size = int(np.prod(group.state_space.shape))
        mixer = MIXERS[config.mixer](group, state_size, config)
        state_size = state_size if mixer.reads_state else 0  # what replay keeps of the state: VDN's mixer reads none
        settings = model_settings(context.approximation)
        model = TeamQ(Utilities([settings.q(view.actor_space, n_actions) for _ in range(view.learners)]), mixer)
        model = model.to(context.device)
        q = QNetwork(model, adam(model.parameters(), config.lr, config.adam_eps)[0], clip_grad=config.clip_grad,
                     target=make_target(config.target, 0, config.target_rate), logger=context.logger_of(name))
        policy = ParallelGreedyPolicy(q, n_actions, epsilon, np.random.default_rng(seed))
        row = gym.spaces.Box(-np.inf, np.inf, (view.actor_inputs + state_size + 1,), np.float32)
        replay = replay_buffer(config.replay_buffer_size * group.size, context.n_envs * group.size, row,
                               torch.float32, device=context.device, seed=seed, action_space=group.action_space)
        return cls(view, q, policy, replay, state_size, context.device, config.bootstrap_time_limits)

    def utilities(self, lanes: StateArray, n_envs: int) -> torch.Tensor:
        """The lanes' utilities ``[n_envs * agents, n_actions]``, without gradients."""
        with torch.no_grad():
            return self.q.model.utilities(lanes["observation"].view(n_envs, self.size, -1)).flatten(0, 1)

    def explore(self, states: StateArray) -> torch.Tensor:
        """Every agent's epsilon-greedy action, ``(n_envs, agents)``; the frame goes into replay."""
        n_envs = states.shape[0]
        grid = self.view.grid(states).to(self.device)
        lanes = flat_lanes(grid)
        actions = self.policy.choose(lanes, lambda: self.utilities(lanes, n_envs)).view(n_envs, self.size)
        self._store(states.to(self.device), grid, actions)
        return actions

    def greedy(self, states: StateArray) -> torch.Tensor:
        n_envs = states.shape[0]
        lanes = flat_lanes(self.view.grid(states).to(self.device))
        mask = lanes.get(ACTION_MASK)
        return legal_argmax(self.utilities(lanes, n_envs), mask).view(n_envs, self.size)

    def _store(self, states: StateArray, grid: StateArray, actions: torch.Tensor) -> None:
        """One frame, a column per lane: inputs, state, whether the agent acts; the team reward; whether the
        agent's value counts when this frame is the next one (alive, and not terminated); the group's done."""
        n_envs, agents = grid.shape
        alive = states["alive"]
        # Where a time limit counts as terminal (BenchMARL's), every end stops the value, not only true ones.
        goes_on = states["mask"] > 0 if self.bootstrap_time_limits else ~states["done"]
        parts = [grid["observation"]]
        if self.state_size:
            parts.append(states["global_state"].flatten(2).float())
        parts.append((alive & ~states["done"]).unsqueeze(-1).float())
        frame = {"observation": torch.cat(parts, dim=-1).flatten(0, 1),
                 "reward": states["reward"].float().mean(1, keepdim=True).expand(n_envs, agents).flatten(),
                 "mask": (alive & goes_on).float().flatten(),
                 "done": states["done"].all(1, keepdim=True).expand(n_envs, agents).flatten()}
        if ACTION_MASK in states:
            frame[ACTION_MASK] = states[ACTION_MASK].flatten(0, 1)
        self.replay.store(frame, actions.flatten())

    def ready(self, frames: int) -> bool:
        """Whether replay holds ``frames`` (a resumed run without its replay refills it first)."""
        return self.replay.holds(frames * self.size)

    def sample(self, frames: int) -> Transitions:
        """``frames`` whole frames: (row, copy) pairs drawn uniformly, each with all its agents' columns, in
        order (``[frames * agents]``, agent-minor)."""
        rows, cols, _ = self.replay.draw(frames)
        first = cols - cols % self.size  # the copy's first lane
        lanes = first.unsqueeze(1) + torch.arange(self.size, device=cols.device)
        return self.replay.gather(rows.unsqueeze(1).expand_as(lanes).flatten(), lanes.flatten())

    def update(self, config: QMIXConfig) -> None:
        """One gradient step on ``batch_size`` frames: Q_tot against its TD target (module docstring)."""
        batch = self.sample(config.batch_size)
        b, n, a = config.batch_size, self.size, self.view.actor_inputs
        now, after = batch.observation.view(b, n, -1), batch.next_observation.view(b, n, -1)
        weights = batch.next_mask.view(b, n)  # agents whose value counts in the next state's mix
        next_masks = None if batch.next_action_mask is None else batch.next_action_mask.view(b, n, -1)
        with torch.no_grad():
            chosen = None
            if config.double_q:
                chosen = legal_argmax(self.q.model.utilities(after[..., :a]), next_masks)
            next_value = self.q.target(after[..., :a], after[:, 0, a:-1], weights, chosen, next_masks)
            target = batch.reward.view(b, n)[:, 0] + config.discount_factor * weights.amax(1) * next_value
        value = self.q(now[..., :a], now[:, 0, a:-1], now[..., -1], batch.action.view(b, n))
        self.q.reinforce(LOSS_FUNCTIONS[config.loss](value, target).mean())


# -- the team agent ---------------------------------------------------------------------------------------------
class QMIX(ReplayLearner, Buildable):
    """QMIX (or VDN) for every group of a team: ``groups[name]`` is the group's learner, all on one clock."""

    Config = QMIXConfig

    def __init__(self, groups: dict[str, GroupQ], clock: Clock, config: QMIXConfig, n_envs: int):
        self.groups = groups
        self.clock = clock
        self.config = config
        # Periods are given in frames; one act() is n_envs frames.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._sync_every = max(1, config.target_update_frequency // n_envs)
        self._calls = 0

    @classmethod
    def from_config(cls, config: QMIXConfig, context: TeamBuildContext) -> QMIX:
        clock = Clock()
        epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        groups = {name: GroupQ.build(config, context, name, group, context.seed_of(g), epsilon)
                  for g, (name, group) in enumerate(context.groups.items())}
        return cls(groups, clock, config, context.n_envs)

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        self.clock.tick(team.n_envs)
        self._calls += 1
        actions = {name: group.explore(team[name]) for name, group in self.groups.items()}
        self._learn()
        return actions

    def _learn(self) -> None:
        """A target copy when one is due (fixed targets), and a burst of updates every ``update_frequency``
        frames once the warm-up is over and replay holds as many frames."""
        if self.config.target == "fixed" and self._calls % self._sync_every == 0:
            for group in self.groups.values():
                group.q.target_network.sync()
        start = self.config.replay_start_size
        if self._calls % self._train_every or self.clock.steps < start:
            return
        if not all(group.ready(start) for group in self.groups.values()):
            return
        for _ in range(self.config.gradient_steps):
            for group in self.groups.values():
                group.update(self.config)

    def test_agent(self) -> QMIXTestAgent:
        return QMIXTestAgent(self.groups)

    # -- checkpoints ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return super().state_dict() | {"calls": self._calls,
                                       "q": {name: group.q.state_dict() for name, group in self.groups.items()}}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._calls = state["calls"]
        for name, group in self.groups.items():
            group.q.load_state_dict(state["q"][name])

    def generators(self) -> dict[str, Any]:
        return {f"{name}/{part}": owner for name, group in self.groups.items()
                for part, owner in (("policy", group.policy), ("replay", group.replay))}

    def replay_state_dict(self) -> dict:
        return {name: group.replay.state_dict() for name, group in self.groups.items()}

    def load_replay_state_dict(self, state: dict) -> None:
        for name, group in self.groups.items():
            group.replay.load_state_dict(state[name])


class VDN(QMIX):
    Config = VDNConfig


class QMIXTestAgent(TestAgent):
    """Every agent's greedy legal action by its utilities (no exploration)."""

    def __init__(self, groups: dict[str, GroupQ]):
        self.groups = groups

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        return {name: group.greedy(team[name]) for name, group in self.groups.items()}

    def policy_graph(self):
        raise NotExportable("a team acts with one policy per group of agents (rlconf export --group NAME)")

    def group_graph(self, name: str) -> tuple[PolicyGraph, gym.Space]:
        """Group ``name``'s greedy policy as a graph of each agent's inputs (its view, then its one-hot index
        where the shared network reads one), and their space (``rlconf export --group``)."""
        group = self.groups[name]
        view, (network, *others) = group.view, group.q.model.utilities.networks
        if others:
            raise NotExportable(f"group {name}'s agents each learn utilities of their own "
                                "(agent.share_parameters=false): there is no one policy of the group to export")
        graph = PolicyGraph(lambda observations, mask=None: legal_argmax(network(observations), mask),
                            {"q": network})
        return view.fed_ids(graph), view.actor_space
