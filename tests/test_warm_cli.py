"""The tests' warm rlconf (tests/warm_cli.py) is the command a user types: what a forked call answers is what a
fresh ``python -m rlconf`` answers, it finds modules in its working directory as ``-m`` does, and a timeout kills
it as subprocess.run's does."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from conftest import cli_env, only_run_dir, run_cli_cold, warm_cli


@pytest.mark.parametrize("args", [
    ("run", "agent=dqn", "env=classic/cartpole", "agent.lr=fast"),  # a refusal: one line, exit 2
    ("list", "agent"),
    ("--version",),
])
def test_a_warm_call_answers_as_a_fresh_interpreter_does(args, workdir):
    warm = warm_cli().run(list(args), workdir, cli_env(), timeout=300)
    fresh = run_cli_cold(list(args), workdir, cli_env())
    assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


PLUGIN = '''from pathlib import Path

import rlconf


class Note(rlconf.Callback):
    def on_run_end(self, run):
        Path("ended.txt").write_text(str(run.steps))
'''


def test_a_warm_run_imports_plugins_from_its_working_directory_and_records_its_command(workdir):
    (workdir / "note.py").write_text(PLUGIN)
    args = ["run", "agent=dqn", "env=classic/cartpole", "steps=200", "test_episodes=0", "eval_every=0",
            "plugins=[note]", "callbacks=[note.Note]", "quiet=true", "logdir=runs"]
    result = warm_cli().run(args, workdir, cli_env(), timeout=300)
    assert result.returncode == 0, result.stderr
    assert (workdir / "ended.txt").read_text() == "200"
    provenance = json.loads((only_run_dir(workdir / "runs") / "provenance.json").read_text())
    assert provenance["command"] == shlex.join(["rlconf", *args])


def test_a_warm_call_past_its_timeout_is_killed_with_what_it_started(workdir):
    args = ["run", "agent=dqn", "env=classic/cartpole", "steps=10000000", "quiet=true", "logdir=runs"]
    with pytest.raises(subprocess.TimeoutExpired) as timeout:
        warm_cli().run(args, workdir, cli_env(), timeout=5)
    # What it was doing, to tell a hang from a slow machine: its processes, and its threads' stacks.
    said = str(timeout.value)
    assert "its processes:\n  " in said, said
    assert "most recent call first" in said and "rlconf/cli.py" in said, said
    # The server answers the next call: the killed one was reaped and nothing of it is left in the way.
    assert warm_cli().run(["--version"], workdir, cli_env(), timeout=300).returncode == 0
