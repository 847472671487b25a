"""MultiDiscrete and MultiBinary actions for the policy gradients, and action masks for every discrete agent
(issue 35, item 2): the distributions against torch's own, the rollout storage of masks, real runs on the
registered test environments of ``action_envs`` (a plugin module, as a user's own environments are; each masked
one raises on an illegal action, so a run that ends has taken none), the exported graph's mask input, and the
one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import action_envs
import gymnasium as gym
import numpy as np
import pytest
import torch
from action_envs import LENGTH, MASKED_OPTIMUM
from conftest import FAST_RUN, one_error_line, run_main

import rlconf
from rlconf.core import StateArray
from rlconf.experiments.playback.export import export_run, run_exported
from rlconf.memory import GeneralizedAdvantageBuffer
from rlconf.policies import Bernoullis, Categorical, MultiDiscreteLayout
from rlconf.policies.stochastic import action_layout, policy_network, policy_outputs, stochastic_policy

TESTS = Path(__file__).resolve().parent
PLUGIN = "plugins=[action_envs]"


def train(logdir: Path, *overrides: str) -> tuple[Path, dict]:
    """A real run (in this process) on a test environment of ``action_envs``."""
    return rlconf.train(rlconf.compose("env=gym", PLUGIN, *FAST_RUN, f"logdir={logdir}", *overrides))


# -- the distributions -----------------------------------------------------------------------------------------
def test_independent_categoricals_score_as_torch_does_dimension_by_dimension():
    nvec = (3, 2, 4)
    logits = torch.randn(5, sum(nvec))
    layout = MultiDiscreteLayout(nvec)
    distribution = layout(logits)
    actions = distribution.sample(torch.Generator().manual_seed(0))
    assert actions.shape == (5, 3) and (actions < torch.tensor(nvec)).all()
    parts = [torch.distributions.Categorical(logits=part) for part in logits.split(nvec, -1)]
    expected_log_prob = sum(d.log_prob(actions[:, i]) for i, d in enumerate(parts))
    torch.testing.assert_close(distribution.log_prob(actions), expected_log_prob)
    torch.testing.assert_close(distribution.entropy(), sum(d.entropy() for d in parts))
    assert torch.equal(layout.greedy(logits), torch.stack([part.argmax(-1) for part in logits.split(nvec, -1)], -1))


def test_bernoullis_score_as_torch_does():
    logits = torch.randn(6, 4)
    distribution = Bernoullis(logits)
    actions = distribution.sample(torch.Generator().manual_seed(1))
    reference = torch.distributions.Bernoulli(logits=logits)
    torch.testing.assert_close(distribution.log_prob(actions), reference.log_prob(actions.float()).sum(-1))
    torch.testing.assert_close(distribution.entropy(), reference.entropy().sum(-1))
    assert torch.equal(Bernoullis.greedy(logits), (logits > 0).long())


def test_a_masked_categorical_is_the_distribution_over_the_legal_actions():
    logits = torch.randn(3, 5, requires_grad=True)
    legal = torch.tensor([[True, False, True, False, True]] * 3)
    masked = Categorical(logits, legal)
    over_legal = torch.distributions.Categorical(logits=logits[:, legal[0]])
    torch.testing.assert_close(masked.entropy(), over_legal.entropy())  # illegal actions add nothing
    actions = torch.tensor([0, 2, 4])
    torch.testing.assert_close(masked.log_prob(actions), over_legal.log_prob(torch.tensor([0, 1, 2])))
    drawn = Categorical(logits.detach().expand(2000, 3, 5), legal).sample(torch.Generator().manual_seed(2))
    assert legal[0][drawn].all()
    masked.log_prob(actions).sum().backward()
    assert (logits.grad[:, ~legal[0]] == 0).all()  # no gradient reaches an illegal action's logit
    assert legal[0][Categorical.greedy(logits.detach() + torch.tensor([0, 9.0, 0, 9.0, 0]), legal)].all()


def test_multi_discrete_and_multi_binary_masks_split_per_dimension():
    layout = MultiDiscreteLayout((3, 2))
    legal = torch.tensor([[False, False, True, True, False]])  # dimension 0: only 2; dimension 1: only 0
    drawn = layout(torch.zeros(400, 5), legal.expand(400, 5)).sample(torch.Generator().manual_seed(3))
    assert (drawn == torch.tensor([2, 0])).all()
    assert torch.equal(layout.greedy(torch.tensor([[9.0, 0, 0, 0, 9]]), legal), torch.tensor([[2, 0]]))
    # MultiBinary: for each dimension whether it may be 0, then 1.
    bits = torch.tensor([[True, False, False, True, True, True]])
    forced = Bernoullis(torch.tensor([[5.0, -5.0, 0.0]]), bits)
    assert torch.equal(forced.mode[0, :2], torch.tensor([0, 1]))
    torch.testing.assert_close(forced.entropy(), Bernoullis(torch.tensor([[0.0]])).entropy())  # the free bit's


def test_the_policy_factory_builds_multi_dimensional_policies():
    nvec = gym.spaces.MultiDiscrete([3, 4], start=[1, -1])
    assert policy_outputs(nvec) == 7 and action_layout(nvec) == ((2,), torch.int64)
    policy = stochastic_policy(nvec, policy_network(nvec, torch.nn.Linear(2, 7)))
    actions = policy.no_grad(torch.zeros(4, 2)).sample(torch.Generator().manual_seed(4))
    assert all(nvec.contains(a) for a in policy.env_actions(actions).numpy())  # shifted by the space's start
    bits = gym.spaces.MultiBinary(3)
    assert policy_outputs(bits) == 3 and action_layout(bits) == ((3,), torch.int64)


def test_the_rollout_buffer_keeps_each_states_mask_through_a_checkpoint():
    def states(t: int, masked: bool = True) -> StateArray:
        values = {"observation": torch.full((2, 1), float(t)), "reward": torch.zeros(2), "mask": torch.ones(2),
                  "done": torch.zeros(2, dtype=torch.bool)}
        if masked:
            values["action_mask"] = torch.tensor([[True, t % 2 == 0, True], [False, True, t % 3 == 0]])
        return StateArray(values, (2,))

    buffer = GeneralizedAdvantageBuffer(3, 2, (1,), torch.float32)
    for t in range(3):
        buffer.store_state(states(t))
        buffer.store_action(torch.tensor([0, 1]), torch.zeros(2))
    saved = buffer.state_dict()
    restored = GeneralizedAdvantageBuffer(3, 2, (1,), torch.float32)
    restored.load_state_dict(saved)
    assert torch.equal(restored.action_mask[:3], buffer.action_mask[:3])
    buffer.store_state(states(3))
    rollout = buffer.rollout(torch.zeros(4, 2))
    assert torch.equal(rollout.action_mask, torch.stack([states(t)["action_mask"] for t in range(3)]).flatten(0, 1))
    assert torch.equal(rollout.rows(torch.tensor([1])).action_mask, rollout.action_mask[1:2])
    plain = GeneralizedAdvantageBuffer(3, 2, (1,), torch.float32)  # a plain environment's: nothing more stored
    plain.store_state(states(0, masked=False))
    assert plain.action_mask is None and "action_mask" not in plain.state_dict()
    assert plain.rollout(torch.zeros(4, 2)).action_mask is None


# -- real runs ------------------------------------------------------------------------------------------------
MULTI = {  # agent, its overrides: a short run acting and learning in each action space
    "vpg": ["agent=vpg"], "vac": ["agent=vac"], "ppo": ["agent=ppo"], "a2c": ["agent=a2c"],
    "ppo-lstm": ["agent=ppo", "approximation.recurrent=lstm"], "a2c-gru": ["agent=a2c", "approximation.recurrent=gru"],
}


@pytest.mark.parametrize("env_id", ["MatchTargets-v0", "MatchBits-v0", "MatchTargetsMasked-v0"])
@pytest.mark.parametrize("agent", list(MULTI))
def test_every_policy_gradient_acts_and_learns_in_multi_dimensional_actions(tmp_path, agent, env_id):
    _, summary = train(tmp_path, f"env.id={env_id}", *MULTI[agent], "steps=400", "hardware.n_envs=4",
                       *(["agent.n_steps=16"] if agent.split("-")[0] in ("ppo", "a2c") else []))
    assert summary["steps"] >= 400 and 0 <= summary["test_return_mean"] <= LENGTH


LEARNING = {"ppo": ["agent=ppo", "steps=6000", "agent.lr=0.003"], "a2c": ["agent=a2c", "steps=20000"]}


@pytest.mark.slow
@pytest.mark.parametrize("agent", list(LEARNING))
@pytest.mark.parametrize("env_id", ["MatchTargets-v0", "MatchBits-v0"])
def test_ppo_and_a2c_learn_the_multi_dimensional_tasks(tmp_path, agent, env_id):
    """The optimum is LENGTH (every dimension matched every step); a random policy gets LENGTH / 3 and LENGTH / 2."""
    _, summary = train(tmp_path, f"env.id={env_id}", *LEARNING[agent], "test_episodes=20")
    assert summary["test_return_mean"] >= 0.9 * LENGTH, summary["test_return_mean"]


SMALL_Q = ["approximation.hidden=[64]", "agent.epsilon_decay_steps=1000", "agent.discount_factor=0.9"]
MASKED = {  # each agent: a run that learns the masked task's optimum
    "dqn": ["agent=dqn", "steps=2000", *SMALL_Q],
    "rainbow": ["agent=rainbow", "steps=2000", "agent.v_min=0", "agent.v_max=10", "agent.replay_start_size=200",
                *SMALL_Q],
    "ppo": ["agent=ppo", "steps=2000"],
    "a2c": ["agent=a2c", "steps=2000"],
}
SHORT = {  # each agent: a run that acts (exploring, learning, testing) without learning much
    "dqn": ["agent=dqn", "steps=300"], "rainbow": ["agent=rainbow", "steps=300", "agent.replay_start_size=100"],
    "ppo": ["agent=ppo", "steps=300"], "a2c": ["agent=a2c", "steps=300"], "vpg": ["agent=vpg", "steps=300"],
    "vac": ["agent=vac", "steps=300"], "r2d1": ["agent=r2d1", "steps=300"],
    "ppo-gru": ["agent=ppo", "steps=300", "approximation.recurrent=gru", "agent.n_steps=16"],
    "a2c-lstm": ["agent=a2c", "steps=300", "approximation.recurrent=lstm"],
}


@pytest.mark.parametrize("env_id", ["MaskedChoice-v0", "MaskedChoiceDict-v0"])
@pytest.mark.parametrize("agent", list(SHORT))
def test_no_agent_ever_takes_a_masked_action(tmp_path, capsys, agent, env_id):
    """Training (exploration included) and the final tests in the run, then ``rlconf eval`` from its checkpoint:
    the environment raises on an illegal action, so every run that ends has taken none."""
    run_dir, summary = train(tmp_path, f"env.id={env_id}", *SHORT[agent], "hardware.n_envs=4")
    assert summary["test_episodes"] == 2 and summary["test_return_mean"] <= MASKED_OPTIMUM + 1e-6
    result = run_main(["eval", str(run_dir), "--episodes", "3", "--plugins", "action_envs"], capsys)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("agent", ["ppo", "vpg", "dqn"])
def test_a_masked_run_resumes_with_its_stored_masks(tmp_path, agent):
    """The checkpoint of a run stopped mid-rollout (mid-episode for VPG, with its replay for DQN) holds the masks
    of the stored steps; the resumed run's updates recompute the masked distributions (targets) from them."""
    replay = ["checkpoint.replay=true"] if agent == "dqn" else []  # DQN's masks: in its replay
    run_dir, _ = train(tmp_path, "env.id=MaskedChoiceDict-v0", f"agent={agent}", "steps=300", *replay)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert "action_mask" in json.dumps(list(_keys(saved)))
    _, summary = rlconf.train(rlconf.compose(f"resume={run_dir}", "steps=1200", PLUGIN))
    assert summary["steps"] >= 1200 and summary["resumes"] == 1


