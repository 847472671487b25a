"""A run directory is data: crafted ones (a Hydra callback, a plugin, an agent or env by import path, an
interpolation, a YAML tag, a pickle) run nothing under ``rlconf eval``, ``watch`` and ``run resume=``; each
is refused in one line, and the marker file that the crafted code would create never appears."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from conftest import FAST_RUN, one_error_line, only_run_dir, run_cli_in, tree_digest

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


# -- crafted files that would hang rlconf or fill the disk, and values not of their file's schema ---------------
# Each is refused in one line (exit 2), with nothing written anywhere and the run directory unchanged. A command
# must return on its own: the subprocess timeout is only a safety net, far beyond the seconds a refusal takes.
SAFETY_NET = 120


def reading_commands(run_dir: Path, workdir: Path) -> dict[str, list[str]]:
    """Every command that reads a run directory, as a user would type it (rerun's logdir beside the run)."""
    return {**commands(run_dir, workdir), "rerun": ["run", f"rerun={run_dir}", f"logdir={run_dir.parent / 'new'}"],
            "plot": ["plot", str(run_dir), "--out", str(workdir / "p.png")],
            "aggregate": ["plot", str(run_dir), "--aggregate", "--out", str(workdir / "p.png")],
            "status": ["status", str(run_dir)]}


def contents(run_dir: Path, sparse: str = "") -> dict[str, object]:
    """What each file of the run directory holds (a hash of its bytes), its lock file included: a resume
    claims the directory before it reads the checkpoint, but names itself there only once it is accepted.
    ``sparse``: a file too large to read, known by its size."""
    return {path.relative_to(run_dir).as_posix(): path.stat().st_size if path.name == sparse else
            hashlib.sha256(path.read_bytes()).digest()
            for path in run_dir.rglob("*") if path.is_file()}


def refused_untouched(run_dir: Path, command: str, workdir: Path, *words: str, sparse: str = "") -> str:
    """``command`` on ``run_dir`` is one line, exit 2, names ``words``; no file of the run directory changed,
    none was written where the command ran, and no new run directory was made."""
    before = contents(run_dir, sparse)
    result = run_cli_in(*reading_commands(run_dir, workdir)[command], cwd=workdir, timeout=SAFETY_NET)
    line = one_error_line(result)
    for word in words:
        assert word in line, (word, line)
    assert contents(run_dir, sparse) == before, "the run directory is unchanged"
    assert list(workdir.iterdir()) == [], "nothing is written where the command ran"
    assert not (run_dir.parent / "new").exists(), "no run directory was made"
    return line


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """A few hundred bytes of YAML whose aliases of aliases expand to width**levels values."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", ["eval", "resume", "rerun", "plot"])
def test_a_billion_laughs_config_is_refused_at_once(crafted, workdir, command):
    (crafted / "config.yaml").write_text(billion_laughs())
    refused_untouched(crafted, command, workdir, "config.yaml", "aliases", "100,000 values")


@pytest.mark.parametrize(("text", "words"), [("a: &a [*a]\n", ("a cycle",)),
                                             ("[" * 100_000 + "]" * 100_000 + "\n", ("nested more than",)),
                                             ("seed: 0\n" + "#" * (17 * 2**20) + "\n", ("larger than 16 MiB",))])
def test_a_config_that_loops_nests_deeply_or_is_huge_is_refused(crafted, workdir, text, words):
    (crafted / "config.yaml").write_text(text)
    refused_untouched(crafted, "eval", workdir, "config.yaml", *words)


@pytest.mark.parametrize(("file", "command"), [("summary.json", "status"), ("summary.json", "aggregate"),
                                               ("summary.json", "resume"), ("status.json", "status"),
                                               ("provenance.json", "rerun")])
def test_deeply_nested_json_is_refused(crafted, workdir, file, command):
    (crafted / file).write_text("[" * 100_000 + "]" * 100_000)
    refused_untouched(crafted, command, workdir, file, "nested more than 64 levels")


@pytest.mark.parametrize(("summary", "words"), [([1, 2], ("holds a list", "a mapping")),
                                                ({"state": "done", "steps": "abc"}, ("steps='abc'", "whole number")),
                                                ({"state": "done", "steps": 300, "test_return_mean": "high"},
                                                 ("test_return_mean='high'", "a number or null"))])
@pytest.mark.parametrize("command", ["status", "aggregate", "resume"])
def test_a_summary_not_as_rlconf_writes_it_is_refused(crafted, workdir, summary, words, command):
    (crafted / "summary.json").write_text(json.dumps(summary))
    refused_untouched(crafted, command, workdir, "summary.json", *words)


def test_a_sweep_whose_run_has_a_summary_not_as_rlconf_writes_it_is_not_resumed(tmp_path, workdir):
    result = run_cli_in("run", "-m", "agent=dqn", "env=classic/cartpole", "seed=3", "steps=300",
                        "agent.replay_start_size=100", *FAST_RUN, f"logdir={tmp_path / 'sweeps'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(next((tmp_path / "sweeps").iterdir()))
    (run_dir / "summary.json").write_text("[1, 2]")
    before = tree_digest(run_dir.parent)
    line = one_error_line(run_cli_in("run", "-m", f"resume={run_dir.parent}", cwd=workdir, timeout=SAFETY_NET))
    assert "summary.json: holds a list" in line
    assert tree_digest(run_dir.parent) == before


def test_a_status_of_the_wrong_types_is_refused(crafted, workdir):
    status = json.loads((crafted / "status.json").read_text())
    (crafted / "status.json").write_text(json.dumps({**status, "steps": "many", "state": "running"}))
    refused_untouched(crafted, "status", workdir, "status.json", "steps='many'")


def test_a_provenance_whose_code_is_text_is_refused(crafted, workdir):
    provenance = json.loads((crafted / "provenance.json").read_text())
    (crafted / "provenance.json").write_text(json.dumps({**provenance, "code": "abc"}))
    refused_untouched(crafted, "rerun", workdir, "provenance.json", "code='abc'", "a mapping")


def tamper(run_dir: Path, change) -> None:
    """Change the run's checkpoint.pt in place with ``change(state)``."""
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    change(state)
    torch.save(state, run_dir / "checkpoint.pt")


def first_weight(state: dict) -> str:
    return next(iter(state["agent"]["q"]["model"]))


TAMPERED = {  # what a hostile hand changes in a checkpoint -> what the refusal says
    "steps text": (lambda s: s.update(steps="abc"), ("steps='abc'", "a whole number >= 0")),
    "steps negative": (lambda s: s.update(steps=-5), ("steps=-5", "a whole number >= 0")),
    "episodes text": (lambda s: s.update(episodes="many"), ("episodes='many'",)),
    "format 999": (lambda s: s.update(format=999), ("format=999", "formats this rlconf reads: 1, 2, 3")),
    "nan weights": (lambda s: s["agent"]["q"]["model"][first_weight(s)].fill_(float("nan")),
                    ("holds nan", "non-finite weights")),
}


@pytest.mark.parametrize("command", ["eval", "resume"])
@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_checkpoint_is_refused(crafted, workdir, case, command):
    change, words = TAMPERED[case]
    tamper(crafted, change)
    refused_untouched(crafted, command, workdir, "checkpoint.pt", *words)


def test_a_checkpoint_whose_generator_state_does_not_restore_is_refused(crafted, workdir):
    tamper(crafted, lambda s: s["rng"]["numpy"]["state"].update(key=[1, 2, 3]))  # a 3-element MT19937 key
    refused_untouched(crafted, "resume", workdir, "checkpoint.pt", "rng.numpy")


def test_a_shape_mismatch_names_the_first_mismatching_key(crafted, workdir):
    def widen(state):
        model = state["agent"]["q"]["model"]
        key = first_weight(state)
        model[key] = torch.zeros(model[key].shape[0] + 3, *model[key].shape[1:])

    tamper(crafted, widen)
    line = refused_untouched(crafted, "eval", workdir, "checkpoint.pt", "size mismatch for 0.weight")
    assert "torch.Size([259, 4])" in line and "torch.Size([256, 4])" in line


def test_a_recorded_log_size_beyond_the_file_is_refused_and_the_log_untouched(crafted, workdir):
    """Resuming cuts each log back to the size its checkpoint records: a recorded 10^12 bytes would instead
    extend episodes.csv to a terabyte-long sparse file."""
    tamper(crafted, lambda s: s["logger"]["CSVLogger"]["sizes"].update({"episodes.csv": 10**12}))
    size = (crafted / "episodes.csv").stat().st_size
    refused_untouched(crafted, "resume", workdir, "episodes.csv", "1,000,000,000,000 bytes", f"holds {size:,}")
    assert (crafted / "episodes.csv").stat().st_size == size


@pytest.mark.parametrize("where", ["after the rows", "all of it"])
def test_plot_refuses_a_huge_sparse_log_at_its_first_megabyte(crafted, workdir, where):
    with open(crafted / "episodes.csv", "r+b" if where == "after the rows" else "wb") as file:
        file.truncate(10**12)  # a terabyte of NULs, stored as nothing
    refused_untouched(crafted, "plot", workdir, "episodes.csv", "NUL byte", sparse="episodes.csv")


def test_status_shows_only_the_tail_of_a_huge_log_a_job_names(crafted, workdir):
    """job.json names the run's log; a crafted one names a terabyte-long sparse file, of which rlconf status
    reads the last kilobytes only (and returns on its own)."""
    log = crafted.parent / "huge.log"
    with open(log, "wb") as file:
        file.seek(10**12)
        file.write(b"\nthe last line of the log\n")
    status = json.loads((crafted / "status.json").read_text())
    (crafted / "status.json").write_text(json.dumps({**status, "state": "failed", "error": "crafted"}))
    (crafted / "summary.json").unlink()  # a run that failed
    (crafted / "job.json").write_text(json.dumps({"launcher": "local", "log": str(log)}))
    result = run_cli_in("status", str(crafted), cwd=workdir, timeout=SAFETY_NET)
    assert result.returncode == 0, result.stderr
    assert "| the last line of the log" in result.stdout


def test_the_python_api_names_its_own_checkpoint_argument(crafted):
    import rlconf
    from rlconf.experiments.playback.play import PlaybackError

    with pytest.raises(PlaybackError) as refused_load:
        rlconf.load(crafted, checkpoint=999999)
    assert str(refused_load.value).startswith("checkpoint=999999: "), str(refused_load.value)
    assert "--checkpoint" not in str(refused_load.value)



# -- a sweep's Optuna journal ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def optuna_sweep(tmp_path_factory) -> Path:
    """A finished Optuna sweep of one short trial (its study in optuna.journal)."""
    pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    root = tmp_path_factory.mktemp("optuna")
    result = run_cli_in("run", "-m", "agent=dqn", "env=classic/cartpole", "sweep=optuna_dqn", "steps=300",
                        "eval_every=150", "eval_episodes=2", "test_episodes=2", "quiet=true", "launcher=basic",
                        "hydra.sweeper.n_jobs=1", "hydra.sweeper.n_trials=1", f"logdir={root / 'runs'}", cwd=root)
    assert result.returncode == 0, result.stderr
    return next((root / "runs").glob("sweep_*"))


@pytest.fixture
def crafted_sweep(optuna_sweep, tmp_path) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(optuna_sweep, copy)
    return copy


def resume_refused(sweep: Path, workdir: Path, *words: str) -> None:
    """``-m resume=SWEEP`` one more trial: refused in one line holding ``words``, the sweep left as it was."""
    before = tree_digest(sweep)
    line = one_error_line(run_cli_in("run", "-m", f"resume={sweep}", "hydra.sweeper.n_trials=2", cwd=workdir))
    for word in words:
        assert word in line, (word, line)
    assert tree_digest(sweep) == before


def test_a_bad_line_in_an_optuna_journal_is_one_line_naming_the_file_and_the_line(crafted_sweep, workdir):
    journal = crafted_sweep / "optuna.journal"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join([*lines[:2], "{not json\n", *lines[2:]]))
    resume_refused(crafted_sweep, workdir, f"{journal}: line 3", "not a line of an Optuna journal")


