"""The limit: each benchmark workload's arithmetic in plain eager PyTorch, with nothing around it.

What rlconf does per step, written the shortest way (CleanRL's style): the same environment steps (the
gymnasium env itself), the same networks, the same updates on minibatches of the same shapes, the same
optimiser and schedules, a preallocated replay, the fastest eager primitives rlconf also uses (fused Adam,
foreach gradient clipping, its linear layers' kernels and its tanh). No config, registry, logging, checkpoints,
adapters, bodies or progress. Timed as the benchmark times rlconf: training steps per second of wall time, one
torch thread, then a greedy test that is not timed. rlconf's rate over this one says what the platform costs
beyond the arithmetic.

Run by trial.py (``limit-train WORKLOAD``) from the workload's composed settings (presets.load_settings), so a
preset change reaches this side too; a setting the limit does not implement fails loudly.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rlconf.memory.prioritized import SumTree, proportional_draw
from rlconf.nn import model_settings
from rlconf.nn.layers import Linear, activation  # rlconf's kernels: oneDNN's products where faster, tanh via sigmoid
from rlconf.policies.soft_deterministic import LOG_STD_MAX, LOG_STD_MIN, squashed_log_prob
from rlconf.settings import Settings


class Unsupported(ValueError):
    """A workload setting the limit scripts do not implement."""


def require(condition: bool, what: str) -> None:
    if not condition:
        raise Unsupported(f"the limit script does not implement {what}")


def mlp(sizes: list[int], activation_name: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(activation(activation_name)())
    return nn.Sequential(*layers)


def adam(params, lr: float, eps: float) -> torch.optim.Adam:
    return torch.optim.Adam(params, lr=lr, eps=eps, fused=True)


def linear(start: float, end: float, duration: int, step: int) -> float:
    return end + (start - end) * max(0.0, 1.0 - step / duration)


def replay(size: int, **fields) -> dict[str, np.ndarray]:
    """Preallocated numpy arrays, written a row a step (cheaper than indexing tensors), drawn from through
    torch views of them (``views``). ``fields``: name -> shape, or (shape, dtype); float32 unless said."""
    arrays = {}
    for name, spec in fields.items():
        shape, dtype = spec if len(spec) == 2 and isinstance(spec[1], type) else (spec, np.float32)
        arrays[name] = np.zeros((size, *shape), dtype=dtype)
    return arrays


def views(arrays: dict[str, np.ndarray]) -> list[torch.Tensor]:
    return [torch.from_numpy(array) for array in arrays.values()]


def greedy_test(env_id: str, act, episodes: int, seed: int) -> tuple[float | None, float | None]:
    if episodes == 0:
        return None, None
    env, returns = gym.make(env_id), []
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(act(observation))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns)), float(np.std(returns))


def result(steps: int, seconds: float, test: tuple[float | None, float | None], episodes: int) -> dict[str, Any]:
    return {"steps": steps, "wall_seconds": round(seconds, 2), "steps_per_second": round(steps / seconds, 1),
            "test_return_mean": test[0], "test_return_std": test[1], "test_episodes": episodes}


# -- environments and networks as rlconf's presets build them ------------------------------------------------
class AtariVectorEnvs:
    """``n`` games of ale-py's C++ vector env with rlconf's settings and the body's training view (stacked
    frames, the reward's sign, a lost life ends an episode for the learner), next-step resets."""

    def __init__(self, settings: Settings, n: int):
        from rlconf.environments.atari import AtariSettings, game_of, make_native_env

        atari = AtariSettings.from_kwargs(settings.env.kwargs)
        require(settings.body.frame_stack == 4 and settings.body.clip_rewards and settings.body.episodic_lives,
                "Atari beyond DeepMind's preprocessing")
        # rlconf's simulator, its frames stacked by the simulator (rlconf's body stacks them in torch)
        self.env = make_native_env(game_of(settings.env.id), n, atari, atari.episode_steps(None),
                                   frame_stack=settings.body.frame_stack)
        self.single_observation_space, self.single_action_space = (self.env.single_observation_space,
                                                                   self.env.single_action_space)
        self.lives = np.zeros(n, np.int64)

    def reset(self, seed: int):
        observation, info = self.env.reset(seed=seed)
        self.lives = info["lives"]
        return observation, info

    def step(self, actions: np.ndarray):
        observation, reward, terminated, truncated, info = self.env.step(actions)
        ended = terminated | truncated  # the game's end: the next step resets it
        lost = (info["lives"] < self.lives) & ~ended
        self.lives = info["lives"]
        return observation, np.sign(reward), terminated | lost, truncated, {**info, "ended": ended}

    def close(self) -> None:
        self.env.close()


