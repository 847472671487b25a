"""The real ``rlconf`` command in a subprocess: listing, refusing bad input, and short real runs."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import FAST_RUN, assert_run_refused, cli_env, one_error_line, only_run_dir, run_dirs
from omegaconf import OmegaConf

from rlconf import registry
from rlconf.paths import config_dir

RUN_DIR_NAME = re.compile(r"^(?P<agent>[a-z_]+)_(?P<env>[a-z_-]+)_(?P<stamp>\d{8}-\d{6})_s(?P<seed>\d+)(-\d+)?$")
SUMMARY_KEYS = {"steps", "episodes", "wall_seconds", "steps_per_second", "test_return_mean", "test_return_std",
                "test_episodes", "seed"}


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        return list(reader.fieldnames or []), list(reader)


# -- rlconf list ------------------------------------------------------------------------------------------
def test_list_agent_with_the_installed_script(workdir):
    script = Path(sys.executable).with_name("rlconf")
    assert script.exists(), "the rlconf console script is installed beside the interpreter"
    result = subprocess.run([str(script), "list", "agent"], cwd=workdir, env=cli_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "agent:"
    options = {line.split()[0] for line in lines[1:]}
    assert {"dqn", "ppo"} <= options
    assert result.stderr == ""


def test_list_agent_groups_the_agents_by_what_they_play(run_cli, workdir):
    result = run_cli("list", "agent", cwd=workdir)
    assert result.returncode == 0, result.stderr
    groups: dict[str, list[str]] = {}
    heading = ""
    for line in result.stdout.splitlines()[1:]:
        if line.startswith("    "):
            groups[heading].append(line.split()[0])
        else:
            heading = line.strip().rstrip(":")
            groups[heading] = []
    assert groups["multi-armed bandits"] == ["epsilon_greedy", "ucb", "bayesian_ucb", "thompson", "gradient_bandit"]
    assert groups["contextual bandits"] == ["linear_posterior", "linucb", "neural_greedy", "neural_linear",
                                            "bootstrap_neural", "noise_sampling", "variational"]
    assert groups["baselines"] == ["random", "fixed"]
    assert groups["tabular"] == ["q_learning", "sarsa_lambda", "dyna_q"]
    assert {"dqn", "rainbow"} <= set(groups["deep RL, value-based"]) and groups["multi-agent"] == ["independent"]
    listed = [agent for agents in groups.values() for agent in agents]
    assert sorted(listed) == registry.names("agent")  # every agent once, each with a config


def test_list_shows_every_public_group_and_hides_internal_ones(run_cli, workdir):
    result = run_cli("list", cwd=workdir)
    assert result.returncode == 0, result.stderr
    headers = {line[:-1] for line in result.stdout.splitlines() if line and not line.startswith(" ")}
    assert {"agent", "env", "approximation", "body", "hardware", "logger", "preset", "experiment"} <= headers
    assert not headers & {"family", "hydra"}
    assert "classic/cartpole" in result.stdout
    assert list(workdir.iterdir()) == []


def test_list_shows_a_description_wrapped_over_comment_lines(run_cli, workdir):
    result = run_cli("list", "logger", cwd=workdir)
    assert result.returncode == 0, result.stderr
    wandb = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["wandb"])
    assert "One wandb run per rlconf run; the runs of a sweep share a group." in wandb
    assert wandb.endswith("falls back to offline."), wandb


def listed(stdout: str) -> dict[str, str]:
    """``rlconf list GROUP``'s lines below its header, as option -> description."""
    return dict(line.strip().split(maxsplit=1) for line in stdout.splitlines()[1:])


def test_list_preset_shows_each_family_and_agent_with_its_first_sentence(run_cli, workdir):
    result = run_cli("list", "preset", cwd=workdir)
    assert result.returncode == 0, result.stderr
    presets = listed(result.stdout)
    root = config_dir() / "preset"
    assert sorted(presets) == sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.glob("**/*.yaml"))
    assert presets["classic/mask_velocity/ppo"].startswith("PPO on classic control with the velocities hidden")
    assert presets["classic/dqn"] == ("DQN on classic control: greedy CartPole-v1 >= 475 within 50k steps (11 of "
                                      "12 seeds measured).")  # its first sentence, not the paragraph that follows
    assert presets["atari/vac"].endswith("shared Nature CNN; the value head learns at 5e-4, the policy and "
                                         "features at 1e-4")  # a sentence wrapped onto a second line