def _keys(tree, prefix: str = ""):
    """The dotted keys of a checkpoint's nested dicts."""
    for key, value in tree.items() if isinstance(tree, dict) else ():
        yield f"{prefix}{key}"
        yield from _keys(value, f"{prefix}{key}.")


@pytest.mark.slow  # ~20 s: the processes' start
@pytest.mark.parametrize("overrides", [
    ["agent=dqn", "hardware.runner=async", *SMALL_Q],  # acting in its own process, the masks in shared replay
    ["agent=ppo", "hardware.sampler=alternating", "hardware.cpus_per_run=2"],  # masks of each group's copies
], ids=["dqn-async", "ppo-alternating"])
def test_masks_reach_agents_that_act_beside_their_environments(tmp_path, overrides):
    _, summary = train(tmp_path, "env.id=MaskedChoice-v0", "steps=2000", "test_episodes=4", *overrides)
    assert summary["test_return_mean"] == pytest.approx(MASKED_OPTIMUM), summary["test_return_mean"]


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["MaskedChoice-v0", "MaskedChoiceDict-v0"])
@pytest.mark.parametrize("agent", list(MASKED))
def test_masked_agents_learn_the_best_legal_actions(tmp_path, agent, env_id):
    """The best-looking action is illegal half of the time: the optimum takes the best legal one every step."""
    _, summary = train(tmp_path, f"env.id={env_id}", *MASKED[agent], "test_episodes=10")
    assert summary["test_return_mean"] == pytest.approx(MASKED_OPTIMUM), summary["test_return_mean"]