class ClassicEnv:
    """One gymnasium env as the DQN loop steps it: ``step`` -> (next observation, reward, mask, the observation
    to act on next: the next one, or after an episode's end the next episode's first)."""

    def __init__(self, settings: Settings, seed: int):
        self.env, self.seed = gym.make(settings.env.id), seed
        self.observation_space, self.n_actions = self.env.observation_space, int(self.env.action_space.n)

    def reset(self) -> np.ndarray:
        return self.env.reset(seed=self.seed)[0]

    def step(self, action: int) -> tuple[np.ndarray, float, bool, np.ndarray]:
        observation, reward, terminated, truncated, _ = self.env.step(action)
        following = self.env.reset()[0] if terminated or truncated else observation
        return observation, float(reward), not terminated, following


class AtariEnv(ClassicEnv):
    """One game of ``AtariVectorEnvs`` as the DQN loop steps it. The step after a game's end starts the next
    game (its action ignored; not counted, as rlconf does not count it)."""

    def __init__(self, settings: Settings, seed: int):
        self.env, self.seed = AtariVectorEnvs(settings, 1), seed
        self.observation_space, self.n_actions = self.env.single_observation_space, int(self.env.single_action_space.n)

    def reset(self) -> np.ndarray:
        return self.env.reset(seed=self.seed)[0][0]

    def step(self, action: int) -> tuple[np.ndarray, float, bool, np.ndarray]:
        observation, reward, terminated, _, info = self.env.step(np.array([action]))
        following = self.env.step(np.array([0]))[0] if info["ended"][0] else observation  # the reset step
        return observation[0], float(reward[0]), not terminated[0], following[0]


def nature_cnn(n_actions: int | None) -> nn.Sequential:
    """rlconf's Nature CNN: channels-last layout, frames to [0, 1], three convolutions, 512 units, then a
    linear output per action (None: the trunk, ending in the 512 units' ReLU)."""

    class Frames(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.contiguous(memory_format=torch.channels_last).float().mul_(1 / 255)

    trunk = nn.Sequential(Frames(), nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2),
                          nn.ReLU(), nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(), Linear(3136, 512),
                          nn.ReLU())
    return trunk if n_actions is None else trunk.append(Linear(512, n_actions))


