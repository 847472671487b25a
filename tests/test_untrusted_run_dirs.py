"""A run directory is data: crafted ones (a Hydra callback, a plugin, an agent or env by import path, an
interpolation, a YAML tag, a pickle) run nothing under ``rlconf eval``, ``watch`` and ``run resume=``; each
is refused in one line, and the marker file that the crafted code would create never appears."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml
from conftest import FAST_RUN, one_error_line, only_run_dir, run_cli_in

MARKER = "pwned.txt"
EVIL_MODULE = "rlconf_evil_plugin"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One small finished DQN CartPole run, copied by each test before it is tampered with."""
    root = tmp_path_factory.mktemp("trained")
    result = run_cli_in("run", "agent=dqn", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100",
                        *FAST_RUN, f"logdir={root / 'runs'}", cwd=root)
    assert result.returncode == 0, result.stderr
    return only_run_dir(root / "runs")


@pytest.fixture
def crafted(trained, tmp_path) -> Path:
    """A copy of the trained run, and beside it a module that writes MARKER into the working directory when
    imported (on the tests' PYTHONPATH, as an attacker would hope a victim's path holds it)."""
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    plugin_dir = tmp_path / "site"
    plugin_dir.mkdir()
    (plugin_dir / f"{EVIL_MODULE}.py").write_text(
        f"from pathlib import Path\nPath({MARKER!r}).write_text('imported')\n"
        "class Agent:\n    pass\n")
    return run_dir


def config(run_dir: Path) -> dict:
    return yaml.safe_load((run_dir / "config.yaml").read_text())


def write_config(run_dir: Path, data: dict) -> None:
    (run_dir / "config.yaml").write_text(yaml.safe_dump(data))


def add_overrides(run_dir: Path, *lines: str) -> None:
    saved = yaml.safe_load((run_dir / "overrides.yaml").read_text()) or []
    (run_dir / "overrides.yaml").write_text(yaml.safe_dump([*saved, *lines]))


def commands(run_dir: Path, workdir: Path) -> dict[str, list[str]]:
    return {"eval": ["eval", str(run_dir), "--episodes", "1"],
            "watch": ["watch", str(run_dir), "--video", str(workdir / "v.mp4")],
            "resume": ["run", f"resume={run_dir}", "steps=400"]}


def refused(run_dir: Path, command: str, workdir: Path, *words: str) -> str:
    """``command`` on ``run_dir`` is one line, exit 2, names ``words``; nothing ran, nothing was written."""
    before = {p: p.stat().st_mtime_ns for p in run_dir.iterdir()}
    line = one_error_line(run_cli_in(*commands(run_dir, workdir)[command], cwd=workdir,
                                     pythonpath=[run_dir.parent / "site"]))
    for word in words:
        assert word in line, (word, line)
    assert not (workdir / MARKER).exists(), "the crafted code ran"
    assert list(workdir.iterdir()) == [], "nothing is written where the command ran"
    assert {p: p.stat().st_mtime_ns for p in run_dir.iterdir()} == before, "the run directory is unchanged"
    return line


def test_a_hydra_callback_in_overrides_is_never_instantiated(crafted, workdir):
    add_overrides(crafted, "+hydra.callbacks.x._target_=builtins.open", f"+hydra.callbacks.x.file={MARKER}",
                  "+hydra.callbacks.x.mode=w")
    refused(crafted, "resume", workdir, "overrides.yaml", "hydra.callbacks.x._target_", "Hydra setting")


def test_a_target_in_overrides_is_refused(crafted, workdir):
    add_overrides(crafted, f"+agent._target_={EVIL_MODULE}.Agent")
    refused(crafted, "resume", workdir, "agent._target_", "names code to import")