@pytest.mark.parametrize("agent", ["ppo", "dqn"])
def test_the_exported_policy_takes_the_mask_and_never_chooses_a_masked_action(tmp_path, agent):
    run_dir, _ = train(tmp_path, "env.id=MaskedChoice-v0", *SHORT[agent])
    description = export_run(run_dir, "torchscript", plugins=["action_envs"])
    assert description["action_mask"] == {"name": "action_mask", "shape": ["batch", 4], "dtype": "bool",
                                          "legal": True}
    observations = np.eye(4, dtype=np.float32).repeat(4, 0)
    only = np.eye(4, dtype=bool)[np.tile(np.arange(4), 4)]  # each observation with each single legal action
    actions = run_exported(description["file"], "torchscript", {"observation": observations, "action_mask": only})
    assert np.array_equal(actions, np.tile(np.arange(4), 4))
    assert json.loads(Path(description["file"] + ".json").read_text())["action_mask"]["name"] == "action_mask"
    policy = rlconf.load(run_dir, plugins=["action_envs"])  # the API, one observation at a time
    assert [policy.act(observations[i], action_mask=only[i]) for i in range(16)] == list(np.tile(np.arange(4), 4))


# -- refusals ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("fault", "words"), [
    ("shape", ["action_mask: shape (5,)", "allowed: (4,)"]),
    ("dtype", ["action_mask: dtype float32", "allowed: bool"]),
    ("empty", ["action_mask: no action is legal", "at least one True"]),
])
def test_a_bad_mask_is_one_line_and_writes_nothing(run_cli, workdir, tmp_path, fault, words):
    logdir = tmp_path / "runs"
    line = one_error_line(run_cli("run", "agent=ppo", "env=gym", "env.id=BadMask-v0", f"+env.kwargs.fault={fault}",
                                  PLUGIN, "steps=200", f"logdir={logdir}", cwd=workdir, pythonpath=[TESTS]))
    assert all(word in line for word in words), line
    assert not logdir.exists() and list(workdir.iterdir()) == []