# -- DQN: one environment, epsilon-greedy, bursts of updates on one replay draw ------------------------------
def dqn(settings: Settings, seed: int, test_episodes: int) -> dict[str, Any]:
    a, model, steps = settings.agent, settings.approximation, settings.run.steps
    require(settings.hardware.n_envs == 1 and a.replay == "uniform" and a.n_steps == 1 and a.target == "fixed",
            "DQN beyond one env, uniform one-step replay and a fixed target")
    require(not model["dueling"] and not model["noisy"] and not a.double_q, "DQN beyond a plain Q network")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = AtariEnv(settings, seed) if settings.env.family == "atari" else ClassicEnv(settings, seed)
    shape, dtype, n_actions = env.observation_space.shape, env.observation_space.dtype.type, env.n_actions
    if model["model"] == "nature_cnn":
        require(model["hidden"] == 512 and model["scale_frames"], "the Nature CNN beyond 512 units on scaled frames")
        q = nature_cnn(n_actions)
    else:
        require(model["model"] == "mlp", f"DQN on {model['model']}")
        q = mlp([shape[0], *model["hidden"], n_actions], model["activation"])
    target = copy.deepcopy(q)
    optimizer = adam(q.parameters(), a.lr, a.adam_eps)
    loss_function = {"huber": F.smooth_l1_loss, "mse": F.mse_loss}[a.loss]
    size = min(a.replay_buffer_size, steps)
    memory = replay(size, observations=(shape, dtype), next_observations=(shape, dtype), actions=((), np.int64),
                    rewards=(), masks=())
    observations, next_observations, actions, rewards, masks = views(memory)
    lr_final = a.lr if a.lr_final is None else a.lr_final
    sync_due = False

    start = time.perf_counter()
    observation = env.reset()
    for step in range(steps):
        epsilon = linear(a.epsilon, a.epsilon_final, a.epsilon_decay_steps, step)
        if rng.random() < epsilon:
            action = int(rng.integers(n_actions))
        else:
            with torch.no_grad():
                action = int(q(torch.from_numpy(observation).unsqueeze(0)).argmax(1))
        next_observation, reward, mask, following = env.step(action)
        slot = step % size
        memory["observations"][slot], memory["next_observations"][slot] = observation, next_observation
        memory["actions"][slot], memory["rewards"][slot], memory["masks"][slot] = action, reward, mask
        observation = following
        done = step + 1
        sync_due |= done % a.target_update_frequency == 0
        if done < a.replay_start_size or done % a.update_frequency:
            continue
        if sync_due:  # refreshes fallen due since the last burst: the weights have not changed since
            target.load_state_dict(q.state_dict())
            sync_due = False
        for group in optimizer.param_groups:
            group["lr"] = linear(a.lr, lr_final, steps, done)
        drawn = torch.randint(0, min(done, size), (a.gradient_steps * a.batch_size,))
        with torch.no_grad():  # one target pass for the burst: the target does not move within it
            targets = rewards[drawn] + a.discount_factor * masks[drawn] * target(next_observations[drawn]).max(1).values
        for first in range(0, len(drawn), a.batch_size):
            part = drawn[first:first + a.batch_size]
            values = q(observations[part]).gather(1, actions[part].unsqueeze(1)).squeeze(1)
            loss = loss_function(values, targets[first:first + a.batch_size])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if a.clip_grad:
                nn.utils.clip_grad_norm_(q.parameters(), a.clip_grad, foreach=True)
            optimizer.step()
    seconds = time.perf_counter() - start

    def act(observation):
        with torch.no_grad():
            return int(q(torch.from_numpy(observation).unsqueeze(0)).argmax(1))

    return result(steps, seconds, greedy_test(settings.env.id, act, test_episodes, seed + 1_000_003), test_episodes)


# -- Rainbow (and DER, its data-efficient settings): one environment, noisy acting, prioritized n-step replay ----
def project(support: torch.Tensor, rewards: torch.Tensor, discounts: torch.Tensor,
            probabilities: torch.Tensor) -> torch.Tensor:
    """The distribution of ``rewards + discounts * Z`` on the support (C51's projection, Bellemare et al. 2017)."""
    atoms, v_min, v_max = len(support), float(support[0]), float(support[-1])
    position = ((rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * support).clamp(v_min, v_max) - v_min) \
        / ((v_max - v_min) / (atoms - 1))
    lower, upper = position.floor().long(), position.ceil().long()
    lower[(upper > 0) & (lower == upper)] -= 1  # an exact hit would give both neighbours nothing
    upper[(lower < atoms - 1) & (lower == upper)] += 1
    projected = torch.zeros_like(probabilities)
    projected.scatter_add_(-1, lower, probabilities * (upper.float() - position))
    projected.scatter_add_(-1, upper, probabilities * (position - lower.float()))
    return projected