def test_a_crafted_trial_outside_the_sweeps_search_space_never_runs(crafted_sweep, workdir):
    """A running trial written into the journal with agent.lr=1e9 (its own distribution made to hold it) would
    be asked again by -m resume= and train with it: every trial to run is checked against the sweep's space."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    store = JournalStorage(JournalFileBackend(str(crafted_sweep / "optuna.journal")))
    study = optuna.load_study(study_name="rlconf", storage=store)
    study.enqueue_trial({"agent.lr": 1e9})
    study.ask().suggest_float("agent.lr", 1e8, 1e10, log=True)  # RUNNING, its value inside its own distribution
    resume_refused(crafted_sweep, workdir, "trial 1: agent.lr=1000000000.0", "outside this sweep's search space")


# -- a run or sweep directory whose files lead out of it -----------------------------------------------------
# rlconf appends to a run's logs (cutting them back to their recorded sizes on resume), takes its .lock, and
# writes a sweep's journal and results: linked to files elsewhere, each is refused before anything is written,
# and the files behind the links (the decoy's) are what they were.
def linked(folder: Path, name: str, target: Path) -> Path:
    """``folder/name`` made a symbolic link to ``target``, in place of what rlconf keeps there."""
    link = folder / name
    if link.is_dir() and not link.is_symlink():
        shutil.move(link, target)
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    return link


@pytest.mark.parametrize(("name", "target"), [("episodes.csv", "episodes.csv"), ("scalars.csv", "scalars.csv"),
                                              (".lock", "lock")])
def test_a_run_file_linked_out_of_its_directory_is_refused(crafted, workdir, decoy, name, target):
    link = linked(crafted, name, decoy / target)
    before = tree_digest(decoy)
    refused(crafted, "resume", workdir, f"{link} is a symbolic link", "rlconf writes only inside a run directory")
    assert tree_digest(decoy) == before, "no file outside the run directory was touched"


def test_a_fifo_in_place_of_a_log_is_refused_without_waiting_on_it(crafted, workdir):
    (crafted / "episodes.csv").unlink()
    os.mkfifo(crafted / "episodes.csv")
    refused(crafted, "resume", workdir, f"{crafted / 'episodes.csv'} is not a regular file (a FIFO)")


def a_run_of(sweep: Path) -> Path:
    return next(path for path in sorted(sweep.iterdir()) if (path / "config.yaml").is_file())


@pytest.mark.parametrize(("name", "target"), [("optimization_results.yaml", "results.yaml"),
                                              ("optuna.journal", "journal"), ("RUN/episodes.csv", "episodes.csv"),
                                              ("RUN", "run")])
def test_a_sweep_file_linked_out_of_its_directory_is_refused(crafted_sweep, workdir, decoy, name, target):
    """The sweep's results, its study, a log of one of its runs, or the run's whole directory."""
    name = name.replace("RUN", a_run_of(crafted_sweep).name)
    link = linked(crafted_sweep, name, decoy / target)
    before = tree_digest(decoy)
    resume_refused(crafted_sweep, workdir, f"{link} is a symbolic link", "rlconf writes only inside a")
    assert tree_digest(decoy) == before, "no file outside the sweep directory was touched"
    assert list(workdir.iterdir()) == []