def test_an_agent_that_cannot_act_in_multi_discrete_actions_is_refused(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    line = one_error_line(run_cli("run", "agent=dqn", "env=gym", "env.id=MatchTargets-v0", PLUGIN,
                                  f"logdir={logdir}", cwd=workdir, pythonpath=[TESTS]))
    assert line == ("rlconf: error: agent=dqn: needs discrete actions, not MultiDiscrete([3 3 3]); allowed: envs "
                    "with Discrete actions, e.g. env=classic/cartpole or env=atari/<game> (rlconf list env)")
    assert not logdir.exists()


def test_the_masked_tasks_optimum_is_the_best_legal_action_every_step():
    assert pytest.approx(2 * (1.0 + 0.5 + 1.0 + 0.2)) == action_envs.MASKED_OPTIMUM


@pytest.mark.parametrize("env_id", ["MatchTargetsMasked-v0", "MatchBits-v0"])
def test_the_random_baseline_draws_every_dimension_and_only_legal_values(tmp_path, env_id):
    """agent=random on MultiDiscrete (masked: the env raises on an illegal value) and MultiBinary actions: a run,
    its tests and their returns, which for a uniform draw are about a third and a half of the optimum."""
    _, summary = train(tmp_path, f"env.id={env_id}", "agent=random", "steps=800", "test_episodes=20")
    chance = {"MatchTargetsMasked-v0": LENGTH / 3, "MatchBits-v0": LENGTH / 2}[env_id]
    assert 0.6 * chance <= summary["test_return_mean"] <= 1.6 * chance, summary["test_return_mean"]
