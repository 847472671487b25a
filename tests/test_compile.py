"""hardware.compile: what auto decides, compiled networks learning what eager ones learn, and a compilation
that fails falling back to eager with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import build, drive

from rlconf.approximation import compiled
from rlconf.memory import Transitions


@pytest.fixture(autouse=True)
def eager_afterwards():
    """Compilation is a setting of the process: leave it eager for the tests that follow in this worker."""
    yield
    compiled.configure("false", "cpu", 0)


def test_auto_compiles_long_cuda_runs_and_leaves_cpu_runs_eager():
    long, short = compiled.AUTO_MIN_STEPS, compiled.AUTO_MIN_STEPS - 1
    assert compiled.decide("auto", "cuda", long).mode == "reduce-overhead"  # CUDA graphs
    assert compiled.decide("auto", "cuda:1", short).mode is None
    assert "50,000" in compiled.decide("auto", "cuda", short).reason
    assert compiled.decide("auto", "cpu", 10**9).mode is None
    assert compiled.decide("true", "cpu", 1).mode == "default"
    assert compiled.decide("true", "cuda", 1).mode == "reduce-overhead"
    assert compiled.decide("false", "cuda", 10**9).mode is None


def weights(agent) -> dict[str, torch.Tensor]:
    """Every tensor of the agent's networks and optimisers, by its place in the agent's state dict."""
    found = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            found[prefix] = value.detach().clone()
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}", inner)

    state = agent.state_dict()
    for name, part in state.items():
        if isinstance(part, dict) and "model" in part:
            walk(name, part)
    return found


def built(compile: str, *overrides: str):
    settings, env, agent = build(*overrides, f"hardware.compile={compile}")
    assert compiled.active().mode == ("default" if compile == "true" else None)
    return env, agent


def fixed_batch(observations: int, actions: int | None, continuous: int = 0) -> Transitions:
    """64 transitions drawn from a seeded generator: discrete ``actions`` or ``continuous`` ones in [-1, 1]."""
    g = torch.Generator().manual_seed(0)
    action = (torch.rand(64, continuous, generator=g) * 2 - 1 if continuous else
              torch.randint(0, actions, (64,), generator=g))
    return Transitions(torch.randn(64, observations, generator=g), action, torch.randn(64, generator=g),
                       torch.randn(64, observations, generator=g), (torch.arange(64) % 7 != 0).float())


def assert_same_learning(ours, theirs) -> None:
    """The two agents' weights and optimiser moments agree to float tolerance, under the same keys (so a
    compiled run's checkpoint loads into an eager one), and they have learned something."""
    a, b = weights(ours), weights(theirs)
    assert a.keys() == b.keys() and any("optimizer" in key for key in a), "the optimisers have stepped"
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=1e-4, msg=key)
    theirs.load_state_dict(ours.state_dict())


@pytest.mark.slow
@pytest.mark.parametrize(("overrides", "batch"), [
    (("agent=dqn", "env=classic/cartpole", "agent.loss=huber", "agent.clip_grad=10"), fixed_batch(4, 2)),
    (("agent=sac", "env=classic/pendulum", "agent.batch_size=64"), fixed_batch(3, None, continuous=1)),
], ids=["dqn", "sac"])
def test_compiled_updates_on_a_fixed_batch_equal_eager_ones(overrides, batch):
    """Twenty optimiser steps on one fixed batch (forward, loss, backward through torch.compile's graphs,
    clipping, Adam, target updates): the compiled agent's weights and moments equal the eager agent's."""
    agents = []
    for compile in ("true", "false"):
        env, agent = built(compile, *overrides)
        for _ in range(20):
            agent.agent._update(batch)  # inside its body
        env.close()
        agents.append(agent)
    assert compiled.seconds() is None  # eager now; the compiled agent's graphs stay compiled
    assert_same_learning(*agents)


@pytest.mark.slow
def test_a_compiled_ppo_agent_learns_what_an_eager_one_learns():
    """PPO samples its actions, so the same seed gives both agents the same rollouts (to a flip where a
    probability differs in its last bit); two rollouts of 8 x 32 steps, four epochs of minibatches each."""
    agents = []
    for compile in ("true", "false"):
        env, agent = built(compile, "agent=ppo", "env=classic/cartpole", "agent.n_steps=32")
        drive(env, agent, 2 * 8 * 32 + 8)
        if compile == "true":
            assert compiled.seconds() > 0
        env.close()
        agents.append(agent)
    assert_same_learning(*agents)


def test_a_compilation_that_fails_runs_eagerly_and_says_so_once(workdir, tmp_path):
    """No working C++ compiler (a real failure of torch's inductor, in a fresh compiler cache): the run says so
    in one line, trains eagerly and finishes; its summary has no compilation time."""
    environment = {**os.environ, "CXX": str(tmp_path / "no-such-compiler"),
                   "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    logdir = tmp_path / "runs"
    process = subprocess.run(
        [sys.executable, "-m", "rlconf", "run", "agent=dqn", "env=classic/cartpole", "steps=300",
         "agent.replay_start_size=50", "test_episodes=2", "hardware.compile=true", f"logdir={logdir}", "quiet=true"],
        capture_output=True, text=True, env=environment, cwd=workdir)
    assert process.returncode == 0, process.stderr
    failures = [line for line in process.stderr.splitlines() if "torch.compile failed" in line]
    assert len(failures) == 1 and "C++ compiler" in failures[0] and "eagerly" in failures[0], process.stderr
    assert "Traceback" not in process.stderr
    (run_dir,) = logdir.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["state"] == "done" and summary["steps"] >= 300 and "compile_seconds" not in summary
    assert json.loads((run_dir / "provenance.json").read_text())["compile"].startswith("hardware.compile=true")
