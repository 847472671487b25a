"""rlconf from Python: compose a run's config, train it, and act with a trained run's policy.

    import gymnasium as gym
    import rlconf

    run_dir, summary = rlconf.train(rlconf.compose("agent=dqn", "env=classic/cartpole", "steps=20000"))
    policy = rlconf.load(run_dir, checkpoint="best")
    env = gym.make("CartPole-v1")
    observation, _ = env.reset(seed=0)
    action = policy.act(observation)        # one raw gymnasium observation in, one action out

``compose`` and ``train`` are ``rlconf run``'s composition and loop (the same checks, the same run directory);
bad input raises ``rlconf.errors.ConfigError`` with the line the command would print. ``load`` reads a run
directory as ``rlconf eval`` does: its config.yaml as data and its checkpoint as tensors, nothing imported from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing rlconf stays cheap: numpy, omegaconf and torch load when used
    from omegaconf import DictConfig

    from rlconf.experiments.loop.callbacks import Callback


def compose(*overrides: str, config_dirs: Sequence[str] = ()) -> DictConfig:
    """The config ``rlconf run OVERRIDES`` would train, checked (a ConfigError names a bad key or value)."""
    from rlconf.errors import ConfigError
    from rlconf.pipeline import compose_run

    wrong = next((o for o in overrides if not isinstance(o, str)), None)
    if wrong is not None:  # rlconf.compose(["agent=dqn", ...]): each override is its own argument
        raise ConfigError(f"rlconf.compose: each override is a string argument, as typed after rlconf run "
                          f"(rlconf.compose('agent=dqn', 'env=classic/cartpole')); got {type(wrong).__name__} "
                          f"{wrong!r}; a list is passed as rlconf.compose(*overrides)")
    return compose_run(list(overrides), list(config_dirs))


def train(config: DictConfig | Sequence[str], callbacks: Sequence[Callback] = ()) -> tuple[Path, dict[str, Any]]:
    """Train the run ``config`` describes (a composed config, or the overrides to compose); returns its run
    directory and its summary (summary.json). ``callbacks``: ``rlconf.Callback`` objects told of the run's
    events (run start, each batch, episode ends, evaluations, checkpoints, run end), after the config's."""
    from omegaconf import DictConfig

    from rlconf.experiments.run import run
    from rlconf.pipeline import recorded_overrides

    cfg = compose(*config) if not isinstance(config, DictConfig) else config
    # The overrides compose() made it from go to overrides.yaml: resume= composes them again.
    summary = run(cfg, overrides=recorded_overrides(cfg), callbacks=callbacks)
    return Path(summary["run_dir"]), summary


def load(run_dir: str | Path, checkpoint: str = "last", device: str | None = None,
         plugins: Sequence[str] = ()) -> Policy:
    """The test agent of a trained run (``checkpoint``: ``last``, ``best`` or a kept step), acting on single
    observations. A PlaybackError (one line) when the directory holds no run or no such checkpoint."""
    from rlconf.experiments.playback.play import API_NAMES, load_run

    return Policy(load_run(run_dir, device, list(plugins), str(checkpoint), API_NAMES))


class Policy:
    """A trained run's greedy test agent (its body included: frame stacks, normalisers, recurrent state), acting
    on one observation at a time as a gymnasium environment returns it. ``reset()`` at each new episode."""

    def __init__(self, playback):
        env = playback.make_env(1)  # the run's spaces, as its tests saw them
        try:
            self._trained = playback.agent(env)
            self.observation_space = env.observation_space
            self.action_space = env.action_space
        finally:
            env.close()
        self.run_dir: Path = playback.run_dir
        self.step: int = playback.step  # the environment step its checkpoint was written at
        self.device = playback.settings.hardware.device
        self._agent = None
        self.reset()

    def reset(self) -> None:
        """A new episode: frame stacks and recurrent state start again."""
        self._agent = self._trained.test_agent()

    def act(self, observation, action_mask=None) -> Any:
        """The action for ``observation`` as the environment gives it (an int for a discrete action space, an
        array otherwise). A Dict or Tuple observation is given as its nested dicts or tuples of arrays; a batch
        of them (each array with a leading batch axis) gets a batch of actions. ``action_mask`` (or an
        ``action_mask`` key of a Dict observation): the legal actions, True where legal, as the environment
        says them."""
        import numpy as np
        import torch

        from rlconf.core.layout import ACTION_MASK, PLAIN, layout_of
        from rlconf.core.state import StateArray

        if isinstance(observation, Mapping) and ACTION_MASK in observation:
            observation = dict(observation)
            action_mask = observation.pop(ACTION_MASK) if action_mask is None else action_mask
            if layout_of(self.observation_space) is None and set(observation) == {PLAIN}:
                observation = observation[PLAIN]  # {observation, action_mask}: the plain observation
        x, batched = self._rows(observation)
        fields = {"observation": torch.from_numpy(x), "reward": torch.zeros(len(x)),
                  "done": torch.zeros(len(x), dtype=torch.bool), "mask": torch.ones(len(x))}
        if action_mask is not None:
            mask = np.asarray(action_mask, dtype=bool)
            fields[ACTION_MASK] = torch.from_numpy(mask.reshape(len(x), -1).copy())
        state = StateArray(fields, (len(x),))
        with torch.inference_mode():
            actions = self._agent.act(state.to(self.device)).cpu().numpy()
        if hasattr(self.action_space, "low"):  # continuous: within the Box, as the run's environments clip it
            actions = np.clip(actions, self.action_space.low, self.action_space.high).astype(self.action_space.dtype)
        if batched:
            return actions
        action = actions[0]
        return action.item() if np.ndim(action) == 0 and not hasattr(self.action_space, "low") else action

    def _rows(self, observation) -> tuple[Any, bool]:
        """``observation`` as the batch of rows the agent reads, and whether it was a batch already."""
        import numpy as np

        from rlconf.core.layout import layout_of

        space = self.observation_space
        layout = layout_of(space)
        if layout is None:
            x = np.asarray(observation, dtype=space.dtype)
            if x.shape[1:] == space.shape and x.ndim == len(space.shape) + 1:
                return x.copy(), True
            if x.shape != space.shape and (1, *x.shape) == tuple(space.shape):  # a frame without its channel axis
                x = x[None]
            if x.shape != space.shape:
                raise ValueError(f"an observation of shape {x.shape}; this policy takes {tuple(space.shape)}")
            return x[None].copy(), False
        leaves = layout.flat(observation)
        missing = [leaf.key for leaf in layout.inputs if leaf.key not in leaves]
        if missing:
            raise ValueError(f"the observation has no {', '.join(missing)}; this policy takes "
                             f"{', '.join(layout.keys)} ({space.original})")
        first = layout.inputs[0]
        shape = np.shape(leaves[first.key])
        batched = shape != first.shape
        if batched and tuple(shape[1:]) != first.shape:
            raise ValueError(f"{first.key}: an array of shape {shape}; this policy takes {list(first.shape)}, or a "
                             f"batch of them")
        if not batched:
            return layout.pack(leaves)[None], False
        return np.stack([layout.pack({key: value[i] for key, value in leaves.items()})
                         for i in range(shape[0])]), True
