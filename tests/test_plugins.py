"""A user's own agent, added without editing rlconf: a module of theirs, declaring its spec as a built-in agent
does, and a folder of their configs; and the documentation's example of one (docs/guides/own-agent.md), run as
written."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, one_error_line, only_run_dir
from omegaconf import OmegaConf

MY_AGENTS = textwrap.dedent('''
    """A user's module: a uniformly random agent, registered under its own name."""
    from dataclasses import dataclass

    import torch

    import rlconf
    from rlconf.agents import AgentSpec, ParallelAgent, Plays, TestAgent


    class MyRandom(ParallelAgent):
        @dataclass
        class Config:
            temperature: float = 1.0  # one hyperparameter, checked like any other

        def __init__(self, n_actions: int, config: Config):
            self.n_actions = n_actions
            self.config = config
            self.calls = 0

        @classmethod
        def from_config(cls, config, context):
            assert isinstance(config, cls.Config), type(config)
            return cls(int(context.action_space.n), config)

        def act(self, states):
            self.calls += 1
            return torch.randint(self.n_actions, (len(states),), dtype=torch.int64)

        def test_agent(self) -> TestAgent:
            return self

        def state_dict(self):
            return {"calls": self.calls, "temperature": self.config.temperature}


    rlconf.register(AgentSpec("my_random", "my_agents:MyRandom", MyRandom.Config,
                              "uniformly random actions (a user's plugin)", plays=Plays.single_agent("discrete")))