def test_list_experiment_shows_the_settings_pinned_by_name(run_cli, workdir):
    result = run_cli("list", "experiment", cwd=workdir)
    assert result.returncode == 0, result.stderr
    experiments = listed(result.stdout)
    assert {"atari_pong_ppo", "mujoco_half_cheetah_sac"} <= set(experiments)
    assert experiments["atari_pong_ppo"].startswith("PPO on Pong without sticky actions")
    assert experiments["atari100k_der"].startswith("Data-Efficient Rainbow on Atari 100k: 100k agent steps")
    # A first line that introduces what follows it (ends in ":") stands alone, with no dangling colon.
    assert experiments["cartpole_masked_ppo_lstm"] == ("PPO with an LSTM on CartPole without its velocities "
                                                       "(body=mask_velocity: cart position and pole angle only)")
    listed_all = run_cli("list", cwd=workdir)
    dangling = [line for line in listed_all.stdout.splitlines() if re.fullmatch(r"\s+\S+\s{2,}.*[:;,]", line)]
    assert not dangling, "no description ends in a dangling colon, semicolon or comma"


def test_list_components_reads_the_registry(run_cli, workdir):
    result = run_cli("list", "components", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "agent:" in result.stdout and "model:" in result.stdout
    assert re.search(r"^\s+dqn\s+\S", result.stdout, re.M)
    assert re.search(r"^\s+mlp\s+\S", result.stdout, re.M)


def test_list_unknown_group_is_one_line(run_cli, workdir):
    line = one_error_line(run_cli("list", "nosuchgroup", cwd=workdir))
    assert "'nosuchgroup'" in line and "agent" in line and "env" in line


def test_unknown_command_is_one_line(run_cli, workdir):
    line = one_error_line(run_cli("rnu", cwd=workdir))
    assert "'rnu'" in line and "run" in line


def test_version_and_help(run_cli, workdir):
    version = run_cli("--version", cwd=workdir)
    assert version.returncode == 0 and re.fullmatch(r"rlconf \d+\.\d+\.\d+\S*\n", version.stdout)
    bare = run_cli(cwd=workdir)
    assert bare.returncode == 0 and "usage: rlconf run" in bare.stdout


def test_listing_imports_no_torch(workdir):
    """``rlconf list`` must answer fast: neither the CLI module nor listing may import torch."""
    code = ("import sys; from rlconf.cli import main; rc = main(['list', 'agent']); "
            "assert rc == 0; assert 'torch' not in sys.modules, 'torch was imported'; "
            "main(['list', 'components']); assert 'torch' not in sys.modules, 'torch was imported'")
    result = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=cli_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "dqn" in result.stdout


# Composes each pair and prints its config, then refuses each bad line; prints whether torch was imported.
NO_TORCH_CHECK = """
import contextlib, io, json, sys
from rlconf.cli import main
pairs, refused = json.loads(sys.argv[1])
for pair in pairs:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["run", *pair.split(), "--cfg", "job"]) == 0, pair
    assert "agent:" in out.getvalue(), pair
for line in refused:
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            main(["run", *line.split(), "--cfg", "job"])  # printed, not run, if it were not refused
        except SystemExit as stop:
            assert stop.code == 2, (line, err.getvalue())
    assert "rlconf: error: " in err.getvalue(), (line, err.getvalue())
agents = sorted(m for m in sys.modules if m.startswith("rlconf.agents.") and not m.startswith("rlconf.agents.specs"))
print("torch" in sys.modules, agents)
"""


def test_checking_and_printing_a_config_imports_no_torch(workdir):
    """``rlconf run ... --cfg job`` composes and checks the whole config (every agent's hyperparameters, the
    model's settings, what the env and the body go together with), and so does every refusal of bad input:
    neither imports torch, which takes seconds (the registry declares what the check needs of each built-in
    component; the agents' specs, with their configs, live in rlconf.agents.specs)."""
    pairs = ["agent=dqn env=classic/cartpole", "agent=ppo env=mujoco/hopper", "agent=rainbow env=atari/pong",
             "agent=sac env=classic/pendulum", "agent=independent env=pettingzoo/tictactoe",
             "agent=thompson env=bandit/bernoulli", "agent=neural_linear env=bandit/linear",
             "agent=q_learning env=tabular/taxi"]
    refused = ["agent=dqn env=classic/cartpole agent.lr=abc", "agent=dqn env=classic/cartpole approximation=nature_cnn",
               "agent=dqn env=classic/cartpole body=atari",
               "agent=independent env=pettingzoo/tictactoe agent.dqn.lr=-1",
               "agent=independent env=pettingzoo/tictactoe agent.base=independent"]
    result = subprocess.run([sys.executable, "-c", NO_TORCH_CHECK, json.dumps([pairs, refused])], cwd=workdir,
                            env=cli_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False []", result.stdout[-500:]


# -- bad input: exit 2, one line, nothing written ---------------------------------------------------------
def test_unknown_agent_names_the_nearest_and_the_options(run_cli, workdir):
    line = one_error_line(run_cli("run", "agent=dqnn", "env=classic/cartpole", cwd=workdir))
    assert "'dqnn'" in line
    assert "did you mean 'dqn'" in line
    # Too many agents for one line: how many, and where every one is listed.
    assert f"{len(registry.names('agent'))} agents; see them all: rlconf list agent" in line
    assert len(line) <= 300
    assert not (workdir / "runs").exists()
    assert list(workdir.iterdir()) == []


def test_unknown_env_names_the_families_and_the_nearest_not_every_env(run_cli, workdir):
    line = one_error_line(run_cli("run", "agent=dqn", "env=atari/pongg", cwd=workdir))
    assert "did you mean 'atari/pong'?" in line
    assert "atari/ (" in line and "classic/ (5)" in line and "see them all: rlconf list env" in line
    assert "atari/breakout" not in line and len(line) <= 300


def test_cfg_job_says_where_no_preset_applies(run_cli, workdir):
    result = run_cli("run", "agent=thompson", "env=bandit/bernoulli", "--cfg", "job", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "# preset: none"
    assert yaml.safe_load(result.stdout)["agent"]["name"] == "thompson"


CARTPOLE = ["agent=dqn", "env=classic/cartpole"]


@pytest.mark.parametrize(("args", "words"), [
    (["agent=dqn", "env=classic/nosuch"], ["env", "'classic/nosuch'", "classic/cartpole"]),
    (["env=classic/cartpole"], ["missing agent", "dqn"]),
    (["agent=dqn"], ["missing env", "classic/cartpole"]),
    ([*CARTPOLE, "agent.lr=abc"], ["agent.lr", "abc", "float"]),
    ([*CARTPOLE, "steps=-5"], ["steps=-5"]),
    ([*CARTPOLE, "agent.nosuchkey=1"], ["agent.nosuchkey"]),
    ([*CARTPOLE, "+agent.nosuchkey=1"], ["agent.nosuchkey"]),
    ([*CARTPOLE, "hardware.n_envs=0"], ["hardware.n_envs=0"]),
    ([*CARTPOLE, "logger=nosuch"], ["logger", "'nosuch'", "tensorboard"]),
    ([*CARTPOLE, "preset=nosuch"], ["preset", "'nosuch'"]),
    (["experiment=atari_pong_pp"], ["experiment", "'atari_pong_pp'", "did you mean 'atari_pong_ppo'"]),
    ([*CARTPOLE, "family=nosuch"], ["family", "'nosuch'"]),
    ([*CARTPOLE, "env.id=NoSuchEnv-v9"], ["env.id=NoSuchEnv-v9"]),
    ([*CARTPOLE, "plugins=[no_such_plugin_module]"], ["plugins", "no_such_plugin_module"]),
    ([*CARTPOLE, "seed=0,1"], ["seed=0,1", "-m"]),
    (["-m", "agent=dqn,ppo", "env=classic/cartpole", "agent.epochs=4"], ["agent.epochs"]),
    ([*CARTPOLE, "steps=[1"], ["cannot parse"]),
    ([*CARTPOLE, "--cfg", "bogus"], ["--cfg bogus", "job"]),
    ([*CARTPOLE, "--config-dir", "/no/such/dir"], ["/no/such/dir"]),
    ([*CARTPOLE, "--bogus"], ["--bogus"]),
])
def test_bad_input_is_one_line_and_writes_nothing(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, args, words, workdir, tmp_path / "logs")


def test_a_task_preset_is_applied_over_the_family_preset_and_named(run_cli, workdir):
    """A body that makes another task (velocities hidden) brings its own preset: PPO's budget triples there and
    its rollouts are cut into segments for a recurrent core; the rest of the classic PPO preset stays."""
    masked = run_cli("run", "agent=ppo", "env=classic/cartpole", "body=mask_velocity", "--cfg", "job", cwd=workdir)
    plain = run_cli("run", "agent=ppo", "env=classic/cartpole", "--cfg", "job", cwd=workdir)
    assert masked.returncode == 0 and plain.returncode == 0, masked.stderr + plain.stderr
    assert masked.stdout.splitlines()[0] == (
        "# preset: classic/ppo (configs/preset/classic/ppo.yaml) + "
        "classic/mask_velocity/ppo (configs/preset/classic/mask_velocity/ppo.yaml)")
    masked, plain = yaml.safe_load(masked.stdout), yaml.safe_load(plain.stdout)
    assert (masked["steps"], plain["steps"]) == (300_000, 100_000)
    assert masked["hardware"]["n_envs"] == 8
    changed = {key: (masked["agent"][key], plain["agent"][key]) for key in plain["agent"]
               if masked["agent"][key] != plain["agent"][key]}
    assert changed == {"n_steps": (128, 32), "sequence_length": (32, None), "epochs": (10, 20)}


def test_cfg_job_prints_the_composed_config_and_runs_nothing(run_cli, workdir, tmp_path):
    logdir = tmp_path / "logs"
    result = run_cli("run", *CARTPOLE, "--cfg", "job", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "# preset: classic/dqn (configs/preset/classic/dqn.yaml)"
    assert yaml.safe_load(result.stdout)["agent"]["name"] == "dqn"  # the preset's line is a comment: still YAML
    config = OmegaConf.create(result.stdout)
    assert config.env.id == "CartPole-v1"
    assert "lr:" in result.stdout and config.agent.name == "dqn"
    assert not logdir.exists()
    assert list(workdir.iterdir()) == []


def test_whole_numbers_written_as_floats_are_integers(run_cli, workdir):
    """``steps=1e5`` (Hydra reads a float) is the integer 100000 for an integer key, and Hydra is given the
    integer, so the config printed (and a run's config.yaml) holds it; 1.5 is still refused in one line."""
    result = run_cli("run", *CARTPOLE, "steps=1e5", "hardware.n_envs=4.0", "agent.batch_size=3.2e1",
                     "env.max_episode_steps=2e2", "approximation.hidden=[32.0,32]", "agent.lr=1e-3", "--cfg", "job",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    config = OmegaConf.create(result.stdout)
    typed = (config.steps, config.hardware.n_envs, config.agent.batch_size, config.env.max_episode_steps)
    assert typed == (100000, 4, 32, 200) and all(type(v) is int for v in typed), typed
    assert list(config.approximation.hidden) == [32, 32] and type(config.approximation.hidden[0]) is int
    assert type(config.agent.lr) is float
    line = one_error_line(run_cli("run", *CARTPOLE, "steps=1.5", cwd=workdir))
    assert "steps=1.5" in line and "int" in line


def test_run_help_lists_groups_and_the_top_level_keys(run_cli, workdir):
    """Short (not every Atari game): each group with a few options or how many, then every key of
    configs/config.yaml outside the groups with its default and the comment beside it there."""
    result = run_cli("run", "--help", cwd=workdir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("usage: rlconf run") and len(lines) <= 80, len(lines)
    rows = {line.split()[0]: line for line in lines if line.startswith("  ") and line.split()}
    for group in ("agent", "env", "approximation", "body", "hardware", "logger", "launcher"):
        assert group in rows, group
    assert "dqn" in rows["agent"] and "atari/ (" in rows["env"] and "atari/breakout" not in result.stdout
    assert "rlconf list GROUP" in result.stdout
    config = OmegaConf.load(Path(__file__).resolve().parents[1] / "configs" / "config.yaml")
    for key in ("seed", "steps", "test_episodes", "eval_every", "eval_episodes", "checkpoint_every", "logdir",
                "quiet", "verbose", "plugins", "resume"):
        row = rows[f"{key}={OmegaConf.to_yaml({key: config[key]}).split(': ', 1)[1].strip()}"]
        assert len(row.split(None, 1)) == 2, f"{key} has no description: {row}"
    assert "environment steps to train for" in rows[f"steps={config.steps}"]
    assert f"checkpoint.replay={str(config.checkpoint.replay).lower()}" in rows
    assert list(workdir.iterdir()) == []


def test_hydra_help_is_hydras_with_what_rlconf_takes_of_it(run_cli, workdir):
    result = run_cli("run", "--hydra-help", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "Hydra (" in result.stdout and "== Flags ==" in result.stdout
    assert "-m/--multirun, --cfg and --config-dir" in result.stdout
    assert ".hydra/ folder is not written" in result.stdout and "overrides.yaml" in result.stdout
    assert list(workdir.iterdir()) == []


# -- real runs --------------------------------------------------------------------------------------------
def check_run_dir(run_dir: Path, agent: str, seed: int = 0) -> dict:
    """The files every finished run leaves; returns its summary."""
    match = RUN_DIR_NAME.match(run_dir.name)
    assert match, run_dir.name
    assert (match["agent"], match["env"], match["seed"]) == (agent, "classic-cartpole", str(seed))

    config = OmegaConf.load(run_dir / "config.yaml")
    assert config.agent.name == agent
    assert config.env.id == "CartPole-v1"
    assert "${" not in (run_dir / "config.yaml").read_text(), "config.yaml is saved resolved"

    header, episodes = read_csv(run_dir / "episodes.csv")
    assert header == ["step", "episode", "return", "length", "wall_seconds"]
    assert episodes, "a CartPole run of this length finishes some episodes"
    steps = [int(row["step"]) for row in episodes]
    assert steps == sorted(steps)
    assert [int(row["episode"]) for row in episodes] == list(range(1, len(episodes) + 1))
    for row in episodes:  # CartPole pays 1 per step
        assert float(row["return"]) == int(row["length"]) > 0

    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary) >= SUMMARY_KEYS
    assert summary["agent"] == agent and summary["seed"] == seed
    assert summary["episodes"] >= len(episodes)
    assert summary["steps_per_second"] > 0 and summary["wall_seconds"] > 0
    assert isinstance(summary["test_return_mean"], float) and summary["test_return_mean"] >= 1
    assert summary["test_return_std"] >= 0

    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert "agent" in checkpoint and checkpoint["agent"]
    assert checkpoint["steps"] == summary["steps"]
    return summary


def test_dqn_run_writes_a_complete_run_directory(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    overrides = [*CARTPOLE, "steps=1500", "test_episodes=3", "eval_every=500", "eval_episodes=2",
                 "checkpoint_every=1000", "quiet=true", f"logdir={logdir}"]
    result = run_cli("run", *overrides, cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == "", "quiet=true prints nothing"
    assert list(workdir.iterdir()) == [], "nothing is written outside logdir"

    run_dir = only_run_dir(logdir)
    summary = check_run_dir(run_dir, "dqn")
    assert summary["steps"] == 1500
    assert summary["test_episodes"] == 3
    assert torch.load(run_dir / "checkpoint.pt", weights_only=False)["steps"] == 1500

    assert OmegaConf.to_container(OmegaConf.load(run_dir / "overrides.yaml")) == overrides
    config = OmegaConf.load(run_dir / "config.yaml")
    assert (config.steps, config.test_episodes, config.logdir) == (1500, 3, str(logdir))

    header, evaluations = read_csv(run_dir / "evaluations.csv")
    assert header[:2] == ["step", "episodes"] and "mean" in header
    periodic = [row for row in evaluations if row["episodes"] == "2"]
    assert [int(row["step"]) for row in periodic] == [500, 1000, 1500]
    final = evaluations[-1]
    assert (int(final["step"]), int(final["episodes"])) == (1500, 3)
    assert float(final["mean"]) == pytest.approx(summary["test_return_mean"], rel=1e-4)
    leftovers = [p.name for p in run_dir.iterdir() if p.name.startswith(".")]
    assert leftovers == [".lock"], "no temporary files are left behind (the lock file of its one writer stays)"


def test_ppo_run_with_its_preset(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=ppo", "env=classic/cartpole", "steps=1024", *FAST_RUN, f"logdir={logdir}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary = check_run_dir(run_dir, "ppo")
    config = OmegaConf.load(run_dir / "config.yaml")
    n_envs = config.hardware.n_envs
    assert summary["n_envs"] == n_envs
    assert 1024 <= summary["steps"] < 1024 + n_envs, "the budget is met, overshooting by less than one step of all envs"
    assert summary["test_episodes"] == 2
    assert OmegaConf.load(run_dir / "overrides.yaml")[0] == "agent=ppo"


def test_concurrent_runs_get_separate_directories(workdir, tmp_path):
    logdir = tmp_path / "runs"
    command = [sys.executable, "-m", "rlconf", "run", *CARTPOLE, "steps=600", "seed=7", *FAST_RUN,
               f"logdir={logdir}"]
    processes = [subprocess.Popen(command, cwd=workdir, env=cli_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    dirs = run_dirs(logdir)
    assert len(dirs) == 2 and dirs[0] != dirs[1]
    summaries = [json.loads((d / "summary.json").read_text()) for d in dirs]
    assert {s["run_dir"] for s in summaries} == {str(d) for d in dirs}
    assert all(s["seed"] == 7 and s["steps"] == 600 for s in summaries)


def test_without_quiet_the_summary_line_is_printed(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "steps=600", "test_episodes=2", "eval_every=0", f"logdir={logdir}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stderr.split())
    run_dir = only_run_dir(logdir)
    assert "test return" in text and "over 2 episodes" in text
    assert str(run_dir) in "".join(result.stderr.split()), "the line ends with the run directory"
    assert "Traceback" not in result.stderr
    # One greppable line, even though stderr is not a terminal (rich would wrap it at 80 columns); before it,
    # progress lines of training and of the test, as many as a loaded machine's pace gives.
    summary_lines = [line for line in result.stderr.splitlines() if "test return" in line]
    assert len(summary_lines) == 1, result.stderr
    assert summary_lines[0].startswith("dqn classic/cartpole: 600 steps in ") and str(run_dir) in summary_lines[0]
    assert result.stderr.splitlines()[-1] == summary_lines[0]


def test_multirun_sweeps_seeds_into_one_sweep_directory(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1", "steps=600", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweeps = list(logdir.glob("sweep_*"))
    assert len(sweeps) == 1
    dirs = run_dirs(sweeps[0])
    assert sorted(json.loads((d / "summary.json").read_text())["seed"] for d in dirs) == [0, 1]
    assert list(workdir.iterdir()) == []


def test_launcher_group_is_listed_and_selectable(run_cli, workdir):
    listed = run_cli("list", "launcher", cwd=workdir)
    assert listed.returncode == 0 and "basic" in listed.stdout
    shown = run_cli("run", *CARTPOLE, "launcher=basic", "--cfg", "hydra", cwd=workdir)
    assert shown.returncode == 0, shown.stderr
    assert "BasicLauncher" in shown.stdout
    refused = one_error_line(run_cli("run", *CARTPOLE, "launcher=nosuch", cwd=workdir))
    assert "launcher" in refused and "basic" in refused


def test_several_config_dirs_are_all_searched(run_cli, workdir, tmp_path):
    """Hydra's own --config-dir keeps only the last folder; rlconf passes every one given."""
    agents, envs = tmp_path / "agents", tmp_path / "envs"
    (agents / "agent").mkdir(parents=True)
    (envs / "env" / "classic").mkdir(parents=True)
    (agents / "agent" / "dqn_tiny.yaml").write_text("# DQN with a small batch\ndefaults:\n  - dqn\nbatch_size: 8\n")
    (envs / "env" / "classic" / "cartpole_short.yaml").write_text(
        "# @package _global_\n# CartPole with 100-step episodes\ndefaults:\n  - override /family: classic\n"
        "env:\n  name: classic/cartpole_short\n  family: classic\n  id: CartPole-v1\n  kwargs: {}\n"
        "  max_episode_steps: 100\n")
    result = run_cli("run", "agent=dqn_tiny", "env=classic/cartpole_short", "--config-dir", str(agents),
                     "--config-dir", str(envs), "--cfg", "job", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "batch_size: 8" in result.stdout and "max_episode_steps: 100" in result.stdout


def test_multirun_over_agents_applies_each_agents_preset(run_cli, workdir, tmp_path):
    """Sweeping the agent group itself: Hydra composes the sweep's base config without an agent, and the
    per-family preset (chosen by agent) must still resolve for every job."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=dqn,ppo", "env=classic/cartpole", "seed=0,1", "steps=300",
                     "agent.lr=0.002", "approximation.hidden=[32,32]", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    configs = {}
    for config in logdir.glob("sweep_*/*/config.yaml"):
        cfg = OmegaConf.load(config)
        configs[(cfg.agent.name, cfg.seed)] = cfg
    assert set(configs) == {("dqn", 0), ("dqn", 1), ("ppo", 0), ("ppo", 1)}
    assert configs[("dqn", 0)].agent.discount_factor == 0.999  # configs/preset/classic/dqn.yaml
    assert configs[("ppo", 1)].hardware.n_envs == 8  # configs/preset/classic/ppo.yaml
    # Keys inside a swept group (agent.lr beside agent=dqn,ppo) reach every job.
    assert all(cfg.agent.lr == 0.002 and list(cfg.approximation.hidden) == [32, 32] for cfg in configs.values())


def test_sigint_stops_at_a_step_boundary_with_a_checkpoint(tmp_path, workdir):
    """Ctrl-C (SIGINT) finishes the current step, writes a checkpoint matching the CSV files, exits 130."""
    import signal

    from conftest import wait_while_running

    logdir = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *CARTPOLE, "steps=1000000", "eval_every=0",
                                "checkpoint_every=0", "quiet=true", f"logdir={logdir}"],
                               cwd=workdir, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def episodes_written() -> int:
        files = list(logdir.glob("*/episodes.csv"))
        return len(files[0].read_text().splitlines()) if files else 0

    # Rows reach the file every 10 s of training: wait for a few, however long a loaded machine takes to get
    # there (the timeout is only a safety net; a 2-core machine running another job missed a 120 s one).
    wait_while_running(process, lambda: episodes_written() >= 20, "20 episodes on disk", timeout=900)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)  # a checkpoint with the replay memory: seconds, generously
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "SIGINT" in stderr and "checkpoint" in stderr
    run_dir = only_run_dir(logdir)
    assert not (run_dir / "summary.json").exists()
    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    with open(run_dir / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert 0 < checkpoint["steps"] < 1_000_000
    assert checkpoint["episodes"] == len(rows)  # every episode the checkpoint counts is on disk, no more
    assert int(rows[-1]["step"]) <= checkpoint["steps"]


@pytest.mark.parametrize("save_replay", [True, False])
def test_checkpoint_keeps_the_replay_buffer_on_request(run_cli, workdir, tmp_path, save_replay):
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "steps=1200", "agent.replay_start_size=300", f"checkpoint.replay={save_replay}",
                     *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    checkpoint = torch.load(only_run_dir(logdir) / "checkpoint.pt", weights_only=False)
    assert ("replay" in checkpoint) == save_replay
    if save_replay:
        replay = checkpoint["replay"]
        assert replay["filled"] > 1000 and replay["observation"].shape[-1] == 4
        # The stored rows are the run's real states: CartPole observations, not the buffer's blank memory.
        filled = replay["observation"][: replay["filled"]]
        assert filled.abs().sum() > 0 and filled[:, 0, 0].abs().max() < 5


def test_a_reader_that_stops_early_is_not_an_error(workdir):
    # `rlconf list components | head -0`: the reader closes the pipe before rlconf has printed.
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "list", "components"], cwd=workdir, env=cli_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr


def test_what_the_readmes_commands_write_in_the_checkout_is_ignored_by_git():
    """The ``--video F.mp4`` and ``--out DIR/F.png`` of the README and the guides (docs/guides/: results.md's
    ``rlconf watch`` and ``rlconf plot``), and the CSVs plot writes beside it, land where the command runs, often
    the repository root: .gitignore covers them, and not the tracked benchmark figures."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs" / "guides").glob("*.md"))]
    readme = "\n".join(page.read_text() for page in pages if page.is_file())
    written = set(re.findall(r"--video (\S+\.mp4)", readme)) | set(re.findall(r"--out (\S+\.png)", readme))
    assert {"dqn.mp4", "figs/compare.png"} <= written, written
    written |= {"plot.png", "plot_curves.csv", "plot_aggregate.csv"}  # rlconf plot . --aggregate
    result = subprocess.run(["git", "check-ignore", "--no-index", *sorted(written)], cwd=root, capture_output=True,
                            text=True)
    assert set(result.stdout.split()) == written, result
    tracked = subprocess.run(["git", "check-ignore", "--no-index", "benchmarks/results/learning/atari-pong.png"],
                             cwd=root, capture_output=True, text=True)
    assert tracked.returncode == 1, tracked.stdout
