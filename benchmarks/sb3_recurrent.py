"""The reference beside rlconf's recurrent PPO on the velocity-masked tasks: SB3-contrib's RecurrentPPO trained at the
RL Zoo's settings for that task (rl-baselines3-zoo, hyperparams/ppo_lstm.yml), then tested greedily as rlconf's
learning rows are (100 episodes, the policy's mean action, its LSTM state carried through each episode).

    python benchmarks/sb3_recurrent.py cartpole --seed 0          # CartPoleNoVel-v1's settings, 100k steps
    python benchmarks/sb3_recurrent.py pendulum --seed 0          # PendulumNoVel-v1's (gSDE), 100k steps
    python benchmarks/sb3_recurrent.py pendulum-agent --seed 0    # the settings of the Zoo's published agent
    python benchmarks/sb3_recurrent.py pendulum --seed 0 --no-sde # a plain Gaussian instead of gSDE, as rlconf's

The Zoo publishes 500 (CartPoleNoVel-v1) and -217.9 ± 140.1 (PendulumNoVel-v1) after 100k steps (its
benchmark.md); this script says what the same settings give on this machine with the installed versions. The
velocities are hidden as rlconf's ``body=mask_velocity`` hides them (presets.MaskedComponents). Settings not
named below are RecurrentPPO's defaults (an LSTM of 256 before [64, 64] tanh layers, actor and critic each with
its own). ``pendulum`` is today's hyperparams/ppo_lstm.yml; ``pendulum-agent`` the configuration the Zoo's
trained PendulumNoVel-v1 agent records (sb3/ppo_lstm-PendulumNoVel-v1 on the Hugging Face Hub: observations
normalised, ReLU, an LSTM of 64, [64] after it), from the Zoo's version that published the figure. One torch
thread; prints one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from presets import MaskedComponents  # noqa: E402  (benchmarks/ on the path first)

# RecurrentPPO's settings per task, from the Zoo; "copies" is n_envs, "normalize" VecNormalize's observations
PENDULUM = {"n_steps": 1024, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10, "ent_coef": 0.0,
            "learning_rate": 1e-3, "clip_range": 0.2, "use_sde": True, "sde_sample_freq": 4}
TASKS = {
    "cartpole": {"env_id": "CartPole-v1", "masked": [1, 3], "copies": 8, "normalize": False,
                 "settings": {"n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20,
                              "ent_coef": 0.0, "learning_rate": "lin_1e-3", "clip_range": "lin_0.2"}},
    "pendulum": {"env_id": "Pendulum-v1", "masked": [2], "copies": 4, "normalize": False, "settings": PENDULUM},
    "pendulum-agent": {"env_id": "Pendulum-v1", "masked": [2], "copies": 4, "normalize": True,
                       "settings": {**PENDULUM, "policy_kwargs": {
                           "ortho_init": False, "activation_fn": torch.nn.ReLU, "lstm_hidden_size": 64,
                           "enable_critic_lstm": True, "net_arch": {"pi": [64], "vf": [64]}}}},
}
TEST_EPISODES = 100


def schedule(value):
    """The Zoo's ``lin_X``: X decaying linearly to 0 over training (SB3 passes the progress remaining, 1 -> 0)."""
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda progress: progress * start
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=100_000, help="the Zoo's budget for both tasks")
    parser.add_argument("--no-sde", action="store_true", help="a state-independent Gaussian instead of gSDE")
    args = parser.parse_args()

    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)
    task = TASKS[args.task]
    settings = {key: schedule(value) for key, value in task["settings"].items()}
    if args.no_sde:
        settings.pop("use_sde", None)
        settings.pop("sde_sample_freq", None)
    wrap = {"wrapper_class": MaskedComponents, "wrapper_kwargs": {"masked": task["masked"]}}
    env = make_vec_env(task["env_id"], n_envs=task["copies"], seed=args.seed, **wrap)
    test_env = make_vec_env(task["env_id"], n_envs=1, seed=args.seed + 1000, **wrap)
    if task["normalize"]:  # the test reads the training's statistics, frozen
        env = VecNormalize(env, norm_obs=True, norm_reward=False)
        test_env = VecNormalize(test_env, norm_obs=True, norm_reward=False, training=False)
    model = RecurrentPPO("MlpLstmPolicy", env, seed=args.seed, device="cpu", **settings)
    model.learn(args.steps)
    if task["normalize"]:
        test_env.obs_rms = env.obs_rms
    # Greedy, the LSTM state carried through each episode and reset at its start (as benchmarks/trial.py tests SB3)
    returns, _ = evaluate_policy(model, test_env, n_eval_episodes=TEST_EPISODES, deterministic=True,
                                 return_episode_rewards=True)
    print(f"sb3-contrib RecurrentPPO {task['env_id']} without velocities ({args.task}), seed {args.seed}, "
          f"{args.steps:,} steps{', no gSDE' if args.no_sde else ''}: test {np.mean(returns):.1f} ± "
          f"{np.std(returns):.1f} over {len(returns)} episodes")


if __name__ == "__main__":
    main()