def rainbow(settings: Settings, seed: int, test_episodes: int) -> dict[str, Any]:
    """Hessel et al. 2018's update at the workload's settings: distributional (C51) double Q-learning on n-step
    returns from proportional prioritized replay, the dueling noisy network exploring (with the workload's
    epsilon-greedy schedule on top: DER's a constant 0.01, Rainbow's 0). The network
    is rlconf's own modules (its builder: the convolutions of ``approximation.convs``, dueling noisy streams),
    so the comparison measures everything around the arithmetic; the memory holds the whole run (DER's)."""
    a, steps = settings.agent, settings.run.steps
    require(settings.hardware.n_envs == 1 and settings.env.family == "atari" and a.target == "fixed",
            "Rainbow beyond one Atari env and a fixed target")
    require(a.replay == "prioritized" and a.double_q, "Rainbow beyond prioritized double Q-learning")
    require(a.replay_buffer_size >= steps, "Rainbow with a replay smaller than the run")
    require(test_episodes == 0, "a greedy test of Rainbow (the benchmark's Atari workloads are not tested)")
    torch.manual_seed(seed)
    env = AtariEnv(settings, seed)
    shape, n_actions = env.observation_space.shape, env.n_actions
    q = model_settings(settings.approximation).q_dist(env.observation_space, n_actions, a.atoms)
    target = copy.deepcopy(q)
    optimizer = adam(q.parameters(), a.lr, a.adam_eps)
    lr_final = a.lr if a.lr_final is None else a.lr_final
    support = torch.linspace(a.v_min, a.v_max, a.atoms)
    memory = replay(steps, observations=(shape, np.uint8), next_observations=(shape, np.uint8),
                    actions=((), np.int64), rewards=(), masks=(), ended=((), np.bool_))
    observations, next_observations, actions, rewards, masks, ended = views(memory)
    tree, rng, max_priority, sync_due = SumTree(steps), np.random.default_rng(seed), 1.0, False
    rows = torch.arange(a.batch_size)

    def n_step(first: torch.Tensor, newest: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rewards summed over up to n steps (fewer where the episode ends or the newest step comes first),
        the slot whose next observation is bootstrapped from, and gamma^k times its mask."""
        reward, discount, last = torch.zeros(len(first)), torch.ones(len(first)), first.clone()
        alive = torch.ones(len(first), dtype=torch.bool)
        for k in range(a.n_steps):
            slot = (first + k).clamp(max=newest)
            step = alive & (first + k <= newest)
            reward += torch.where(step, discount * rewards[slot], 0.0)
            discount = torch.where(step, discount * a.discount_factor, discount)
            last = torch.where(step, slot, last)
            alive = step & ~ended[slot]
        return reward, last, discount * masks[last]

    start = time.perf_counter()
    observation = env.reset()
    for step in range(steps):
        if rng.random() < linear(a.epsilon, a.epsilon_final, a.epsilon_decay_steps, step):  # DER's: on top of noise
            action = int(rng.integers(n_actions))
        else:
            with torch.no_grad():  # the online network in training mode: its noise explores
                values = (torch.softmax(q(torch.from_numpy(observation).unsqueeze(0)), -1) * support).sum(-1)
            action = int(values.argmax(1))
        next_observation, reward, mask, following = env.step(action)
        memory["observations"][step], memory["next_observations"][step] = observation, next_observation
        memory["actions"][step], memory["rewards"][step], memory["masks"][step] = action, reward, mask
        memory["ended"][step] = not mask or following is not next_observation
        tree.set(np.array([step]), np.array([max_priority ** a.alpha]))
        observation = following
        done = step + 1
        sync_due |= done % a.target_update_frequency == 0
        if done < a.replay_start_size or done % a.update_frequency:
            continue
        if sync_due:
            target.load_state_dict(q.state_dict())
            sync_due = False
        for group in optimizer.param_groups:
            group["lr"] = linear(a.lr, lr_final, steps, done)
        beta = linear(a.beta, 1.0, steps, done)
        for _ in range(a.gradient_steps):  # one draw per update: each sees the priorities the last one left
            slots, weights = proportional_draw(tree, rng, a.batch_size, done, beta)
            drawn = torch.from_numpy(slots)
            reward_n, last, discount = n_step(drawn, step)
            with torch.no_grad():
                bootstrap = next_observations[last]
                best = (torch.softmax(q(bootstrap), -1) * support).sum(-1).argmax(1)
                targets = project(support, reward_n, discount, torch.softmax(target(bootstrap), -1)[rows, best])
            log_probabilities = torch.log_softmax(q(observations[drawn]), -1)[rows, actions[drawn]]
            losses = -(targets * log_probabilities).sum(-1)
            optimizer.zero_grad(set_to_none=True)
            (torch.from_numpy(weights.astype(np.float32)) * losses).mean().backward()
            if a.clip_grad:
                nn.utils.clip_grad_norm_(q.parameters(), a.clip_grad, foreach=True)
            optimizer.step()
            priorities = losses.detach().double().numpy() + a.priority_epsilon
            max_priority = max(max_priority, float(priorities.max()))
            tree.set(slots, priorities ** a.alpha)
    seconds = time.perf_counter() - start
    return result(steps, seconds, (None, None), test_episodes)


# -- SAC: one environment, random warm-up, one update a step, one backward pass for all three losses --------
def sac(settings: Settings, seed: int, test_episodes: int) -> dict[str, Any]:
    a, model, steps = settings.agent, settings.approximation, settings.run.steps
    require(settings.hardware.n_envs == 1 and a.update_frequency == 1 and a.gradient_steps == 1,
            "SAC beyond one env and one update a step")
    require(model["model"] == "mlp" and settings.body.name == "none", "SAC beyond plain MLPs without a body")
    torch.manual_seed(seed)
    env = gym.make(settings.env.id)
    n_obs, n_act = env.observation_space.shape[0], env.action_space.shape[0]
    low, high = (torch.as_tensor(x, dtype=torch.float32) for x in (env.action_space.low, env.action_space.high))
    hidden, activation_name = model["hidden"], model["activation"]
    policy = mlp([n_obs, *hidden, 2 * n_act], activation_name)
    critics = [mlp([n_obs + n_act, *hidden, 1], activation_name) for _ in range(2)]
    targets = [copy.deepcopy(critic) for critic in critics]
    log_alpha = torch.zeros(1, requires_grad=True)  # temperature_initial 1
    require(a.temperature is None and a.temperature_initial == 1.0, "SAC with a fixed or other initial temperature")
    entropy_target = -float(n_act) if a.entropy_target is None else a.entropy_target
    optimizers = [adam(critic.parameters(), a.lr_q, a.adam_eps) for critic in critics]
    optimizers += [adam(policy.parameters(), a.lr_pi, a.adam_eps), adam([log_alpha], a.lr_temperature, a.adam_eps)]
    size = min(a.replay_buffer_size, steps)
    memory = replay(size, observations=(n_obs,), next_observations=(n_obs,), actions=(n_act,), rewards=(), masks=())
    observations, next_observations, actions, rewards, masks = views(memory)

    def sample(observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = policy(observation).chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        return low + (torch.tanh(u) + 1.0) * 0.5 * (high - low), squashed_log_prob(u, noise, log_std)

    def q(critic: nn.Module, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return critic(torch.cat([observation, action], dim=-1)).squeeze(-1)

    critic_params = [list(critic.parameters()) for critic in critics]
    target_params = [list(target.parameters()) for target in targets]
    start = time.perf_counter()
    observation, _ = env.reset(seed=seed)
    for step in range(steps):
        obs = torch.as_tensor(observation, dtype=torch.float32)
        if step < a.replay_start_size:
            action = low + torch.rand(n_act) * (high - low)
        else:
            with torch.no_grad():
                action = sample(obs.unsqueeze(0))[0][0]
        next_observation, reward, terminated, truncated, _ = env.step(action.numpy())
        slot = step % size
        memory["observations"][slot], memory["actions"][slot] = observation, action.numpy()
        memory["next_observations"][slot], memory["rewards"][slot], memory["masks"][slot] = \
            next_observation, reward, not terminated
        observation = env.reset()[0] if terminated or truncated else next_observation
        if step + 1 < a.replay_start_size:
            continue
        drawn = torch.randint(0, min(step + 1, size), (a.batch_size,))
        o, act, nxt = observations[drawn], actions[drawn], next_observations[drawn]
        alpha = log_alpha.detach().exp()
        with torch.no_grad():
            next_actions, next_log_probs = sample(nxt)
            next_values = torch.min(q(targets[0], nxt, next_actions), q(targets[1], nxt, next_actions))
            y = rewards[drawn] + a.discount_factor * masks[drawn] * (next_values - alpha * next_log_probs)
        critic_loss = F.mse_loss(q(critics[0], o, act), y) + F.mse_loss(q(critics[1], o, act), y)
        new_actions, log_probs = sample(o)
        for params in critic_params:  # the critics' weights are constants in the policy's loss
            for p in params:
                p.requires_grad_(False)
        values = torch.min(q(critics[0], o, new_actions), q(critics[1], o, new_actions))
        for params in critic_params:
            for p in params:
                p.requires_grad_(True)
        policy_loss = (alpha * log_probs - values).mean()
        temperature_loss = -(log_alpha * (log_probs.detach() + entropy_target)).mean()
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        (critic_loss + policy_loss + temperature_loss).backward()
        for optimizer in optimizers:
            optimizer.step()
        with torch.no_grad():
            for params, target in zip(critic_params, target_params, strict=True):
                torch._foreach_lerp_(target, params, a.polyak_rate)
    seconds = time.perf_counter() - start

    def act(observation):
        with torch.no_grad():
            mean, _ = policy(torch.as_tensor(observation, dtype=torch.float32).unsqueeze(0)).chunk(2, dim=-1)
            return (low + (torch.tanh(mean) + 1.0) * 0.5 * (high - low))[0].numpy()

    return result(steps, seconds, greedy_test(settings.env.id, act, test_episodes, seed + 1_000_003), test_episodes)


# -- PPO: parallel environments, GAE, epochs of clipped updates (discrete actions) ----------------------------
def orthogonal(model: nn.Sequential, out_gain: float) -> nn.Sequential:
    linears = [layer for layer in model if isinstance(layer, (nn.Linear, nn.Conv2d))]
    for i, layer in enumerate(linears):
        nn.init.orthogonal_(layer.weight, out_gain if i == len(linears) - 1 else np.sqrt(2))
        nn.init.zeros_(layer.bias)
    return model


def ppo_networks(settings: Settings, n_obs: tuple[int, ...], n_actions: int) -> tuple[nn.Module, ...]:
    """(trunk, policy head, value head): rlconf's shared Nature CNN trunk with linear heads, or two MLPs."""
    model = settings.approximation
    init = orthogonal if model["ortho_init"] else (lambda m, gain: m)
    if model["model"] == "nature_cnn":
        require(model["shared"] and model["hidden"] == 512 and model["scale_frames"],
                "PPO on the Nature CNN beyond a shared trunk of 512 on scaled frames")
        trunk = init(nature_cnn(None), np.sqrt(2))
        return trunk, init(nn.Sequential(Linear(512, n_actions)), 0.01), init(nn.Sequential(Linear(512, 1)), 1.0)
    require(model["model"] == "mlp" and not model["shared"], f"PPO on {model['model']}")
    return (nn.Identity(), init(mlp([n_obs[0], *model["hidden"], n_actions], model["activation"]), 0.01),
            init(mlp([n_obs[0], *model["hidden"], 1], model["activation"]), 1.0))


def ppo(settings: Settings, seed: int, test_episodes: int) -> dict[str, Any]:
    a, steps, n = settings.agent, settings.run.steps, settings.hardware.n_envs
    require(a.lr_v is None, "PPO with a value learning rate of its own")
    torch.manual_seed(seed)
    if settings.env.family == "atari":
        envs = AtariVectorEnvs(settings, n)
    else:  # next-step resets, as rlconf's native vector envs
        envs = gym.make_vec(settings.env.id, num_envs=n, vectorization_mode="vector_entry_point")
    require(isinstance(envs.single_action_space, gym.spaces.Discrete), "PPO with continuous actions")
    space, n_actions = envs.single_observation_space, int(envs.single_action_space.n)
    trunk, policy, value = ppo_networks(settings, space.shape, n_actions)
    optimizers = [adam(m.parameters(), a.lr, a.adam_eps) for m in (trunk, policy, value) if list(m.parameters())]
    heads, trunk_params = [*policy.parameters(), *value.parameters()], list(trunk.parameters())
    lr_final = a.lr if a.lr_final is None else a.lr_final
    clip_final = a.clip if a.clip_final is None else a.clip_final
    T = a.n_steps
    rows = replay(T + 1, observations=((n, *space.shape), space.dtype.type), rewards=(n,), terminal=(n,),
                  done=((n,), np.bool_))
    observations, rewards, terminal, done = views(rows)
    actions, log_probs = torch.zeros(T, n, dtype=torch.long), torch.zeros(T, n)

    def update(obs, taken_actions, old_log_probs, advantages, returns, clip: float) -> None:
        if a.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        features = trunk(obs)
        logits = F.log_softmax(policy(features), dim=-1)
        ratio = torch.exp(logits.gather(1, taken_actions.unsqueeze(1)).squeeze(1) - old_log_probs)
        policy_loss = -torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages).mean()
        if a.entropy_loss_scaling:
            policy_loss = policy_loss + a.entropy_loss_scaling * (logits.exp() * logits).sum(-1).mean()
        value_loss = F.mse_loss(value(features).squeeze(-1), returns)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        (policy_loss + a.value_loss_scaling * value_loss).backward()
        for group in (heads, trunk_params):  # rlconf clips the heads together and the trunk on its own
            if group and a.clip_grad:
                nn.utils.clip_grad_norm_(group, a.clip_grad, foreach=True)
        for optimizer in optimizers:
            optimizer.step()

    start = time.perf_counter()
    observation, _ = envs.reset(seed=seed)
    rows["observations"][0] = observation
    taken = 0
    while taken < steps:
        for t in range(T):
            with torch.no_grad():
                logits = F.log_softmax(policy(trunk(observations[t])), dim=-1)
                actions[t] = torch.multinomial(logits.exp(), 1).squeeze(1)
                log_probs[t] = logits.gather(1, actions[t].unsqueeze(1)).squeeze(1)
            observation, reward, terminated, truncated, _ = envs.step(actions[t].numpy())
            rows["observations"][t + 1], rows["rewards"][t + 1] = observation, reward
            rows["terminal"][t + 1], rows["done"][t + 1] = terminated, terminated | truncated
            taken += n - int(np.count_nonzero(rows["done"][t]))  # a reset step (after an episode's end) is not counted
        for optimizer in optimizers:
            for group in optimizer.param_groups:
                group["lr"] = linear(a.lr, lr_final, steps, taken)
        clip = linear(a.clip, clip_final, steps, taken)
        with torch.no_grad():  # GAE over the rollout; a row whose state ended an episode starts no transition
            values = value(trunk(observations.flatten(0, 1))).view(T + 1, n)
            advantages = torch.zeros(T, n)
            running = torch.zeros(n)
            for t in reversed(range(T)):
                delta = rewards[t + 1] + a.discount_factor * (1 - terminal[t + 1]) * values[t + 1] - values[t]
                running = delta + a.discount_factor * a.lam * (~done[t + 1]) * running
                advantages[t] = running
            returns = advantages + values[:T]
        valid = ~done[:T]
        batch = (observations[:T][valid], actions[valid], log_probs[valid], advantages[valid], returns[valid])
        size = len(batch[0])
        for _ in range(a.epochs):
            if size <= a.batch_size:  # one minibatch: no order to draw
                update(*batch, clip)
                continue
            for part in torch.randperm(size).split(a.batch_size):
                update(*(x[part] for x in batch), clip)
        observations[0], rewards[0], terminal[0], done[0] = observations[T], rewards[T], terminal[T], done[T]
    seconds = time.perf_counter() - start

    def act(observation):
        with torch.no_grad():
            return int(policy(trunk(torch.as_tensor(observation, dtype=torch.float32).unsqueeze(0))).argmax(1))

    envs.close()
    return result(taken, seconds, greedy_test(settings.env.id, act, test_episodes, seed + 1_000_003), test_episodes)


ALGORITHMS = {"dqn": dqn, "sac": sac, "ppo": ppo, "rainbow": rainbow}


def implements(settings: Settings) -> bool:
    """Whether ``train`` can run the workload (its agent, and the settings the script covers)."""
    model = settings.approximation
    if settings.agent_name == "rainbow":
        return settings.body.name == "atari" and settings.hardware.n_envs == 1 and model["recurrent"] == "none" \
            and settings.agent.replay_buffer_size >= settings.run.steps
    if settings.agent_name in ("dqn", "ppo") and model["model"] == "nature_cnn":
        return settings.body.name == "atari" and model["recurrent"] == "none" and not (model["dueling"] or
                                                                                        model["noisy"])
    return settings.agent_name in ALGORITHMS and model["model"] == "mlp" and model["recurrent"] == "none" and \
        settings.body.name in ("none", "")


def train(settings: Settings, seed: int, test_episodes: int) -> dict[str, Any]:
    """The workload's limit trial: train at its settings, then test greedily."""
    require(settings.agent_name in ALGORITHMS, f"agent {settings.agent_name}")
    torch.set_num_threads(1)
    return ALGORITHMS[settings.agent_name](settings, seed, test_episodes)