@pytest.mark.parametrize("command", ["eval", "watch", "resume"])
def test_a_plugin_of_the_run_is_imported_only_when_named(crafted, workdir, command):
    data = config(crafted)
    data["plugins"] = [EVIL_MODULE]
    write_config(crafted, data)
    add_overrides(crafted, f"plugins=[{EVIL_MODULE}]")
    how = f"--plugins {EVIL_MODULE}" if command != "resume" else f"plugins=[{EVIL_MODULE}]"
    refused(crafted, command, workdir, f"plugins={EVIL_MODULE}", f"add {how}")


def test_a_named_plugin_is_imported(crafted, workdir):
    """The same directory with the plugin named on the command line: the user chose to import it."""
    data = config(crafted)
    data["plugins"] = [EVIL_MODULE]
    write_config(crafted, data)
    result = run_cli_in("eval", str(crafted), "--episodes", "1", "--plugins", EVIL_MODULE, cwd=workdir,
                        pythonpath=[crafted.parent / "site"])
    assert result.returncode == 0, result.stderr
    assert (workdir / MARKER).read_text() == "imported"


@pytest.mark.parametrize("command", ["eval", "watch"])
@pytest.mark.parametrize("where", ["agent", "env"])
def test_code_by_import_path_in_the_config_is_refused(crafted, workdir, command, where):
    data = config(crafted)
    if where == "agent":
        data["agent"]["_target_"] = f"{EVIL_MODULE}.Agent"
    else:  # gymnasium imports the module of a "module:Env-v0" id
        data["env"]["id"] = f"{EVIL_MODULE}:CartPole-v1"
    write_config(crafted, data)
    refused(crafted, command, workdir, f"imports {EVIL_MODULE}", f"--plugins {EVIL_MODULE}")


@pytest.mark.parametrize(("command", "file"), [("eval", "config.yaml"), ("watch", "config.yaml"),
                                               ("resume", "config.yaml"), ("resume", "overrides.yaml")])
def test_interpolations_are_never_resolved(crafted, workdir, command, file, monkeypatch):
    monkeypatch.setenv("RLCONF_TEST_SECRET", "hunter2-very-secret")
    if file == "config.yaml":
        data = config(crafted)
        data["seed"] = "${oc.env:RLCONF_TEST_SECRET}"
        write_config(crafted, data)
    else:
        add_overrides(crafted, "agent.lr=${oc.env:RLCONF_TEST_SECRET}")
    line = refused(crafted, command, workdir, "interpolation", "${oc.env:RLCONF_TEST_SECRET}")
    assert "hunter2" not in line


@pytest.mark.parametrize("command", ["eval", "watch", "resume"])
def test_a_yaml_tag_constructs_nothing(crafted, workdir, command):
    (crafted / "config.yaml").write_text(f"!!python/object/apply:os.system ['touch {MARKER}']\n")
    refused(crafted, command, workdir, "not valid YAML", "no tags")


@pytest.mark.parametrize("command", ["eval", "watch", "resume"])
def test_a_pickled_checkpoint_runs_nothing(crafted, workdir, command):
    class Payload:
        def __reduce__(self):
            return (Path(MARKER).write_text, ("unpickled",))

    torch.save({"agent": Payload(), "steps": 300}, crafted / "checkpoint.pt")
    line = one_error_line(run_cli_in(*commands(crafted, workdir)[command], cwd=workdir))
    assert "checkpoint.pt" in line
    assert not (workdir / MARKER).exists()
    assert not (workdir / "v.mp4").exists()


def test_a_sweep_may_carry_only_launcher_and_sweeper_settings(tmp_path, workdir):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    multirun = {"hydra": {"overrides": {"task": ["agent=dqn", "env=classic/cartpole"],
                                         "hydra": ["hydra.mode=MULTIRUN", "hydra.sweeper.max_batch_size=2",
                                                   "+hydra.callbacks.x._target_=builtins.open"]}}}
    (sweep / "multirun.yaml").write_text(yaml.safe_dump(multirun))
    line = one_error_line(run_cli_in("run", "-m", f"resume={sweep}", cwd=workdir))
    assert "hydra.callbacks.x._target_" in line and "hydra.launcher.*, hydra.sweeper.*" in line
    assert list(workdir.iterdir()) == []
