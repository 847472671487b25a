"""A run that diverges stops and says so: non-finite hyperparameters are refused before anything is written; a
loss or gradient norm that becomes nan or inf stops training at once with one line naming it, the step and the
checkpoint that is kept, exit status 1, status.json "failed", error.txt; no checkpoint is ever written from
non-finite weights, and the kept one loads with ``rlconf eval``."""

from __future__ import annotations

import json
import re

import pytest
import torch
from conftest import assert_run_refused, only_run_dir

from rlconf.approximation import Approximation, NonFinite, reinforce_together
from rlconf.experiments.rundir.checkpoint import first_non_finite, first_non_finite_weight, load_checkpoint


@pytest.mark.parametrize("override, word", [
    ("agent.lr=inf", "agent.lr=inf"),
    ("agent.lr=-inf", "agent.lr=-inf"),
    ("agent.lr=nan", "agent.lr=nan"),
    ("agent.target_rate=nan", "agent.target_rate=nan"),
    ("approximation.noisy_sigma=inf", "approximation.noisy_sigma=inf"),
])
def test_non_finite_hyperparameters_are_refused_in_one_line(override, word, run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", override], [word], workdir, tmp_path / "runs")


# Each provokes a real divergence: learning rates so large that the first updates overflow the weights.
DIVERGING = {
    "dqn": ["agent=dqn", "env=classic/cartpole", "agent.lr=1e30", "agent.replay_start_size=200"],
    "ppo": ["agent=ppo", "env=classic/pendulum", "agent.lr=1e8", "hardware.n_envs=2", "agent.n_steps=128"],
    "sac": ["agent=sac", "env=classic/pendulum", "agent.lr_q=1e8", "agent.lr_pi=1e8", "agent.lr_temperature=1e8",
            "agent.replay_start_size=200"],
    # Teams: PPO's lanes, and an actor-critic whose networks each clip their own gradients (jointly=False)
    "mappo": ["agent=mappo", "env=vmas/balance", "agent.lr=1e8", "hardware.n_envs=2", "agent.n_steps=50",
              "agent.epochs=2"],
    "masac": ["agent=masac", "env=vmas/balance", "agent.lr_q=1e8", "agent.lr_pi=1e8", "agent.lr_temperature=1e8",
              "hardware.n_envs=2", "agent.replay_start_size=200", "agent.update_frequency=20",
              "agent.gradient_steps=2", "agent.batch_size=16"],
}


@pytest.mark.parametrize("agent", sorted(DIVERGING))
def test_a_diverging_run_stops_in_one_line_and_keeps_its_last_good_checkpoint(agent, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", *DIVERGING[agent], "steps=20000", "checkpoint_every=100", "eval_every=0",
                     f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    first, *lines = result.stderr.strip().splitlines()
    assert first == f"rlconf: run directory {only_run_dir(logdir)}"  # said first, whatever the output
    assert len(lines) == 1, result.stderr
    match = re.fullmatch(r"rlconf: error: (loss|grad_norm)/\S+ is (nan|inf|-inf) at step ([\d,]+); "
                         r"the checkpoint of step ([\d,]+) is kept \((.+)\)", lines[0])
    assert match, lines[0]
    diverged_at, kept = (int(match.group(i).replace(",", "")) for i in (3, 4))
    assert kept <= diverged_at < 20_000

    run_dir = only_run_dir(logdir)
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and status["error"] == lines[0].removeprefix("rlconf: error: ")
    assert (run_dir / "error.txt").read_text() == lines[0].removeprefix("rlconf: error: ") + "\n"
    assert not (run_dir / "summary.json").exists()
    checkpoint = load_checkpoint(run_dir / "checkpoint.pt")
    assert checkpoint["steps"] == kept
    assert first_non_finite_weight(checkpoint["agent"]) is None, "the kept checkpoint holds only finite weights"

    evaluated = run_cli("eval", str(run_dir), "--episodes", "2", cwd=workdir)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads((run_dir / "eval.json").read_text())["episodes"] == 2


def test_a_fresh_run_has_a_checkpoint_from_its_first_step(run_cli, workdir, tmp_path):
    """Diverging before the first periodic checkpoint still leaves one to go back to: step 0's."""
    logdir = tmp_path / "runs"
    result = run_cli("run", *DIVERGING["dqn"], "steps=20000", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 1
    assert re.search(r"the checkpoint of step 0 is kept", result.stderr), result.stderr
    assert load_checkpoint(only_run_dir(logdir) / "checkpoint.pt")["steps"] == 0


def _approximation(clip_grad: float = 0.0, name: str = "q") -> Approximation:
    model = torch.nn.Linear(3, 1)
    return Approximation(model, torch.optim.SGD(model.parameters(), lr=0.1), clip_grad=clip_grad, name=name)


@pytest.mark.parametrize("clip_grad", [0.0, 1.0])
def test_a_non_finite_loss_raises_before_the_step_and_leaves_the_weights_as_they_were(clip_grad):
    q = _approximation(clip_grad)
    before = [p.clone() for p in q.model.parameters()]
    loss = q(torch.ones(2, 3)).sum() * float("nan")
    with pytest.raises(NonFinite, match=r"^(loss|grad_norm)/q is nan$"):
        q.reinforce(loss)
    assert all(torch.equal(a, b) for a, b in zip(before, q.model.parameters(), strict=True))


def test_a_gradient_that_overflows_is_named_by_its_norm():
    policy, v = _approximation(1.0, "policy"), _approximation(1.0, "v")
    x = torch.full((1, 3), 1e30)
    with pytest.raises(NonFinite, match=r"^grad_norm/policy\+v is inf$"):
        reinforce_together((policy, (policy(x) * 1e30).sum()), (v, v(torch.ones(1, 3)).sum()))


def test_first_non_finite_names_the_tensor():
    state = {"q": {"model": {"0.weight": torch.ones(2), "0.bias": torch.tensor([1.0, float("inf")])}},
             "counts": torch.tensor([1, 2])}
    assert first_non_finite(state) == "q.model.0.bias holds inf"
    assert first_non_finite({"q": {"model": {"w": torch.zeros(3)}}}) is None


def test_only_weights_are_judged_before_a_checkpoint():
    """A bandit's quantiles may be nan until computed; a network's weights never may."""
    state = {"quantiles": torch.tensor([float("nan")]),
             "q": {"model": {"0.weight": torch.tensor([float("nan")])}, "updates": 3}}
    assert first_non_finite_weight(state) == "q.model.0.weight holds nan"
    assert first_non_finite_weight({"quantiles": torch.tensor([float("nan")]), "q": {"model": {}}}) is None
