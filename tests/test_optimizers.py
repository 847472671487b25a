"""How networks are optimised (``approximation.optimizer``, ``optimizer_args``, ``lr_schedule``,
``lr_schedule_args``): each choice from the command line trains a tiny CartPole run whose checkpoint holds the
chosen optimiser with its arguments, at the rate its schedule gives; the Nature DQN's RMSProp takes DeepMind's
steps; the default is the fused Adam every run used before; bad choices are one line, exit 2, nothing written."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, one_error_line, only_run_dir, run_main

from rlconf.approximation import NatureRMSprop, make_optimizer
from rlconf.optim import Clock, CosineScheduler

CARTPOLE = ["env=classic/cartpole", "steps=300", *FAST_RUN]
DQN = ["agent=dqn", *CARTPOLE, "agent.replay_start_size=50", "agent.lr=0.002"]


def _checkpoint_groups(run_dir: Path, network: str) -> tuple[dict, dict]:
    """The optimiser's param group and the network's state of ``network`` in the run's checkpoint."""
    agent = torch.load(run_dir / "checkpoint.pt", weights_only=False)["agent"]
    state = agent[network]
    return state["optimizer"]["param_groups"][0], state


def _lr_cosine(group: dict, state: dict) -> None:
    assert group["decoupled_weight_decay"] and group["weight_decay"] == 0.05  # AdamW, with its argument
    assert 1e-4 < group["lr"] < 0.002 * 0.5  # well down the half cosine, not at its end yet


def _rmsprop_constant(group: dict, state: dict) -> None:
    assert group["centered"] and group["momentum"] == 0.9 and group["alpha"] == 0.95
    assert group["lr"] == 0.002  # constant: the classic preset's lr_final (0) left aside


def _nature_linear(group: dict, state: dict) -> None:
    assert (group["decay"], group["min_squared_gradient"]) == (0.95, 0.01)
    assert 0.0 < group["lr"] < 0.002  # linear towards the preset's lr_final 0


