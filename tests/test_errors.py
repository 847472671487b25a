"""One error hierarchy: every error a user reads is an RlconfError carrying its one line and its exit status,
and the command line maps it to ``rlconf: error: ...`` and that status in one place (errors.reported)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

import rlconf
from rlconf import errors
from rlconf.errors import RlconfError

PACKAGE = Path(rlconf.__file__).parent

BAD_INPUT = [errors.ConfigError, errors.UsageError, errors.TuningError, errors.LauncherError, errors.StatusError,
             errors.AnalysisError, errors.PlaybackError, errors.RunDirRefused]


@pytest.mark.parametrize("kind", BAD_INPUT, ids=lambda kind: kind.__name__)
def test_bad_input_is_an_rlconf_error_with_exit_status_2(kind):
    error = kind("steps=-1: must be at least 1")
    assert isinstance(error, RlconfError) and error.exit_status == 2
    assert error.message == "steps=-1: must be at least 1"


def test_a_failed_run_exits_1_unless_it_says_otherwise():
    assert errors.RunFailed("diverged at step 10").exit_status == 1
    assert errors.RunFailed("learner lost", 3).exit_status == 3
    assert errors.ConfigError("x").exit_status == 2  # a class's status is not changed by an instance's


def test_the_old_homes_of_the_errors_name_the_same_classes():
    """Code that imported an error where it used to live gets the class of the hierarchy (one RunFailed)."""
    from rlconf.analysis.runs import AnalysisError
    from rlconf.experiments.loop.experiment import Diverged, RunFailed
    from rlconf.experiments.playback.play import PlaybackError
    from rlconf.experiments.rundir.directory import RunDirBusy, RunDirRefused
    from rlconf.launch.base import RunFailed as JobFailed
    from rlconf.launch.status import StatusError
    from rlconf.tuning import TuningError

    assert RunFailed is JobFailed is errors.RunFailed and issubclass(Diverged, errors.RunFailed)
    assert (AnalysisError, PlaybackError, RunDirRefused, StatusError, TuningError) == (
        errors.AnalysisError, errors.PlaybackError, errors.RunDirRefused, errors.StatusError, errors.TuningError)
    assert issubclass(RunDirBusy, RunDirRefused)


def test_reported_prints_one_line_and_exits_with_the_error_status(capsys):
    with pytest.raises(SystemExit) as stop, errors.reported():
        raise errors.RunFailed("diverged at step 10 (token ghp_abcdefghijklmnopqrstuvwxyz)", 7)
    assert stop.value.code == 7
    assert capsys.readouterr().err == "rlconf: error: diverged at step 10 (token ***)\n"


def test_the_command_line_maps_errors_in_one_place():
    """cli.py catches no rlconf error itself (errors.reported does, in main), imports at the top of the file
    only, and stays a few hundred lines; api.py imports nothing from it."""
    source = (PACKAGE / "cli.py").read_text()
    tree = ast.parse(source)
    caught = {ast.unparse(handler.type) for node in ast.walk(tree) if isinstance(node, ast.Try)
              for handler in node.handlers if handler.type is not None}
    ours = {name for name in dir(errors) if isinstance(getattr(errors, name), type)}
    assert not caught & ours and {"KeyboardInterrupt", "BrokenPipeError"} <= caught, caught
    local = [node.lineno for function in ast.walk(tree) if isinstance(function, ast.FunctionDef)
             for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not local, f"cli.py imports inside functions at lines {local}"
    assert len(source.splitlines()) < 400
    api = ast.parse((PACKAGE / "api.py").read_text())
    imported = {node.module for node in ast.walk(api) if isinstance(node, ast.ImportFrom)}
    assert "rlconf.cli" not in imported and not any(isinstance(node, ast.Import) and any(
        a.name == "rlconf.cli" for a in node.names) for node in ast.walk(api))


def test_composing_from_python_imports_no_command_line(tmp_path):
    code = ("import sys, rlconf; cfg = rlconf.compose('agent=dqn', 'env=classic/cartpole', 'steps=1e3'); "
            "assert cfg.steps == 1000; assert 'rlconf.cli' not in sys.modules, 'rlconf.cli was imported'; "
            "from rlconf.pipeline import recorded_overrides; print(recorded_overrides(cfg), "
            "recorded_overrides(cfg.copy()))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['agent=dqn', 'env=classic/cartpole', 'steps=1000'] []"
