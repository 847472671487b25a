"""Every kind of bad input gets one line naming what is wrong (and what is allowed), exit status 2, no
traceback, and leaves nothing behind: the whole table of malformed command lines, run in-process through
``rlconf.cli.main`` (the same code the ``rlconf`` command runs) so that the table stays fast.

Each case is a command line and words its one line must hold. ``{RUN}`` in a case stands for a finished run
directory, ``{BROKEN}`` for a folder of damaged copies of it, ``{FILE}`` for a plain file, ``{TMP}`` for the
folder the command runs in (which must stay empty)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import FAST_RUN, one_error_line, only_run_dir, run_cli_in, run_main, tagged_env, wait_until_gone

from rlconf.paths import config_dir

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]
AGENTS = sorted(p.stem for p in (config_dir() / "agent").glob("*.yaml"))


def case(*args: str, words: tuple[str, ...] | str = ()) -> tuple[list[str], tuple[str, ...]]:
    return list(args), (words,) if isinstance(words, str) else tuple(words)


def run(*args: str, words: tuple[str, ...] | str = ()):
    return case("run", *args, words=words)


CASES = [
    # -- the command line itself ---------------------------------------------------------------------------
    case("nope", words=("unknown command 'nope'", "run")),
    case("runn", *CARTPOLE, words="did you mean 'run'"),
    run("agent=dqn", words=("missing env", "classic/cartpole")),
    run("env=classic/cartpole", words=("missing agent", "dqn")),
    run(words="missing agent"),
    run(*CARTPOLE, "--bogus", words=("unknown option '--bogus'", "--multirun")),
    run(*CARTPOLE, "-x", words="unknown option '-x'"),
    run(*CARTPOLE, "--cfg", "nope", words=("--cfg nope", "job, hydra, all")),
    run(*CARTPOLE, "--cfg", words="--cfg needs a value"),
    run(*CARTPOLE, "--config-dir", "{TMP}/missing", words="no such directory"),
    run(*CARTPOLE, "--config-dir", words="--config-dir needs a value"),
    run(*CARTPOLE, "seed=0,1", words=("seed=0,1 is a sweep", "-m")),
    run(*CARTPOLE, "seed=range(3)", words="is a sweep"),
    run("agent=dqn,ppo", "env=classic/cartpole", words="is a sweep"),
    run(*CARTPOLE, "sweep=seeds", words="sweep=seeds is a sweep"),
    run("-m", *CARTPOLE, "--cfg", "job", words=("--cfg job", "leave out -m")),
    run("-m", *CARTPOLE, "hydra.job.name=a,b", words="cannot be swept"),
    run(*CARTPOLE, "agent.lr=", words="agent.lr"),
    run(*CARTPOLE, "agent.lr=[1,", words="cannot parse overrides"),
    run(*CARTPOLE, "=3", words=("=3", "needs a key")),
    run(*CARTPOLE, "agent.lr=choice(", words="cannot parse overrides"),
    case("list", "nope", words=("unknown group 'nope'", "agent")),
    case("status", words="usage: rlconf status"),
    case("status", "{TMP}/missing", words="{TMP}/missing"),
    case("status", "{TMP}", words="not a sweep directory"),
    case("status", "{TMP}", "--lines", "0", words="--lines 0"),
    case("status", "{TMP}", "--lines", "x", words="--lines x"),
    case("eval", words="usage: rlconf eval"),
    case("eval", "{TMP}/missing", words="no such run directory"),
    case("eval", "{TMP}", words="not a run directory"),
    case("eval", "{FILE}", words="no such run directory"),
    case("eval", "{RUN}", "--episodes", "0", words="--episodes 0"),
    case("eval", "{RUN}", "--episodes", "x", words="--episodes x"),
    case("eval", "{RUN}", "--seed", "-1", words="--seed -1"),
    case("eval", "{RUN}", "--bogus", words="unknown option '--bogus'"),
    case("eval", "{RUN}", "{RUN}", words="usage: rlconf eval"),
    case("eval", "{RUN}", "--device", "cuda", words=("--device cuda", "allowed: cpu")),
    case("eval", "{RUN}", "--device", "tpu", words="tpu"),
    case("eval", "{RUN}", "--plugins", "not a module", words="not a module name"),
    case("eval", "{RUN}", "--episodes", words="--episodes needs a value"),
    case("watch", "{RUN}", "--video", "{TMP}/out.avi", words=".mp4"),
    case("watch", "{RUN}", "--video", "{TMP}/missing/out.mp4", words="no such directory"),
    case("watch", "{RUN}", "--fps", "0", "--video", "{TMP}/out.mp4", words="--fps 0"),
    case("watch", "{RUN}", "--fps", "fast", "--video", "{TMP}/out.mp4", words="--fps fast"),
    case("watch", "{TMP}/missing", words="no such run directory"),
    case("plot", "{TMP}/missing", words="{TMP}/missing"),
    # -- config groups --------------------------------------------------------------------------------------
    run("agent=nope", "env=classic/cartpole", words=("agent", "nope", "dqn")),
    run("agent=dq", "env=classic/cartpole", words="did you mean 'dqn'"),
    run("agent=dqn", "env=nope", words=("env", "nope")),
    run("agent=dqn", "env=classic/nope", words="classic/nope"),
    run("agent=dqn", "env=atari/pongg", words="did you mean 'atari/pong'"),
    run(*CARTPOLE, "body=nope", words=("body", "nope")),
    run(*CARTPOLE, "approximation=nope", words=("approximation", "mlp")),
    run(*CARTPOLE, "hardware=nope", words=("hardware", "cpu")),
    run(*CARTPOLE, "logger=nope", words=("logger", "csv")),
    run(*CARTPOLE, "logger=[csv,nope]", words="nope"),
    run(*CARTPOLE, "preset=nope", words="preset"),
    run(*CARTPOLE, "family=nope", words="family"),
    run("-m", *CARTPOLE, "launcher=nope", words=("launcher", "local")),
    run("-m", *CARTPOLE, "sweep=nope", words=("sweep", "seeds")),
    run("-m", "agent=dqn,nope", "env=classic/cartpole", words="nope"),
    # -- keys -------------------------------------------------------------------------------------------------
    run(*CARTPOLE, "nope=1", words="nope"),
    run(*CARTPOLE, "stepss=1", words="did you mean 'steps'"),
    run(*CARTPOLE, "env.nope=1", words="env.nope"),
    run(*CARTPOLE, "hardware.nope=1", words="hardware.nope"),
    run(*CARTPOLE, "body.nope=1", words="body.nope"),
    run(*CARTPOLE, "logger.nope=1", words="logger.nope"),
    run(*CARTPOLE, "logger.csv.nope=1", words="logger.csv.nope"),
    run(*CARTPOLE, "approximation.nope=1", words="approximation.nope"),
    run(*CARTPOLE, "+agent.nope=1", words="agent.nope"),
    run(*CARTPOLE, "++agent.nope=1", words="agent.nope"),
    run(*CARTPOLE, "checkpoint.nope=1", words="checkpoint.nope"),
    run(*CARTPOLE, "agent.lr.x=1", words="agent.lr"),
    # -- keys as other libraries name them: suggested by meaning (registry.KEY_ALIASES) ---------------------------
    run(*CARTPOLE, "agent.gamma=0.9", words=("unknown key 'agent.gamma'", "did you mean 'agent.discount_factor'?")),
    run(*CARTPOLE, "+agent.gamma=0.9", words="did you mean 'agent.discount_factor'?"),
    run(*CARTPOLE, "agent.learning_rate=0.1", words="did you mean 'agent.lr'"),
    run("agent=sac", "env=classic/pendulum", "agent.learning_rate=0.1", words="'agent.lr_q' or 'agent.lr_pi'"),
    run("agent=q_learning", "env=tabular/taxi", "agent.learning_rate=0.1", words="did you mean 'agent.alpha'"),
    run(*CARTPOLE, "n_envs=4", words="did you mean 'hardware.n_envs'?"),
    run(*CARTPOLE, "num_envs=4", words="did you mean 'hardware.n_envs'?"),
    run(*CARTPOLE, "+num_envs=4", words="did you mean 'hardware.n_envs'?"),
    run(*CARTPOLE, "agent.n_envs=4", words="did you mean 'hardware.n_envs'?"),
    run(*CARTPOLE, "total_timesteps=5000", words="did you mean 'steps'?"),
    run(*CARTPOLE, "agent.total_timesteps=5000", words="did you mean 'steps'?"),
    run(*CARTPOLE, "random_seed=3", words="did you mean 'seed'?"),
    run(*CARTPOLE, "eval_freq=500", words="did you mean 'eval_every'?"),
    run(*CARTPOLE, "agent.buffer_size=500", words="did you mean 'agent.replay_buffer_size'?"),
    run(*CARTPOLE, "agent.learning_starts=500", words="did you mean 'agent.replay_start_size'?"),
    run(*CARTPOLE, "agent.tau=0.01", words="did you mean 'agent.target_rate'?"),
    run(*CARTPOLE, "agent.max_grad_norm=10", words="did you mean 'agent.clip_grad'?"),
    run(*CARTPOLE, "agent.exploration_final_eps=0.1", words="did you mean 'agent.epsilon_final'?"),
    run("agent=sac", "env=classic/pendulum", "agent.tau=0.01", words="did you mean 'agent.polyak_rate'?"),
    run("agent=sac", "env=classic/pendulum", "agent.alpha=0.2", words="did you mean 'agent.temperature_initial'?"),
    run("agent=td3", "env=classic/pendulum", "agent.policy_noise=0.1", words="did you mean 'agent.target_noise'?"),
    run("agent=ppo", "env=classic/cartpole", "agent.ent_coef=0.01", words="'agent.entropy_loss_scaling'"),
    run("agent=ppo", "env=classic/cartpole", "agent.clip_range=0.1", words="did you mean 'agent.clip'?"),
    run("agent=ppo", "env=classic/cartpole", "agent.gae_lambda=0.9", words="did you mean 'agent.lam'?"),
    run("agent=ppo", "env=classic/cartpole", "agent.n_epochs=3", words="did you mean 'agent.epochs'?"),
    run("agent=ppo", "env=classic/cartpole", "num_steps=64", words="did you mean 'agent.n_steps'?"),
    run(*CARTPOLE, "approximation.net_arch=[32]", words="did you mean 'approximation.hidden'?"),
    # -- long lists of options: the nearest, the families and where to see them all, in under 300 characters ------
    run("agent=dqn", "env=pong", words=("did you mean 'atari/pong' or 'pettingzoo/pong'?", "atari/ (",
                                        "see them all: rlconf list env")),
    run("agent=dqn", "env=classic/nosuch", words=("in classic/: classic/acrobot, classic/cartpole",)),
    run(*CARTPOLE, "agent.nosuchkey=1", words=("available: agent.name, agent.discount_factor", "more; see them all: "
                                                "rlconf run agent=dqn env=classic/cartpole --cfg job")),
    run(*CARTPOLE, "agent.lrr=1", words=("did you mean 'agent.lr'?", "28 keys; see them all")),
    # -- types and values -----------------------------------------------------------------------------------
    run(*CARTPOLE, "steps=abc", words="steps"),
    run(*CARTPOLE, "steps=1.5", words="steps"),
    run(*CARTPOLE, "steps=0", words=("steps=0", "positive")),
    run(*CARTPOLE, "steps=-5", words="steps=-5"),
    run(*CARTPOLE, "steps=true", words="steps"),
    run(*CARTPOLE, "steps=[1,2]", words="steps"),
    run(*CARTPOLE, "seed=-1", words=("seed=-1", "0 to")),
    run(*CARTPOLE, "seed=abc", words="seed"),
    run(*CARTPOLE, "seed=4294967296", words=("seed=4294967296", "4,294,967,295")),
    run(*CARTPOLE, "seed=999999999999999999999999999999", words="seed="),
    run(*CARTPOLE, "steps=1000000000000000000000000000000", words=("steps=", "1,000,000,000,000")),
    run(*CARTPOLE, "steps=10000000000000", words="at most"),
    run(*CARTPOLE, "agent.batch_size=99999999999999999999999", words=("agent.batch_size", "2^63")),
    run(*CARTPOLE, "agent.replay_buffer_size=-99999999999999999999999", words="agent.replay_buffer_size"),
    run(*CARTPOLE, "test_episodes=-1", words="test_episodes=-1"),
    run(*CARTPOLE, "eval_every=-1", words="eval_every=-1"),
    run(*CARTPOLE, "eval_episodes=-2", words="eval_episodes=-2"),
    run(*CARTPOLE, "checkpoint_every=-1", words="checkpoint_every=-1"),
    run(*CARTPOLE, "checkpoint.replay=maybe", words="checkpoint.replay"),
    run(*CARTPOLE, "quiet=maybe", words="quiet"),
    run(*CARTPOLE, "checkpoint.replay=3", words=("checkpoint.replay=3", "expected a bool", "true, false")),
    run("agent=r2d1", "env=classic/cartpole", "agent.input_priorities=3", words=("agent.input_priorities=3", "bool")),
    run(*CARTPOLE, "verbose=loud", words="verbose"),
    run(*CARTPOLE, "plugins=3", words="plugins"),
    run(*CARTPOLE, "plugins=[no_such_module_xyz]", words="no_such_module_xyz"),
    run(*CARTPOLE, "hardware.n_envs=0", words="hardware.n_envs=0"),
    run(*CARTPOLE, "hardware.n_envs=abc", words="hardware.n_envs"),
    run(*CARTPOLE, "hardware.torch_threads=0", words="hardware.torch_threads=0"),
    run(*CARTPOLE, "hardware.eval_envs=0", words="hardware.eval_envs=0"),
    run(*CARTPOLE, "hardware.device=tpu", words=("hardware.device=tpu", "cpu")),
    run(*CARTPOLE, "hardware.device=cuda", "hardware.gpus_per_run=1", words=("hardware.device=cuda", "cpu")),
    run(*CARTPOLE, "hardware.device=cuda", words="hardware.gpus_per_run"),
    run(*CARTPOLE, "hardware.vectorization=threads", words=("hardware.vectorization", "sync")),
    run(*CARTPOLE, "hardware.compile=maybe", words=("hardware.compile=maybe", "auto, true, false")),
    run(*CARTPOLE, "hardware.cpu_linear=mkl", words=("hardware.cpu_linear=mkl", "auto, onednn, torch")),
    run("agent=ppo", "env=classic/pendulum", "agent.squash=sigmoid", words=("agent.squash=sigmoid", "clip, tanh")),
    run(*CARTPOLE, "hardware.gpus_per_run=-1", words="hardware.gpus_per_run"),
    run(*CARTPOLE, "hardware.runs_per_gpu=0", words="hardware.runs_per_gpu"),
    run(*CARTPOLE, "hardware.runs_per_gpu=2", words="hardware.gpus_per_run=1"),
    run(*CARTPOLE, "hardware.cpus_per_run=0", words="hardware.cpus_per_run"),
    run(*CARTPOLE, "env.max_episode_steps=0", words="env.max_episode_steps"),
    run(*CARTPOLE, "env.family=nope", words="env.family"),
    run(*CARTPOLE, "env.id=NoSuchEnv-v0", words="env.id=NoSuchEnv-v0"),
    # -- any gymnasium id, its wrappers (rlconf.environments.registered) and rlconf check-env ------------------
    run("agent=ppo", "env=gym", words=("env=gym needs env.id=ID", "LunarLander-v3")),
    run("agent=ppo", "env=gym", "env.id=LunarLandr-v3", words=("env.id=LunarLandr-v3: not a registered gymnasium "
                                                                "id", "did you mean LunarLander-v3")),
    run("agent=ppo", "env=gym", "env.id=nosuchmodule:Foo-v0", words=("env.id=nosuchmodule:Foo-v0", "plugins=")),
    run(*CARTPOLE, "env.wrappers=[gymnasium.wrappers.NoSuchWrapper]", words=("env.wrappers", "NoSuchWrapper")),
    run(*CARTPOLE, "env.wrappers=[os.system]", words=("os.system", "plugins=")),
    run(*CARTPOLE, "env.wrappers=[gymnasium.wrappers.vector.RecordEpisodeStatistics]",
        words="not a gymnasium wrapper class"),
    run(*CARTPOLE, "env.wrappers=[{target:gymnasium.wrappers.ClipReward,kwargs:{low:0}}]",
        words=("ClipReward", "low", "min_reward")),
    run(*CARTPOLE, "env.wrappers=[{class:gymnasium.wrappers.ClipReward}]", words=("'class'", "target")),
    run(*CARTPOLE, "env.wrappers=[3]", words=("env.wrappers", "import path")),
    run("agent=dqn", "env=atari/pong", "env.wrappers=[gymnasium.wrappers.TimeAwareObservation]",
        words=("env.wrappers", "atari", "classic")),
    case("check-env", words="usage: rlconf check-env"),
    case("check-env", "CartPole-v1", "Acrobot-v1", words="usage: rlconf check-env"),
    case("check-env", "CartPol-v1", words=("CartPol-v1: not a registered gymnasium id", "CartPole-v1")),
    case("check-env", "no_such_module_xyz:Env", words="cannot import no_such_module_xyz"),
    case("check-env", "os:path", words=("os has no gymnasium Env class", "module:EnvClass")),
    case("check-env", "CartPole-v1", "--plugins", "no_such_module_xyz", words="no_such_module_xyz"),
    case("check-env", "CartPole-v1", "--plugins", "../evil", words="not a module name"),
    run(*CARTPOLE, "+env.kwargs.bogus=1", words="env.kwargs"),
    run(*CARTPOLE, "body.frame_stack=0", words="body.frame_stack"),
    run(*CARTPOLE, "body.time_feature_scale=0", words="body.time_feature_scale"),
    run(*CARTPOLE, "body.normalize_rewards=sometimes", words="body.normalize_rewards"),
    run(*CARTPOLE, "logger.scalars_every=0", words="logger.scalars_every"),
    run(*CARTPOLE, "logger.debug_every=x", words="logger.debug_every"),
    run(*CARTPOLE, "approximation.hidden=[0]", words="approximation.hidden"),
    run(*CARTPOLE, "approximation.hidden=wide", words="approximation.hidden"),
    run(*CARTPOLE, "approximation.activation=swish", words=("approximation.activation", "relu")),
    run(*CARTPOLE, "approximation.model=nope", words="approximation.model"),
    # -- memory: a recurrent core only for agents with memory, the masked components of known observations ---
    run(*CARTPOLE, "approximation.recurrent=lstm", words=("approximation.recurrent=lstm", "agent=dqn has no memory",
                                                           "ppo")),
    run("agent=independent", "env=pettingzoo/tictactoe", "approximation.recurrent=gru",
        words="agent=dqn has no memory"),
    run("agent=ppo", "env=classic/cartpole", "approximation.recurrent=rnn", words=("approximation.recurrent",
                                                                                    "lstm, gru")),
    run("agent=ppo", "env=classic/cartpole", "approximation.recurrent_hidden=0",
        words="approximation.recurrent_hidden"),
    run("agent=ppo", "env=classic/cartpole", "body=mask_velocity", "body.masked=[4]",
        words=("body.masked=[4]", "4 components")),
    run("agent=ppo", "env=classic/cartpole", "body=mask_velocity", "body.masked=[0,1,2,3]",
        words="hides every component"),
    run("agent=ppo", "env=mujoco/ant", "body=mask_velocity", words=("body=mask_velocity", "Ant-v5", "body.masked")),
    run("agent=ppo", "env=atari/pong", "body=mask_velocity", words=("body=mask_velocity", "vector observations")),
    run(*CARTPOLE, "agent.lr=abc", words="agent.lr"),
    run(*CARTPOLE, "agent.loss=l3", words=("agent.loss", "huber")),
    run(*CARTPOLE, "agent.target=moving", words="agent.target"),
    run(*CARTPOLE, "agent.replay=ordered", words="agent.replay"),
    run("agent=sac", "env=classic/pendulum", "agent.n_steps=0", words=("agent.n_steps=0", "at least 1")),
    run("agent=td3", "env=classic/pendulum", "agent.reward_scale=0", words=("agent.reward_scale=0", "positive")),
    run("agent=ddpg", "env=classic/pendulum", "agent.q_target_clip=-1", words=("agent.q_target_clip=-1", "null")),
    run("agent=ddpg", "env=classic/pendulum", "agent.noise_process=pink", words=("agent.noise_process=pink",
                                                                                 "gaussian, ou")),
    run("agent=td3", "env=classic/pendulum", "agent.ou_theta=2", words=("agent.ou_theta=2", "ou_dt")),
    run(*CARTPOLE, "agent.epsilon_copy_base=2", words=("agent.epsilon_copy_base=2", "[0, 1]")),
    run("agent=ppo", "env=classic/cartpole", "agent.sequence_length=48", words=("agent.sequence_length=48",
                                                                               "must divide agent.n_steps=32")),
    run(*CARTPOLE, "agent.n_step_return=3", words="did you mean 'agent.n_steps'?"),
    run(*CARTPOLE, "agent.name=nope", words="nope"),
    # -- numbers that are not finite --------------------------------------------------------------------------
    run(*CARTPOLE, "agent.lr=inf", words=("agent.lr=inf", "finite")),
    run(*CARTPOLE, "agent.lr=nan", words="agent.lr=nan"),
    run(*CARTPOLE, "agent.lr=-inf", words="agent.lr=-inf"),
    run(*CARTPOLE, "agent.discount_factor=nan", words="agent.discount_factor"),
    run("agent=ppo", "env=classic/cartpole", "agent.clip=inf", words="agent.clip"),
    run("agent=sac", "env=classic/pendulum", "agent.lr_q=inf", words="agent.lr_q"),
    run("agent=sac", "env=classic/pendulum", "agent.temperature=nan", words="agent.temperature"),
    run(*CARTPOLE, "body.time_feature_scale=inf", words="body.time_feature_scale"),
    # -- interpolations ----------------------------------------------------------------------------------------
    run(*CARTPOLE, "agent.lr=${oc.env:RLCONF_NO_SUCH_VAR}", words=("agent.lr=${oc.env:RLCONF_NO_SUCH_VAR}",
                                                                   "does not resolve")),
    run(*CARTPOLE, "steps=${nope}", words=("steps=${nope}", "does not resolve")),
    run(*CARTPOLE, "agent.lr=${foo:bar}", words=("agent.lr=${foo:bar}", "foo")),
    run(*CARTPOLE, "seed=${agent.nope}", words="seed=${agent.nope}"),
    run(*CARTPOLE, "agent.lr=${", words="agent.lr"),
    run(*CARTPOLE, "agent.batch_size=${agent.lr}", words="agent.batch_size"),
    # -- characters --------------------------------------------------------------------------------------------
    run(*CARTPOLE, "agent.loss=hübér", words=("'ü'", "agent.loss='hübér'")),
    run(*CARTPOLE, "agent.loss='hübér'", words=("agent.loss=hübér", "huber")),
    run(*CARTPOLE, "logdir=rüns", words="logdir='rüns'"),
    run(*CARTPOLE, "ägent.lr=1", words="'ä'"),
    run(*CARTPOLE, "agent.loss=hu\tber", words="'\\t'"),
    # -- code by import path ----------------------------------------------------------------------------------
    run(*CARTPOLE, "+agent._target_=os.system", words=("agent._target_=os.system", "not an agent class")),
    run(*CARTPOLE, "+agent._target_=no_such_module_xyz.Agent", words="cannot import"),
    # -- choices that do not go together ----------------------------------------------------------------------
    run(*CARTPOLE, "body=atari", words=("body=atari", "lives", "body.episodic_lives=false")),
    run(*CARTPOLE, "approximation=nature_cnn", words=("approximation.model=nature_cnn", "image", "mlp")),
    run("agent=sac", "env=mujoco/hopper", "approximation=nature_cnn", words="approximation.model=nature_cnn"),
    run("agent=sac", "env=classic/cartpole", words="agent=sac"),
    run("agent=dqn", "env=classic/pendulum", words="agent=dqn"),
    run("agent=ucb", "env=classic/cartpole", words=("agent=ucb", "bandit")),
    run("agent=dqn", "env=bandit/bernoulli", words="bandit"),
    run("agent=independent", "env=classic/cartpole", words="agent=independent"),
    run("agent=dqn", "env=pettingzoo/tictactoe", words="agent=independent"),
    run(*CARTPOLE, "agent.replay_buffer_size=10000000000000", words=("agent.replay_buffer_size", "needs",
                                                                      "this machine has")),
    # -- where runs go -----------------------------------------------------------------------------------------
    run(*CARTPOLE, "logdir={FILE}", words=("logdir=", "not a directory")),
    run(*CARTPOLE, "logdir={FILE}/inside", words=("not a directory", "is a file")),
    run(*CARTPOLE, "logdir=/dev/null", words="logdir=/dev/null"),
    run(*CARTPOLE, "logdir=/proc/rlconf", words=("logdir=/proc/rlconf", "cannot write")),
    run(*CARTPOLE, "logdir=/sys/rlconf", words="logdir=/sys/rlconf"),
    run(*CARTPOLE, "logdir={TMP}/" + "x" * 300, words="longer than 255 bytes"),
    # -- settings this machine cannot afford, refused before anything is built (rlconf.cost) --------------------
    run("agent=r2d1", "env=classic/cartpole", "agent.batch_size=100000",
        words=("agent.batch_size=100000", "samples an update", "allowed: at most about")),
    run("agent=dyna_q", "env=tabular/taxi", "agent.planning_steps=1000000000",
        words=("agent.planning_steps=1000000000", "planning 1,000,000,000 updates", "allowed: at most about")),
    run("agent=dyna_q", "env=tabular/taxi", "agent.planning_steps=10000000",
        words=("agent.planning_steps=10000000", "every environment step", "answers no signal")),
    run("agent=ucb", "env=bandit/bernoulli", "env.kwargs.arms=100000000",
        words=("env.kwargs.arms=100000000", "100,000,000 arms", "allowed: at most about")),
    run("agent=ucb", "env=bandit/bernoulli", "hardware.n_envs=10000000",
        words=("hardware.n_envs=10000000", "10,000,000 bandit(s) x 10 arms", "allowed: at most about")),
    run("agent=dqn", "env=atari/pong", "body.frame_stack=100000",
        words=("body.frame_stack=100000", "stacking 100,000 frames")),
    run(*CARTPOLE, "hardware.eval_envs=100000000", words=("hardware.eval_envs=100000000", "memory")),
    run(*CARTPOLE, "test_episodes=100000000000", words=("test_episodes=100000000000", "memory")),
    case("eval", "{RUN}", "--episodes", "100000000000", words=("--episodes 100000000000", "memory",
                                                               "allowed: at most about")),
    case("watch", "{RUN}", "--episodes", "100000000000", words="--episodes 100000000000"),
    # -- what once ended in a traceback --------------------------------------------------------------------------
    case("eval", "{RUN}", "--seed", "99999999999999999999", words=("--seed 99999999999999999999", "4,294,967,295")),
    case("eval", "{RUN}", "--seed", "4294967296", words="--seed 4294967296"),
    case("eval", "{RUN}", "--seed", "٣", words="--seed ٣"),
    run(*CARTPOLE, "eval_episodes=0", "eval_every=100", words=("eval_episodes=0", "eval_every=100",
                                                                "eval_every=0")),
    run(*CARTPOLE, "plugins=['']", words=("plugins=['']", "not a module name")),
    run(*CARTPOLE, "plugins=[../evil]", words=("'../evil' is not a module name",)),
    case("eval", "{RUN}", "--plugins", "../evil", words="'../evil' is not a module name"),
    # -- what was accepted and silently wrong ---------------------------------------------------------------------
    run("agent=ucb", "env=bandit/gaussian", "env.kwargs.means=[0,nan]", words=("env.kwargs.means=[0, nan]",
                                                                             "finite")),
    run("agent=ucb", "env=bandit/bernoulli", "env.kwargs.probabilities=[0.5,inf]",
        words="env.kwargs.probabilities"),
    run("agent=independent", "env=pettingzoo/pong", "env.kwargs.max_cycles=0",
        words=("env.kwargs.max_cycles=0", "at least 1")),
    run(*CARTPOLE, "logger.scalars_every=100000000000000000000", words=("logger.scalars_every=", "1,000,000,000,000")),
    run(*CARTPOLE, "logger.video_every=10000000000000", words="logger.video_every="),
    run(*CARTPOLE, "eval_every=10000000000000", words=("eval_every=", "1,000,000,000,000")),
    run(*CARTPOLE, "checkpoint_every=10000000000000", words="checkpoint_every="),
    run(*CARTPOLE, "hardware.sync_every=10000000000000", words="hardware.sync_every="),
    run(*CARTPOLE, "logdir='{TMP}/a\nb'", words=("control character", "'\\n'")),
    run(*CARTPOLE, "logdir={TMP}/a\nb", words=("'\\n' is not allowed unquoted",)),
    run(*CARTPOLE, "logdir='{TMP}/a\x1bb'", words="control character"),
    # -- Hydra's own settings -----------------------------------------------------------------------------------
    run(*CARTPOLE, "hydra.run.dir={TMP}/out", words=("hydra.run.dir", "logdir=DIR")),
    run("-m", *CARTPOLE, "hydra.sweep.dir={TMP}/out", words=("hydra.sweep.dir", "logdir=DIR")),
    run("-m", *CARTPOLE, "hydra/launcher=basic", words=("hydra/launcher=basic", "launcher=NAME")),
    run("-m", *CARTPOLE, "agent.lr=interval(0.001,0.01)", words=("interval", "sweep=optuna_dqn",
                                                                   "hydra/sweeper=rlconf_optuna")),
    # -- Optuna sweeps: the sweeper's settings and its search space ----------------------------------------------
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "hydra.sweeper.pruner=nope",
        words=("hydra.sweeper.pruner=nope", "median", "hyperband", "successive_halving", "null")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "+hydra.sweeper.pruner_args.n_startup=1",
        words=("hydra.sweeper.pruner_args.n_startup", "n_startup_trials")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "eval_every=0", words=("hydra.sweeper.pruner=median", "eval_every=0")),
    # (a key searched on the command line joins the sweep config's search space)
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.epsilon_final=tag(log,interval(0,0.2))",
        words=("agent.epsilon_final=tag(log,interval(0,0.2))", "positive")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.lr=interval(1e-2,1e-3)", words=("agent.lr=", "low below high")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.lr=tag(cube,interval(0.1,1))",
        words=("unknown tag 'cube'", "allowed tags: log")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.lr=tag(log,choice(0.1,1))", words=("choice()", "allowed:")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.batch_size=interval(16,256)",
        words=("agent.batch_size=", "expected int")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "agent.nosuch=choice(1,2)", words="agent.nosuch"),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "hydra.sweeper.sampler.name=grid", words=("grid", "tpe", "random")),
    run("-m", *CARTPOLE, "sweep=optuna_dqn", "test_episodes=0", words=("test_episodes=0", "final test return")),
    run(*CARTPOLE, "agent.lr=interval(0.001,0.01)", words="is a sweep"),
    run("-m", *CARTPOLE, "hydra/sweeper=nope", words="nope"),
    run("-m", *CARTPOLE, "launcher=local", "hydra.launcher.nope=1", words="nope"),
    run("-m", *CARTPOLE, "launcher=local_gpus", words=("launcher=local_gpus", "hardware.gpus_per_run")),
    run("~agent", "env=classic/cartpole", words=("~agent", "does not delete")),
    run(*CARTPOLE, "~steps", words="~steps"),
    run(*CARTPOLE, "~hardware", words="~hardware"),
    run(*CARTPOLE, "~agent.lr", words="~agent.lr"),
    # -- resume ---------------------------------------------------------------------------------------------
    run("resume={TMP}/missing", words="no such directory"),
    run("resume={FILE}", words="no such directory"),
    run("resume={TMP}", words=("not a run directory", "config.yaml")),
    run("-m", "resume={RUN}", words="not a sweep directory"),
    run("-m", "resume={TMP}", words="multirun.yaml"),
    run("resume={RUN}", "agent=ppo", words=("the run trained agent=dqn", "keeps its agent")),
    run("resume={RUN}", "env=classic/acrobot", words=("the run trained env=classic/cartpole", "keeps its env")),
    run("resume={RUN}", "agent.lr=0.5", words=("agent.lr=0.5", "may change only")),
    run("resume={RUN}", "seed=7", words="seed=7"),
    run("resume={BROKEN}/truncated", words="not valid YAML"),
    run("resume={BROKEN}/empty", words="not a run's config"),
    run("resume={BROKEN}/no_overrides", words=("overrides.yaml", "no such file")),
    run("resume={BROKEN}/list_config", words="not a run's config"),
    run("resume={BROKEN}/bad_overrides", words="not a list of overrides"),
    # -- counts that start processes, bounded by this machine's cores and memory (config.check_process_counts) --
    run(*CARTPOLE, "hardware.learners=1000", words=("hardware.learners=1000", "this machine holds", "allowed: 1 to")),
    run(*CARTPOLE, "hardware.sampler=parallel", "hardware.n_envs=1000", "hardware.cpus_per_run=1000",
        words=("hardware.cpus_per_run=1000", "worker process", "allowed: 1 to")),
    run(*CARTPOLE, "hardware.vectorization=async", "hardware.n_envs=1000",
        words=("hardware.n_envs=1000", "a process per copy", "allowed: 1 to")),
    run("-m", *CARTPOLE, "seed=0,1", "hardware.learners=1000", words=("hardware.learners=1000", "allowed: 1 to")),
    run("-m", *CARTPOLE, "seed=0,1", "hydra.launcher.parallel=1000",
        words=("hydra.launcher.parallel=1000", "runs at once", "allowed: 1 to")),
    run("-m", *CARTPOLE, "seed=0,1", "launcher=local_gpus", "hardware=gpu", "hydra.launcher.gpus=[0]",
        "hydra.launcher.runs_per_gpu=1000", words=("hydra.launcher.runs_per_gpu=1000", "allowed: 1 to")),
]

# Every agent's own schema: a key it does not have is named, with the keys it does (or how to see them).
CASES += [run(f"agent={agent}", "env=classic/cartpole", "agent.no_such_key=1", words=("agent.no_such_key",))
          for agent in AGENTS]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("finished")
    result = run_cli_in("run", *CARTPOLE, "steps=300", "agent.replay_start_size=100", *FAST_RUN,
                        f"logdir={root / 'runs'}", cwd=root)
    assert result.returncode == 0, result.stderr
    return only_run_dir(root / "runs")


@pytest.fixture(scope="module")
def broken_runs(finished_run, tmp_path_factory) -> Path:
    """Copies of the finished run with a damaged config.yaml or overrides.yaml."""
    root = tmp_path_factory.mktemp("broken")
    damage = {"truncated": ("config.yaml", "seed: 0\nsteps: [300,\n"), "empty": ("config.yaml", ""),
              "list_config": ("config.yaml", yaml.safe_dump([1, 2])), "no_overrides": ("overrides.yaml", None),
              "bad_overrides": ("overrides.yaml", yaml.safe_dump({"agent": "dqn"}))}
    for name, (file, text) in damage.items():
        shutil.copytree(finished_run, root / name)
        if text is None:
            (root / name / file).unlink()
        else:
            (root / name / file).write_text(text)
    return root


def test_the_table_holds_at_least_150_cases():
    assert len(CASES) >= 150


@pytest.mark.parametrize(("args", "words"), CASES, ids=[" ".join(a)[:80] for a, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_nothing_left_behind(args, words, tmp_path, finished_run, broken_runs,
                                                              capsys, monkeypatch):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    (tmp_path / "file").write_text("a plain file\n")
    places = {"RUN": str(finished_run), "BROKEN": str(broken_runs), "FILE": str(tmp_path / "file"),
              "TMP": str(workdir)}
    args = [_place(a, places) for a in args]
    words = [_place(w, places) for w in words]
    before = {p: p.stat().st_mtime_ns for d in (finished_run, broken_runs) for p in d.rglob("*")}
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("RLCONF_NO_SUCH_VAR", raising=False)
    line = one_error_line(run_main(args, capsys))
    shown = line  # its length, the input it names aside: the test's own folders, a long value typed
    for value in sorted((a.partition("=")[2] for a in args), key=len, reverse=True):
        shown = shown.replace(value, "{VALUE}") if len(value) > 40 else shown
    for name, path in places.items():
        shown = shown.replace(path, "{" + name + "}")
    assert len(shown) <= 300, f"{len(shown)} characters: {shown}"
    for word in words:
        assert word in line, (word, line)
    assert list(workdir.iterdir()) == [], "nothing is written where the command ran"
    assert {p: p.stat().st_mtime_ns for d in (finished_run, broken_runs) for p in d.rglob("*")} == before


def _place(text: str, places: dict[str, str]) -> str:
    for name, path in places.items():
        text = text.replace("{" + name + "}", path)
    return text


README_EXAMPLE = re.compile(r"^\$ rlconf (run [^\n]+)\n(rlconf: error: [^\n]+)$", re.MULTILINE)


def readme_refusals() -> list[tuple[str, str]]:
    """The documentation's examples of refused input, in the README and every page of the site (docs/): ``$ rlconf
    run ...`` followed by the line it prints, each example once (the divergence example, which trains first, is
    tested in test_divergence.py)."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text() for page in pages if page.is_file())
    found = [(m.group(1), m.group(2)) for m in README_EXAMPLE.finditer(text) if "checkpoint" not in m.group(2)]
    return list(dict.fromkeys(found))


