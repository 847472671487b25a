"""Callbacks, the loop's extension point: a user's callback (from a plugin module named in the config, or passed to
``rlconf.train``) is told of every event of a run, a resumed run and an async-runner run; the three shipped ones
(``stop.reward``, ``stop.patience``, ``stop.time``) end a run "done" with their reason, and a resume of such a
run says it has stopped; a callback that raises stops the run in one line naming it, the checkpoint kept; bad
``stop.*`` and ``callbacks=`` values are one line, exit 2. Real runs, tiny budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_error_line, only_run_dir

import rlconf

CARTPOLE = ["agent=dqn", "env=classic/cartpole", "agent.replay_start_size=50"]
QUICK = ["test_episodes=2", "quiet=true"]  # conftest's FAST_RUN, with the periodic evaluations each test sets
EVENTS = ["run_start", "batch", "episode_end", "evaluation", "checkpoint", "run_end"]

# A user's plugin module: a callback writing each event it is told of into the run directory (each batch only the
# first time: there is one after every step), and one that raises at the first evaluation.
RECORDER = '''
import json

import rlconf


class Recorder(rlconf.Callback):
    batched = False

    def _log(self, run, event, **extra):
        with open(run.run_dir / "events.jsonl", "a") as log:
            log.write(json.dumps({"event": event, "steps": run.steps, **extra}) + "\\n")

    def on_run_start(self, run):
        self._log(run, "run_start", start=run.start_steps, resumes=run.resumes)

    def on_batch(self, run):
        if not self.batched:
            self.batched = True
            self._log(run, "batch")

    def on_episode_end(self, run, episode):
        self._log(run, "episode_end", number=episode.number, returns=episode.returns)

    def on_evaluation(self, run, evaluation):
        self._log(run, "evaluation", at=evaluation.steps, mean=evaluation.mean)

    def on_checkpoint(self, run, path):
        self._log(run, "checkpoint", exists=path.is_file())

    def on_run_end(self, run):
        self._log(run, "run_end", state=run.state)


class Boom(rlconf.Callback):
    def on_evaluation(self, run, evaluation):
        raise ValueError("no evaluation wanted")
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "recorder.py").write_text(RECORDER)
    return tmp_path


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def assert_every_event(seen: list[dict], start: int = 0) -> None:
    kinds = [e["event"] for e in seen]
    assert set(kinds) == set(EVENTS), kinds
    assert kinds[0] == "run_start" and seen[0]["start"] == start and kinds[-1] == "run_end"
    assert seen[-1]["state"] == "done"
    assert all(e["exists"] for e in seen if e["event"] == "checkpoint")
    numbers = [e["number"] for e in seen if e["event"] == "episode_end"]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # every episode, in order


def run_summary(run_dir: Path) -> tuple[dict, dict]:
    return (json.loads((run_dir / "summary.json").read_text()), json.loads((run_dir / "status.json").read_text()))


def test_a_plugin_callback_sees_every_event_of_a_run_and_of_its_resume(run_cli, project, workdir):
    logdir = project / "runs"
    plugin = ["plugins=[recorder]", "callbacks=[recorder.Recorder]"]
    result = run_cli("run", *CARTPOLE, *plugin, "steps=300", "eval_every=100", "eval_episodes=1", *QUICK,
                     f"logdir={logdir}", cwd=workdir, pythonpath=[project])
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    first = events(run_dir)
    assert_every_event(first)
    assert [e["at"] for e in first if e["event"] == "evaluation"] == [100, 200, 300]

    # A resumed run's plugins are imported only when named again (the trust rule of plugins=)
    resumed = run_cli("run", f"resume={run_dir}", "steps=500", "plugins=[recorder]", cwd=workdir,
                      pythonpath=[project])
    assert resumed.returncode == 0, resumed.stderr
    again = events(run_dir)[len(first):]
    assert_every_event(again, start=first[-1]["steps"])
    assert again[0]["resumes"] == 1
    last_episode = max(e["number"] for e in first if e["event"] == "episode_end")
    assert min(e["number"] for e in again if e["event"] == "episode_end") == last_episode + 1


def test_a_plugin_callback_sees_every_event_of_an_async_runner_run(run_cli, project, workdir):
    logdir = project / "runs"
    result = run_cli("run", *CARTPOLE, "plugins=[recorder]", "callbacks=[recorder.Recorder]",
                     "hardware.runner=async", "steps=300", "eval_every=100", "eval_episodes=1", *QUICK,
                     f"logdir={logdir}", cwd=workdir, pythonpath=[project])
    assert result.returncode == 0, result.stderr
    assert_every_event(events(only_run_dir(logdir)))


class Recording(rlconf.Callback):
    """Every event, in memory."""

    def __init__(self):
        self.seen: list[tuple] = []

    def on_run_start(self, run):
        self.seen.append(("run_start", run.steps, run.budget))

    def on_batch(self, run):
        if not self.seen or self.seen[-1][0] != "batch":
            self.seen.append(("batch", run.steps))

    def on_episode_end(self, run, episode):
        self.seen.append(("episode_end", episode.steps, episode.number, episode.returns))

    def on_evaluation(self, run, evaluation):
        self.seen.append(("evaluation", evaluation.steps, evaluation.mean, run.best_eval))

    def on_checkpoint(self, run, path):
        self.seen.append(("checkpoint", run.checkpoint_steps, path))

    def on_run_end(self, run):
        self.seen.append(("run_end", run.state, run.steps, run.stop_reason))


def test_train_takes_callbacks_that_see_every_event(tmp_path):
    recording = Recording()
    run_dir, summary = rlconf.train([*CARTPOLE, "steps=300", "eval_every=150", "eval_episodes=1", *QUICK,
                                     f"logdir={tmp_path}"], callbacks=[recording])
    kinds = [event[0] for event in recording.seen]
    assert set(kinds) == set(EVENTS)
    assert recording.seen[0] == ("run_start", 0, 300)
    assert recording.seen[-1] == ("run_end", "done", summary["steps"], None)
    assert [e[1] for e in recording.seen if e[0] == "evaluation"] == [150, 300]
    assert [e[1] for e in recording.seen if e[0] == "checkpoint"] == [0, summary["steps"]]
    assert all(e[2] == run_dir / "checkpoint.pt" for e in recording.seen if e[0] == "checkpoint")
    assert [e[2] for e in recording.seen if e[0] == "episode_end"] == list(range(1, summary["episodes"] + 1))


def test_stop_reward_ends_the_run_done_with_its_reason_and_its_resume_says_so(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "stop.reward=5", "eval_every=200", "eval_episodes=2", "steps=5000",
                     *QUICK, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary, status = run_summary(run_dir)
    assert summary["state"] == status["state"] == "done"
    assert summary["steps"] == 200  # the first evaluation returns more than 5: stopped there, then tested
    assert summary["test_episodes"] == 2
    assert summary["stop_reason"].startswith("stop.reward=5: the evaluation at step 200 returned")
    assert status["stop_reason"] == summary["stop_reason"]

    again = run_cli("run", f"resume={run_dir}", "quiet=false", cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip().splitlines() == [
        f"rlconf: {run_dir} has stopped ({summary['stop_reason']}; summary.json): skipped"]
    assert run_summary(run_dir)[0] == summary


def test_the_issues_stop_reward_command_is_accepted(run_cli, workdir):
    result = run_cli("run", "agent=dqn", "env=classic/cartpole", "stop.reward=475", "eval_every=2000", "--cfg",
                     "job", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "reward: 475" in result.stdout


def test_stop_patience_ends_the_run_done_with_its_reason(tmp_path):
    _, summary = rlconf.train(["agent=random", "env=classic/cartpole", "stop.patience=2", "eval_every=100",
                               "eval_episodes=1", "steps=20000", *QUICK, f"logdir={tmp_path}"])
    assert summary["state"] == "done"
    assert summary["steps"] < 20000
    assert summary["stop_reason"].startswith("stop.patience=2: 2 evaluations without beating the best return")


def test_stop_time_ends_the_run_done_with_its_reason(tmp_path):
    _, summary = rlconf.train(["agent=random", "env=classic/cartpole", "stop.time=1s", "steps=100000000",
                               "eval_every=0", *QUICK, f"logdir={tmp_path}"])
    assert summary["state"] == "done"
    assert summary["steps"] < 100_000_000 and summary["wall_seconds"] >= 1
    assert summary["stop_reason"].startswith("stop.time=1s: trained 1s")


def test_a_callback_that_raises_stops_the_run_in_one_line_naming_it(run_cli, project, workdir):
    logdir = project / "runs"
    result = run_cli("run", *CARTPOLE, "plugins=[recorder]", "callbacks=[recorder.Boom]", "steps=400",
                     "eval_every=200", "checkpoint_every=100", *QUICK, f"logdir={logdir}", cwd=workdir,
                     pythonpath=[project])
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    run_dir = only_run_dir(logdir)
    # The evaluation at step 200 comes before that step's checkpoint: the one of step 100 is the last good one.
    assert lines[0] == (f"rlconf: error: callback recorder.Boom failed in on_evaluation: ValueError: no evaluation "
                        f"wanted at step 200; the checkpoint of step 100 is kept ({run_dir / 'checkpoint.pt'})")
    assert (run_dir / "checkpoint.pt").is_file()
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and "recorder.Boom" in status["error"]


@pytest.mark.parametrize(("bad", "words"), [
    (["stop.time=abc"], ["stop.time=abc", "2h30m"]),
    (["stop.time=-5"], ["stop.time=-5", "positive"]),
    (["stop.patience=0"], ["stop.patience=0", "at least 1"]),
    (["stop.reward=5", "eval_every=0"], ["stop.reward=5", "eval_every"]),
    (["stop.reward=abc"], ["stop.reward=abc"]),
    (["callbacks=[recorder.Recorder]"], ["callbacks=", "plugins="]),
    (["plugins=[recorder]", "callbacks=[recorder.Nothing]"], ["callbacks=", "recorder.Nothing"]),
])
def test_bad_stop_and_callbacks_values_are_one_line(run_cli, project, workdir, bad, words):
    logdir = project / "runs"
    line = one_error_line(run_cli("run", *CARTPOLE, "eval_every=100", *bad, *QUICK, f"logdir={logdir}", cwd=workdir,
                                  pythonpath=[project]))
    for word in words:
        assert word in line, (word, line)
    assert not logdir.exists()
