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

Replay and the update cadence are the team off-policy base's (rlconf.agents._team_off_policy): whole frames,
each lane's reward the team's, its ``mask`` whether its value counts in the next state's mix.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlconf.agents._agent import PolicyGraph
from rlconf.agents._team import AgentNetworks, GroupsTestAgent, Lanes, TeamBuildContext, flat_lanes, group_schedule
from rlconf.agents._team_off_policy import GroupReplay, TeamOffPolicy
from rlconf.agents.dqn import LOSS_FUNCTIONS
from rlconf.agents.specs._plays import TEAM_DISCRETE
from rlconf.agents.specs.qmix import QMIXConfig, VDNConfig
from rlconf.approximation import QNetwork, make_target, training
from rlconf.core import AgentGroup, StateArray, TeamState
from rlconf.core.layout import ACTION_MASK
from rlconf.errors import ConfigError
from rlconf.nn import model_settings
from rlconf.nn.layers import Linear
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
        self.hyper_w1 = Linear(state_size, embed * agents)
        self.hyper_b1 = Linear(state_size, embed)
        self.hyper_w2 = Linear(state_size, embed)
        self.value = nn.Sequential(Linear(state_size, embed), nn.ReLU(), Linear(embed, 1))

    def forward(self, values: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        w1 = self.hyper_w1(state).abs().view(-1, self.agents, self.embed)
        hidden = F.elu(torch.bmm(values.unsqueeze(1), w1).squeeze(1) + self.hyper_b1(state))
        return (hidden * self.hyper_w2(state).abs()).sum(-1) + self.value(state).squeeze(-1)


class TeamQ(nn.Module):
    """Q_tot of a group: its agents' utilities of the given actions (or, without actions, of each agent's best
    legal one), weighted by ``weights`` (0: the agent is out of the mix), mixed on the state."""

    def __init__(self, utilities: AgentNetworks, mixer: nn.Module):
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
    target copy), ``replay`` of its frames and ``policy``, the agents' epsilon-greedy coins."""

    def __init__(self, view: Lanes, q: QNetwork, policy: ParallelGreedyPolicy, replay: GroupReplay,
                 config: QMIXConfig, device: torch.device):
        self.view = view
        self.q = q
        self.policy = policy
        self.replay = replay
        self.config = config
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
        settings = model_settings(context.approximation)
        model = TeamQ(AgentNetworks([settings.q(view.actor_space, n_actions) for _ in range(view.learners)]), mixer)
        model = model.to(context.device)
        trained = training(model.parameters(), config.lr, context.approximation, config.adam_eps)
        q = QNetwork(model, **trained, clip_grad=config.clip_grad,
                     target=make_target(config.target, 0, config.target_rate), logger=context.logger_of(name))
        policy = ParallelGreedyPolicy(q, n_actions, epsilon, np.random.default_rng(seed))
        # What replay keeps of the state: VDN's mixer reads none.
        replay = GroupReplay(view, config.replay_buffer_size, context.n_envs, state_size if mixer.reads_state else 0,
                             config, seed, context.device, team_reward=True)
        return cls(view, q, policy, replay, config, context.device)

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
        self.replay.store(states.to(self.device), grid, actions)
        return actions

    def greedy(self, states: StateArray) -> torch.Tensor:
        n_envs = states.shape[0]
        lanes = flat_lanes(self.view.grid(states).to(self.device))
        mask = lanes.get(ACTION_MASK)
        return legal_argmax(self.utilities(lanes, n_envs), mask).view(n_envs, self.size)

    def update(self) -> None:
        """One gradient step on ``batch_size`` frames: Q_tot against its TD target (module docstring)."""
        config = self.config
        batch, (own, state, acts), (next_own, next_state, _) = self.replay.frames(config.batch_size)
        b, n = acts.shape
        weights = batch.next_mask.view(b, n)  # agents whose value counts in the next state's mix
        next_masks = None if batch.next_action_mask is None else batch.next_action_mask.view(b, n, -1)
        with torch.no_grad():
            chosen = None
            if config.double_q:
                chosen = legal_argmax(self.q.model.utilities(next_own), next_masks)
            next_value = self.q.target(next_own, next_state, weights, chosen, next_masks)
            target = batch.reward.view(b, n)[:, 0] + config.discount_factor * weights.amax(1) * next_value
        value = self.q(own, state, acts, batch.action.view(b, n))
        self.q.reinforce(LOSS_FUNCTIONS[config.loss](value, target).mean())

    def state_dict(self) -> dict:
        return self.q.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.q.load_state_dict(state)

    def generators(self) -> dict[str, Any]:
        return {"policy": self.policy}


# -- the team agent ---------------------------------------------------------------------------------------------
class QMIX(TeamOffPolicy):
    """QMIX (or VDN) for every group of a team: ``groups[name]`` is the group's learner, all on one clock."""

    Config = QMIXConfig

    def __init__(self, groups: dict[str, GroupQ], clock: Clock, config: QMIXConfig, n_envs: int):
        super().__init__(groups, clock, config, n_envs)
        self._sync_every = max(1, config.target_update_frequency // n_envs)

    @classmethod
    def from_config(cls, config: QMIXConfig, context: TeamBuildContext) -> QMIX:
        clock = Clock()
        epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        return cls.of_groups(config, context, clock, lambda own, name, group, seed: GroupQ.build(
            own, context, name, group, seed, group_schedule(epsilon, config, own, "epsilon", clock, name)))

    def _between_updates(self) -> None:
        """A target copy when one is due (fixed targets)."""
        if self._due(self._sync_every):
            for group in self.groups.values():
                if group.config.target == "fixed":
                    group.q.target_network.sync()

    def test_agent(self) -> QMIXTestAgent:
        return QMIXTestAgent(self.groups)


class VDN(QMIX):
    Config = VDNConfig


class QMIXTestAgent(GroupsTestAgent):
    """Every agent's greedy legal action by its utilities (no exploration)."""

    def __init__(self, groups: dict[str, GroupQ]):
        self.groups = groups

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        return {name: group.greedy(team[name]) for name, group in self.groups.items()}

    def group_graph(self, name: str) -> tuple[PolicyGraph, gym.Space]:
        """Group ``name``'s greedy policy as a graph of each agent's inputs (its view, then its one-hot index
        where the shared network reads one), and their space (``rlconf export --group``)."""
        group = self.groups[name]
        view, network = group.view, self.shared(group.q.model.utilities.networks, name, "utilities")
        graph = PolicyGraph(lambda observations, mask=None: legal_argmax(network(observations), mask),
                            {"q": network})
        return view.fed_ids(graph), view.actor_space