def test_the_readme_shows_several_refusals():
    assert len(readme_refusals()) >= 4


@pytest.mark.parametrize(("command", "line"), readme_refusals(), ids=[c for c, _ in readme_refusals()])
def test_the_readme_refusals_print_what_it_shows(command, line, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert one_error_line(run_main(command.split(), capsys)) == line
    assert list(tmp_path.iterdir()) == []


# Issue 39's messages, each line exactly (a count of options, which grows, as a number).
EXACT_LINES = [
    (["agent=DQN", "env=classic/cartpole"],
     r"rlconf: error: unknown agent 'DQN' \(did you mean 'dqn' or 'ddqn'\?\); \d+ agents; see them all: "
     r"rlconf list agent"),
    ([*CARTPOLE, "hidden=[64,64]"],
     r"rlconf: error: unknown key 'hidden' \(did you mean 'approximation.hidden'\?\); \d+ keys; see them all: "
     r"rlconf run agent=dqn env=classic/cartpole --cfg job"),
    ([*CARTPOLE, "gamma=0.9"],
     r"rlconf: error: unknown key 'gamma' \(did you mean 'agent.discount_factor'\?\); \d+ keys; see them all: "
     r"rlconf run agent=dqn env=classic/cartpole --cfg job"),
    ([*CARTPOLE, "hardware.device=cuda"],
     re.escape("rlconf: error: hardware.device=cuda: a run on a GPU is chosen with hardware=gpu (device cuda, "
               "hardware.gpus_per_run=1, the GPU a launcher gives it), not hardware.device alone "
               "(hardware.gpus_per_run=0)")),
]


@pytest.mark.parametrize(("args", "line"), EXACT_LINES, ids=[" ".join(a) for a, _ in EXACT_LINES])
def test_issue_39_messages_read_as_described(args, line, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shown = one_error_line(run_main(["run", *args], capsys))
    assert re.fullmatch(line, shown), shown
    assert list(tmp_path.iterdir()) == []


def test_a_thousand_learners_are_refused_before_any_starts_and_none_is_left(tmp_path):
    """hardware.learners=1000 once spawned learners until the process limit and left ~26 behind: the bound is
    checked before anything starts, and no process of the command outlives it."""
    tag = f"learners-{tmp_path.name}"
    command = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *CARTPOLE, "hardware.learners=1000",
                                f"logdir={tmp_path / 'runs'}"], cwd=tmp_path, env=tagged_env(tag),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = command.communicate(timeout=300)
    wait_until_gone(tag, command)
    line = one_error_line(subprocess.CompletedProcess(command.args, command.returncode, out, err))
    assert "hardware.learners=1000" in line and "allowed: 1 to" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("group", "text", "args"), [
    ("launcher", "defaults:\n  - slurm\nhydra:\n  launcher:\n    partition: a100\n", ["-m", "launcher=mine"]),
    ("experiment", "steps: 10\n", ["experiment=mine"]),
])
def test_a_global_groups_file_without_its_package_line_is_named_in_one_line(run_cli, workdir, tmp_path, group, text,
                                                                              args):
    """A site's launcher profile or experiment written without ``# @package _global_``: Hydra nests it under the
    group's name; the refusal says what the file lacks, not "unknown key", and nothing is written."""
    (tmp_path / "site" / group).mkdir(parents=True)
    (tmp_path / "site" / group / "mine.yaml").write_text(text)
    line = one_error_line(run_cli("run", *args, "agent=dqn", "env=classic/cartpole", "--config-dir",
                                  str(tmp_path / "site"), f"logdir={workdir / 'runs'}", cwd=workdir))
    assert f"{group}= file put its settings under '{group}:'" in line and "# @package _global_" in line, line
    assert list(workdir.iterdir()) == []
