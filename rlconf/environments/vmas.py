"""VMAS (the vmas package): ``n_envs`` copies of a multi-robot scenario simulated at once by torch, a team.

``env.id`` names the scenario (``balance``, ``navigation``...), ``env.kwargs`` its own arguments (``n_agents``,
``package_mass``...) plus ``continuous_actions`` (default true; false: each agent picks one of VMAS's discrete
moves), and ``env.max_episode_steps`` its horizon (VMAS's ``max_steps``: a truncation). The agents fall into
groups by name (``agent_0``, ``agent_1``... are the group ``agent``; ``rlconf.core.team``). VMAS has no global
state: a group's ``global_state`` is every agent's observation concatenated (``has_state`` false), as
BenchMARL's centralised critics read VMAS. Rewards are each agent's (VMAS's shared rewards give every agent the
team's). Observations are float32, ``(n_envs, agents, obs_dim)`` per group, on ``hardware.device``.

A copy whose episode ended shows its final state once; the next step resets it (its actions are ignored, its
reward is 0): ``rlconf.environments.teams``.

Seeding: VMAS (1.5) draws its random layouts from generators of its own (torch's, numpy's, Python's states,
swapped in around each of its calls), but one set for every VMAS environment of the process. Each adapter keeps
its own set and swaps it in around its calls, so an evaluation that reseeds its copies does not replay the same
layouts in the training copies; ``reset(seed)`` reseeds it: the same seed gives the same episodes. (VMAS swaps
torch's CPU generator only: on a GPU its draws come from torch's CUDA generator, which checkpoints save.)
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.core.team import TeamState
from rlconf.environments.teams import TeamEnvironment, check_team_options, concatenated_space, float_box
from rlconf.errors import ConfigError, require


class VmasEnvironment(TeamEnvironment):
    """``n_envs`` copies of the VMAS scenario ``env_id`` (see the module's docstring)."""

    action_kind_option = "env.kwargs.continuous_actions"
    serial_only = "VMAS steps every copy at once in torch in the run's process"

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, vectorization: str = "auto",
                 max_episode_steps: int | None = None, device: str | torch.device = "cpu", name: str | None = None,
                 render_mode: str | None = None, wrappers: Sequence[Callable] = (), seed: int | None = None):
        check_team_options("vmas", vectorization, wrappers)
        kwargs = dict(kwargs or {})
        continuous = kwargs.pop("continuous_actions", True)
        require(isinstance(continuous, bool), "env.kwargs.continuous_actions", continuous, "allowed: true, false")
        self.name = name or f"vmas/{env_id}"
        self.n_envs = n_envs
        self.device = torch.device(device)
        self.render_mode = render_mode
        self.continuous_actions = continuous
        self.env = self._make(env_id, kwargs, max_episode_steps, seed)
        self.simulator_fps = 1 / float(self.env.world.dt)  # a step is dt seconds of the world: videos in real time
        vmas_agents = [agent.name for agent in self.env.agents]
        observations = {a: float_box(s, env_id, "observations")
                        for a, s in zip(vmas_agents, self.env.observation_space, strict=True)}
        actions = {a: _action_space(s, env_id) for a, s in zip(vmas_agents, self.env.action_space, strict=True)}
        self._set_groups(env_id, vmas_agents, observations, actions, concatenated_space(list(observations.values())),
                         has_state=False)
        # Each group's agents' positions among VMAS's agents, in group order: where its actions go.
        position = {agent: i for i, agent in enumerate(vmas_agents)}
        self._slots = {g: [position[a] for a in group.agents] for g, group in self.agent_groups.items()}
        self._open_books()
        self._pending = torch.zeros(n_envs, dtype=torch.bool, device=self.device)  # reset on the next step
        self._all_alive = torch.ones(n_envs, len(vmas_agents), dtype=torch.bool, device=self.device)

    def _make(self, env_id: str, kwargs: dict, max_steps: int | None, seed: int | None):
        import vmas
        from vmas.simulator.environment import Environment as VmasEnv

        require(env_id in scenarios(), "env.id", env_id, f"allowed: a VMAS scenario: {', '.join(scenarios())}")
        shared = VmasEnv.vmas_random_state
        # A new adapter's generators start from the process's (seeded by the run) until a seed is given.
        self._random_state = [torch.get_rng_state(), np.random.get_state(), random.getstate()]
        shared[:] = self._random_state
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env = vmas.make_env(env_id, num_envs=self.n_envs, device=self.device,
                                continuous_actions=self.continuous_actions, max_steps=max_steps, seed=seed,
                                terminated_truncated=True, clamp_actions=True, **kwargs)
        self._random_state = list(shared)
        # VMAS only warns of a scenario argument it does not take (a typo would change nothing, silently).
        unused = [str(w.message).split(" passed but")[0].removeprefix("Scenario kwargs: ") for w in caught
                  if "not used by the scenario" in str(w.message)]
        if unused:
            raise ConfigError(f"env.kwargs: {unused[0]} not used by the VMAS scenario {env_id}")
        return env

    def _vmas(self, call: Callable, *args, **kwargs) -> Any:
        """``call`` (a VMAS method) with this adapter's generators in VMAS's place (see the module docstring)."""
        shared = type(self.env).vmas_random_state
        shared[:] = self._random_state
        try:
            return call(*args, **kwargs)
        finally:
            self._random_state = list(shared)

    # -- the public interface ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> TeamState:
        """Every copy's first state; ``seed`` reseeds the scenario's random layouts."""
        observations = self._vmas(self.env.reset, seed=seed)
        self._restart_books()
        # a new tensor: the last step's may be an inference tensor (an evaluation steps under inference_mode)
        self._pending = torch.zeros(self.n_envs, dtype=torch.bool, device=self.device)
        zeros = torch.zeros(self.n_envs, len(self.agents), device=self.device)
        no = zeros.bool()
        return self._state(observations, zeros, no, no)

    def step(self, actions: dict[str, torch.Tensor]) -> TeamState:
        """Apply each group's actions, ``(n_envs, agents, *action_shape)``; copies that ended last step reset."""
        observations, rewards, terminated, truncated, _ = self._vmas(self.env.step, self._vmas_actions(actions))
        reward = torch.stack([r.reshape(self.n_envs) for r in rewards], dim=1)  # wheel's are (n_envs, 1)
        reset = self._pending
        if bool(reset.any()):  # every copy at once when all ended together (a fixed horizon), else one by one
            if bool(reset.all()):
                observations = self._vmas(self.env.reset)
            else:
                *first, last = reset.nonzero().flatten().tolist()
                for i in first:
                    self._vmas(self.env.reset_at, i, return_observations=False)
                observations = self._vmas(self.env.reset_at, last)
            reward = reward.masked_fill(reset.unsqueeze(1), 0.0)
            terminated = terminated & ~reset
            truncated = truncated & ~reset
        done = terminated | truncated
        self._keep_books(reward, ~reset, done)
        self._pending = done
        agents = len(self.agents)
        return self._state(observations, reward, done.unsqueeze(1).expand(-1, agents),
                           terminated.unsqueeze(1).expand(-1, agents))

    def render(self) -> np.ndarray | None:
        """Copy 0's scene: an RGB array (VMAS draws it with pyglet, off-screen), or a window (``human``)."""
        return self.env.render(mode="human" if self.render_mode == "human" else "rgb_array", env_index=0)

    def close(self) -> None:
        viewer = getattr(self.env, "viewer", None)
        if viewer is not None:
            viewer.close()

    # -- between rlconf and VMAS ---------------------------------------------------------------------------
    def _state(self, observations: list[torch.Tensor], reward: torch.Tensor, done: torch.Tensor,
               terminated: torch.Tensor) -> TeamState:
        by_group = {g: torch.stack([observations[i] for i in slots], dim=1) for g, slots in self._slots.items()}
        return self._team_state(by_group, reward, done, terminated, self._all_alive, torch.cat(observations, dim=1))

    def _vmas_actions(self, actions: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Each VMAS agent's actions, ``(n_envs, action_size)``, from the groups' ``(n_envs, agents, ...)``."""
        listed: list[torch.Tensor | None] = [None] * len(self.agents)
        for group, slots in self._slots.items():
            acts = actions[group].to(self.device)
            for k, i in enumerate(slots):
                listed[i] = acts[:, k]
        return listed


def _action_space(space: Any, env_id: str) -> gym.Space:
    """A VMAS agent's action space (gym's) as gymnasium's: a float32 Box, or Discrete."""
    if type(space).__name__ == "Discrete":
        return gym.spaces.Discrete(int(space.n))
    return float_box(space, env_id, "actions")


def scenarios() -> list[str]:
    """The names of VMAS's scenarios: its own, its MPE ports and its debug ones."""
    import vmas

    return sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios})