''')


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    """tmp_path/my_agents.py and tmp_path/conf/agent/{my_random,my_target}.yaml."""
    (tmp_path / "my_agents.py").write_text(MY_AGENTS)
    agents = tmp_path / "conf" / "agent"
    agents.mkdir(parents=True)
    (agents / "my_random.yaml").write_text("# my random agent\nname: my_random\ntemperature: 0.5\n")
    (agents / "my_target.yaml").write_text("# the same agent, by import path\n_target_: my_agents.MyRandom\n"
                                           "temperature: 2.0\n")
    return tmp_path


def test_registered_plugin_agent_runs(run_cli, user_project, workdir):
    logdir = user_project / "runs"
    result = run_cli("run", "agent=my_random", "env=classic/cartpole", "plugins=[my_agents]",
                     "--config-dir", str(user_project / "conf"), "steps=500", *FAST_RUN, f"logdir={logdir}",
                     cwd=workdir, pythonpath=[user_project])
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    assert run_dir.name.startswith("my_random_classic-cartpole_")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["agent"] == "my_random"
    assert isinstance(summary["test_return_mean"], float) and summary["test_return_mean"] > 0
    assert summary["test_episodes"] == 2 and summary["steps"] == 500
    config = OmegaConf.load(run_dir / "config.yaml")
    assert config.agent.temperature == 0.5
    assert list(config.plugins) == ["my_agents"]


def test_plugin_hyperparameters_are_type_checked(run_cli, user_project, workdir):
    line = one_error_line(run_cli("run", "agent=my_random", "env=classic/cartpole", "plugins=[my_agents]",
                                  "--config-dir", str(user_project / "conf"), "agent.temperature=hot",
                                  cwd=workdir, pythonpath=[user_project]))
    assert "agent.temperature=hot" in line and "float" in line


def test_forgetting_the_plugin_names_the_unknown_agent(run_cli, user_project, workdir):
    line = one_error_line(run_cli("run", "agent=my_random", "env=classic/cartpole",
                                  "--config-dir", str(user_project / "conf"), cwd=workdir,
                                  pythonpath=[user_project]))
    assert line == ("rlconf: error: agent.name: unknown agent 'my_random' (did you mean 'random'?): an agent of your "
                    "own is registered when "
                    "its module is imported: add plugins=[MODULE] (its folder on PYTHONPATH); the built-in ones: "
                    "rlconf list agent")


def test_list_shows_the_users_config_options(run_cli, user_project, workdir):
    result = run_cli("list", "agent", "--config-dir", str(user_project / "conf"), cwd=workdir)
    assert result.returncode == 0, result.stderr
    # Agents are listed under headings (lines ending in ":"); a config the registry does not know is "other"
    lines = [line.strip() for line in result.stdout.splitlines()[1:]]
    options = dict(line.split(None, 1) for line in lines if not line.endswith(":"))
    assert "other:" in lines and lines[lines.index("other:") + 1].startswith("my_random")
    assert options["my_random"] == "my random agent"
    assert "my_target" in options and "dqn" in options and "ppo" in options


def test_target_import_path_works_without_registering(run_cli, user_project, workdir):
    logdir = user_project / "runs"
    result = run_cli("run", "agent=my_target", "env=classic/cartpole", "--config-dir", str(user_project / "conf"),
                     "steps=500", *FAST_RUN, f"logdir={logdir}", cwd=workdir, pythonpath=[user_project])
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["agent"] == "myrandom", "without a name, the run is named after the class"
    assert isinstance(summary["test_return_mean"], float)
    assert OmegaConf.load(run_dir / "config.yaml").agent._target_ == "my_agents.MyRandom"
    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert checkpoint["agent"]["temperature"] == 2.0
    # one act() per environment step, plus one per reset step after an episode's end
    assert 500 <= checkpoint["agent"]["calls"] <= 500 + summary["episodes"]


OWN_AGENT_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "own-agent.md"


def guide_plugin_example() -> tuple[str, dict[str, str], list[str]]:
    """The guide's "Adding your own agent" (docs/guides/own-agent.md): its module, its config files (each named by
    its first line, a comment) and its command, as written there."""
    text = OWN_AGENT_GUIDE.read_text()
    section = text.split("## Adding your own agent", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.DOTALL)
    module = next(body for language, body in blocks if language == "python")
    files = {body.splitlines()[0].removeprefix("# "): body for language, body in blocks if language in ("python",
                                                                                                         "yaml")}
    command = next(body for language, body in blocks if language in ("", "bash") and "rlconf run" in body).strip()
    assert module.startswith("# my_agents.py") and command.startswith("PYTHONPATH=. rlconf "), command
    return module, files, shlex.split(command.removeprefix("PYTHONPATH=. rlconf "))


def test_the_guide_plugin_example_runs_as_written(run_cli, tmp_path):
    """The guide's plugin agent declares its spec as a built-in agent does, and its files and command work as
    written (with a short budget and a log folder of the test's own)."""
    module, files, command = guide_plugin_example()
    assert "rlconf.register(AgentSpec(" in module and "@rlconf.register" not in module
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    logdir = tmp_path / "runs"
    result = run_cli(*command, "steps=300", *FAST_RUN, f"logdir={logdir}", cwd=tmp_path, pythonpath=[tmp_path])
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(logdir) / "summary.json").read_text())
    assert summary["agent"] == "my_random" and summary["steps"] == 300
    refused = run_cli(*command, "env=classic/pendulum", cwd=tmp_path, pythonpath=[tmp_path])
    assert "agent=my_random: needs discrete actions" in one_error_line(refused)  # what its spec says it plays


MY_ENVS = textwrap.dedent('''
    """A user's module: an environment family of their own, declared by its spec as a built-in family is."""
    import rlconf
    from rlconf.core import EnvKind
    from rlconf.environments import EnvSpec

    rlconf.register(EnvSpec("my_control", "rlconf.environments.gym:GymVectorEnvironment",
                            "gymnasium's classic control, under a name of the user's", EnvKind.SINGLE_AGENT))
''')


def test_a_plugin_environment_family_is_declared_by_its_spec(run_cli, tmp_path, workdir):
    (tmp_path / "my_envs.py").write_text(MY_ENVS)
    logdir = tmp_path / "runs"
    family = ("agent=dqn", "env=classic/cartpole", "env.family=my_control", "plugins=[my_envs]")
    result = run_cli("run", *family, "steps=300", *FAST_RUN, f"logdir={logdir}", cwd=workdir,
                     pythonpath=[tmp_path])
    assert result.returncode == 0, result.stderr
    assert json.loads((only_run_dir(logdir) / "summary.json").read_text())["steps"] == 300
    # What the spec declares is what the checks read: vector observations, no lives.
    line = one_error_line(run_cli("run", *family, "body=atari", cwd=workdir, pythonpath=[tmp_path]))
    assert "body=atari: its episodic lives need a game with lives" in line