def _sgd_step_lr(group: dict, state: dict) -> None:
    assert group["nesterov"] and group["momentum"] == 0.9
    assert state["updates"] > 10
    assert group["lr"] == pytest.approx(0.002 * 0.5 ** (state["updates"] // 10))  # StepLR, per update
    assert state["scheduler"]["last_epoch"] == state["updates"]


CHOICES = {
    "adamw cosine": (["approximation.optimizer=adamw", "approximation.optimizer_args={weight_decay: 0.05}",
                      "approximation.lr_schedule=cosine", "agent.lr_final=1e-4"], _lr_cosine),
    "rmsprop constant": (["approximation.optimizer=rmsprop",
                          "approximation.optimizer_args={alpha: 0.95, momentum: 0.9, centered: true}",
                          "approximation.lr_schedule=constant"], _rmsprop_constant),
    "rmsprop_nature linear": (["approximation.optimizer=rmsprop_nature"], _nature_linear),
    "sgd StepLR": (["approximation.optimizer=sgd", "approximation.optimizer_args={momentum: 0.9, nesterov: true}",
                    "approximation.lr_schedule=StepLR", "approximation.lr_schedule_args={step_size: 10, gamma: 0.5}"],
                   _sgd_step_lr),
}


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_each_optimizer_and_schedule_trains_from_the_command_line(name, tmp_path, capsys):
    overrides, check = CHOICES[name]
    result = run_main(["run", *DQN, *overrides, f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path)
    assert (run_dir / "summary.json").is_file()
    check(*_checkpoint_groups(run_dir, "q"))


def test_an_actor_critic_takes_the_choice_for_every_network(tmp_path, capsys):
    """PPO's policy and value networks both get the chosen optimiser and torch scheduler."""
    result = run_main(["run", "agent=ppo", *CARTPOLE, "approximation.optimizer=adamw",
                       "approximation.lr_schedule=ExponentialLR", "approximation.lr_schedule_args={gamma: 0.9}",
                       f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    for network in ("policy", "v"):
        group, state = _checkpoint_groups(only_run_dir(tmp_path), network)
        assert group["decoupled_weight_decay"] and state["updates"] > 0
        assert group["lr"] == pytest.approx(group["initial_lr"] * 0.9 ** state["updates"])


def test_the_default_is_the_fused_adam_runs_always_had():
    parameters = [torch.nn.Parameter(torch.ones(3))]
    optimizer, scheduler = make_optimizer(parameters, 1e-3, {"optimizer": "adam"}, adam_eps=1e-5)
    assert type(optimizer) is torch.optim.Adam and scheduler is None
    assert optimizer.defaults["fused"] and optimizer.defaults["eps"] == 1e-5


def test_nature_rmsprop_takes_deepminds_steps():
    """g and g2 are averages of the gradient and its square (decay 0.95); the step is lr * grad /
    sqrt(g2 - g^2 + 0.01): the min squared gradient inside the root, not after it as torch's eps."""
    weight = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = NatureRMSprop([weight], lr=0.00025)
    g = g2 = torch.zeros(2)
    expected = weight.detach().clone()
    for gradient in (torch.tensor([0.5, -0.01]), torch.tensor([0.2, 0.03])):
        weight.grad = gradient.clone()
        optimizer.step()
        g, g2 = 0.95 * g + 0.05 * gradient, 0.95 * g2 + 0.05 * gradient**2
        expected -= 0.00025 * gradient / torch.sqrt(g2 - g**2 + 0.01)
    assert torch.allclose(weight.detach(), expected, rtol=1e-6, atol=0)
    torch_rmsprop = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    other = torch.optim.RMSprop([torch_rmsprop], lr=0.00025, alpha=0.95, eps=0.01, centered=True)
    torch_rmsprop.grad = torch.tensor([0.5, -0.01])
    other.step()
    assert not torch.allclose(torch_rmsprop.detach(), expected)  # not the same optimiser


def test_cosine_schedule_is_halfway_at_half_the_run():
    clock = Clock()
    cosine = CosineScheduler(1.0, 0.2, 0, 100, clock, "lr")
    assert cosine.value == 1.0
    clock.tick(50)
    assert cosine.value == pytest.approx(0.6)
    clock.tick(25)
    assert cosine.value == pytest.approx(0.2 + 0.4 * (1 + math.cos(0.75 * math.pi)))
    clock.tick(100)
    assert cosine.value == 0.2


REFUSALS = [
    (["agent=dqn", "approximation.optimizer=adagrad"], ("approximation.optimizer=adagrad", "adam, adamw, rmsprop")),
    (["agent=dqn", "approximation.optimizer_args={momentum: 0.9}"],
     ("approximation.optimizer_args.momentum", "not an argument of adam", "betas, eps, weight_decay")),
    (["agent=dqn", "approximation.optimizer=sgd", "approximation.optimizer_args={momentum: -1}"],
     ("approximation.optimizer_args.momentum=-1", "at least 0")),
    (["agent=dqn", "approximation.optimizer_args={betas: [0.9]}"], ("betas", "two numbers in [0, 1)")),
    (["agent=dqn", "approximation.optimizer_args={lr: 0.1}"], ("optimizer_args.lr", "agent.lr")),
    (["agent=dqn", "approximation.optimizer=sgd", "approximation.optimizer_args={nesterov: true}"],
     ("nesterov", "momentum > 0")),
    (["agent=dqn", "approximation.lr_schedule=exponential"], ("approximation.lr_schedule=exponential", "cosine",
                                                               "StepLR")),
    (["agent=dqn", "approximation.lr_schedule=ReduceLROnPlateau"], ("ReduceLROnPlateau", "a metric")),
    (["agent=dqn", "approximation.lr_schedule=StepLR", "approximation.lr_schedule_args={size: 3}"],
     ("lr_schedule_args.size", "not an argument of StepLR", "step_size")),
    (["agent=dqn", "approximation.lr_schedule=StepLR"], ("StepLR", "step_size")),  # torch: a missing argument
    (["agent=dqn", "approximation.lr_schedule=cosine", "approximation.lr_schedule_args={T_max: 3}"],
     ("lr_schedule_args", "agent.lr_final")),
    (["agent=dqn", "approximation.optimizer=rmsprop_nature", "approximation.lr_schedule=CyclicLR",
      "approximation.lr_schedule_args={base_lr: 0.001, max_lr: 0.01}"],
     ("CyclicLR", "optimizer=rmsprop_nature", "momentum")),  # refused where the networks are built
    (["agent=sac", "env=classic/pendulum", "approximation.lr_schedule=cosine"],
     ("lr_schedule=cosine", "agent=sac", "StepLR")),
    (["agent=neural_greedy", "env=bandit/linear", "approximation.lr_schedule=StepLR",
      "approximation.lr_schedule_args={step_size: 3}"], ("agent.lr_decay", "linear or constant")),
]


@pytest.mark.parametrize(("overrides", "words"), REFUSALS, ids=[" ".join(r[0][1:]) for r in REFUSALS])
def test_a_bad_choice_is_one_line_and_writes_nothing(overrides, words, tmp_path, capsys):
    env = [] if any(o.startswith("env=") for o in overrides) else ["env=classic/cartpole"]
    # A budget as short as a test's: a refusal that failed would train, not for 100,000 steps.
    line = one_error_line(run_main(["run", *overrides, *env, *FAST_RUN, "steps=300", f"logdir={tmp_path}/runs"],
                                   capsys))
    for word in words:
        assert word in line, line
    assert not (tmp_path / "runs").exists()


def test_rlconf_list_shows_the_optimizers_and_schedules(capsys):
    result = run_main(["list", "approximation"], capsys)
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    assert "approximation.optimizer=" in shown and "approximation.lr_schedule=" in shown
    for name in ("adam", "adamw", "rmsprop", "rmsprop_nature", "sgd", "linear", "cosine", "constant", "StepLR"):
        assert name in shown, name


def test_a_warm_start_takes_optimiser_state_only_from_the_same_optimiser(tmp_path, capsys):
    source = tmp_path / "source"
    assert run_main(["run", *DQN, f"logdir={source}"], capsys).returncode == 0
    run_dir = only_run_dir(source)
    line = one_error_line(run_main(["run", *DQN, f"init.run={run_dir}", "init.optimizer=true",
                                    "approximation.optimizer=rmsprop", f"logdir={tmp_path}/runs"], capsys))
    assert "another optimiser" in line and "init.optimizer" in line, line
    assert not (tmp_path / "runs").exists()
    result = run_main(["run", *DQN, f"init.run={run_dir}", "init.optimizer=true", f"logdir={tmp_path}/same"], capsys)
    assert result.returncode == 0, result.stderr


def test_one_cycle_holds_its_last_rate_past_its_steps():
    """OneCycleLR raises one step past total_steps; a run that updates more often keeps its last rate."""
    parameters = [torch.nn.Parameter(torch.ones(2))]
    choice = {"optimizer": "sgd", "lr_schedule": "OneCycleLR", "lr_schedule_args": {"max_lr": 0.1, "total_steps": 5}}
    optimizer, scheduler = make_optimizer(parameters, 0.01, choice)
    rates = []
    for _ in range(12):
        parameters[0].grad = torch.ones(2)
        optimizer.step()
        scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
    assert rates[3] < 0.1 / 1000 and rates[-1] == rates[3]  # annealed to its floor by its 5th rate, then held
