"""Replay (time-major rows, never across an episode's end) and GAE rollouts, checked against references."""

from __future__ import annotations

import pytest
import torch
from conftest import states

from rlconf.memory import GeneralizedAdvantageBuffer, ReplayBuffer


# -- replay -----------------------------------------------------------------------------------------------
class Recorded:
    """A random stream of rows for a ReplayBuffer; observation = 100 * row + env identifies a cell."""

    def __init__(self, rows: int, n_envs: int, seed: int = 0, p_done: float = 0.25):
        g = torch.Generator().manual_seed(seed)
        self.rows, self.n_envs = rows, n_envs
        self.reward = torch.randn(rows, n_envs, generator=g)
        self.done = torch.rand(rows, n_envs, generator=g) < p_done
        # terminal (mask 0) or truncated (mask 1) when done; always 1 otherwise
        self.mask = torch.where(self.done & (torch.rand(rows, n_envs, generator=g) < 0.5), 0.0, 1.0)
        self.action = torch.randint(5, (rows, n_envs), generator=g)

    def observation(self, row: int) -> torch.Tensor:
        return (100.0 * row + torch.arange(self.n_envs, dtype=torch.float32)).unsqueeze(1)

    def fill(self, buffer: ReplayBuffer) -> None:
        for t in range(self.rows):
            buffer.store(states(self.observation(t), self.reward[t], self.done[t], self.mask[t]), self.action[t])


def cells(batch) -> tuple[torch.Tensor, torch.Tensor]:
    obs = batch.observation.squeeze(-1).round().long()
    return obs // 100, obs % 100


def test_replay_sample_follows_rows_and_never_leaves_a_done_state():
    data = Recorded(rows=30, n_envs=3)
    buffer = ReplayBuffer(1000, 3, (1,), torch.float32, generator=torch.Generator().manual_seed(1))
    data.fill(buffer)
    assert len(buffer) == 29 * 3
    batch = buffer.sample(4000)
    rows, envs = cells(batch)
    assert not data.done[rows, envs].any(), "sampled a transition out of a done state (a reset step)"
    assert (rows < 29).all(), "the newest row has no successor yet"
    assert torch.equal(batch.next_observation.squeeze(-1), 100.0 * (rows + 1) + envs)
    assert torch.equal(batch.reward, data.reward[rows + 1, envs])
    assert torch.equal(batch.next_mask, data.mask[rows + 1, envs])
    assert torch.equal(batch.action, data.action[rows, envs])
    assert batch.weights is None
    # the sample includes transitions into terminal and into truncated states, each with its own mask
    into_done = data.done[rows + 1, envs]
    assert (into_done & (batch.next_mask == 0)).any() and (into_done & (batch.next_mask == 1)).any()


def test_replay_wraparound_keeps_only_the_latest_rows():
    data = Recorded(rows=10, n_envs=2, p_done=0.0)
    buffer = ReplayBuffer(8, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(2))  # 4 rows
    data.fill(buffer)
    assert len(buffer) == 3 * 2
    batch = buffer.sample(2000)
    rows, envs = cells(batch)
    assert set(rows.tolist()) == {6, 7, 8}, "only rows 6..9 are kept; row 9 has no successor"
    assert set(zip(rows.tolist(), envs.tolist(), strict=True)) == {(r, e) for r in (6, 7, 8) for e in (0, 1)}
    assert torch.equal(batch.next_observation.squeeze(-1), 100.0 * (rows + 1) + envs)
    assert torch.equal(batch.reward, data.reward[rows + 1, envs])


def test_replay_sampling_is_roughly_uniform_over_valid_transitions():
    data = Recorded(rows=20, n_envs=3, seed=3)
    buffer = ReplayBuffer(1000, 3, (1,), torch.float32, generator=torch.Generator().manual_seed(4))
    data.fill(buffer)
    valid = [(r, e) for r in range(19) for e in range(3) if not data.done[r, e]]
    per_cell = 300
    rows, envs = cells(buffer.sample(per_cell * len(valid)))
    counts = torch.zeros(20, 3)
    counts.index_put_((rows, envs), torch.ones(len(rows)), accumulate=True)
    observed = torch.tensor([counts[r, e].item() for r, e in valid])
    assert observed.sum() == per_cell * len(valid), "some samples fell on invalid cells"
    chi2 = (((observed - per_cell) ** 2) / per_cell).sum().item()
    dof = len(valid) - 1
    assert chi2 < dof + 6 * (2 * dof) ** 0.5, f"chi-square {chi2:.1f} with {dof} degrees of freedom"


def test_replay_refuses_to_sample_before_a_complete_transition():
    buffer = ReplayBuffer(100, 2, (1,), torch.float32)
    with pytest.raises(RuntimeError):
        buffer.sample(1)
    buffer.store(states([[0.0], [1.0]], [0, 0], [False, False], [1, 1]), torch.tensor([0, 1]))
    assert len(buffer) == 0
    buffer.store(states([[100.0], [101.0]], [1, 1], [False, False], [1, 1]), torch.tensor([0, 1]))
    assert len(buffer) == 2
    assert buffer.sample(4).observation.shape == (4, 1)


def test_replay_state_dict_round_trip_reproduces_samples():
    data = Recorded(rows=12, n_envs=2, seed=5)
    a = ReplayBuffer(16, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(6))
    data.fill(a)
    b = ReplayBuffer(16, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(6))
    b.load_state_dict({k: v.clone() if torch.is_tensor(v) else v for k, v in a.state_dict().items()})
    assert len(b) == len(a)
    sa, sb = a.sample(64), b.sample(64)
    assert torch.equal(sa.observation, sb.observation) and torch.equal(sa.reward, sb.reward)


def test_replay_state_dict_holds_only_the_rows_written_so_far(tmp_path):
    """A checkpoint early in a run with a large replay holds what was stored, not the preallocated capacity."""
    data = Recorded(rows=12, n_envs=2, seed=5)
    a = ReplayBuffer(2_000, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(6))
    data.fill(a)
    state = a.state_dict()
    assert state["filled"] == 12 and len(state["observation"]) == 12 and len(state["done"]) == 12
    torch.save(state, tmp_path / "replay.pt")
    assert (tmp_path / "replay.pt").stat().st_size < 20_000, "no view of the 1,000-row storage is written"
    b = ReplayBuffer(2_000, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(6))
    b.load_state_dict(torch.load(tmp_path / "replay.pt", weights_only=True))
    sa, sb = a.sample(64), b.sample(64)
    assert torch.equal(sa.observation, sb.observation) and torch.equal(sa.next_observation, sb.next_observation)


# -- GAE --------------------------------------------------------------------------------------------------
def reference_gae(reward, mask, done, values, gamma, lam):
    """The textbook forward sum A_t = sum_k (gamma lam)^k delta_{t+k}, stopped after the step into a done
    state; delta_t = r_{t+1} + gamma mask_{t+1} V_{t+1} - V_t. Plain Python, one cell at a time."""
    steps, n_envs = len(reward) - 1, len(reward[0])
    advantages = [[0.0] * n_envs for _ in range(steps)]
    for e in range(n_envs):
        for t in range(steps):
            total, weight = 0.0, 1.0
            for k in range(t, steps):
                delta = reward[k + 1][e] + gamma * mask[k + 1][e] * values[k + 1][e] - values[k][e]
                total += weight * delta
                if done[k + 1][e]:
                    break
                weight *= gamma * lam
            advantages[t][e] = total
    return advantages


def fill_gae(seed: int = 0):
    """6 steps of 2 envs: env 0 reaches a terminal state at row 2 (reset at row 3); env 1 is truncated at
    row 4 (mask stays 1, reset at row 5)."""
    n_steps, n_envs = 6, 2
    g = torch.Generator().manual_seed(seed)
    reward = torch.randn(n_steps + 1, n_envs, generator=g)
    reward[0] = 0.0
    done = torch.zeros(n_steps + 1, n_envs, dtype=torch.bool)
    mask = torch.ones(n_steps + 1, n_envs)
    done[2, 0], mask[2, 0] = True, 0.0  # terminal
    reward[3, 0] = 0.0  # the reset step earns nothing
    done[4, 1], mask[4, 1] = True, 1.0  # truncated: its value still counts
    reward[5, 1] = 0.0
    values = torch.randn(n_steps + 1, n_envs, generator=g)
    buffer = GeneralizedAdvantageBuffer(n_steps, n_envs, (1,), torch.float32, discount_factor=0.9, lam=0.8)
    observation = lambda t: (10.0 * t + torch.arange(n_envs, dtype=torch.float32)).unsqueeze(1)  # noqa: E731
    for t in range(n_steps + 1):
        buffer.store_state(states(observation(t), reward[t], done[t], mask[t]))
        if t < n_steps:
            buffer.store_action(torch.tensor([t, 100 + t]), torch.tensor([-0.1 * t, -0.2 * t]))
    return buffer, reward, mask, done, values


def test_gae_advantages_match_the_textbook_sum_with_terminal_and_truncation():
    buffer, reward, mask, done, values = fill_gae()
    assert buffer.full
    advantages, returns = buffer.advantages(values)
    expected = torch.tensor(reference_gae(reward.tolist(), mask.tolist(), done.tolist(), values.tolist(), 0.9, 0.8))
    assert torch.allclose(advantages, expected, atol=1e-5)
    assert torch.allclose(returns, expected + values[:-1], atol=1e-5)
    # the terminal's advantage does not bootstrap; the truncation's does
    assert advantages[1, 0].item() == pytest.approx(reward[2, 0].item() - values[1, 0].item(), abs=1e-5)
    assert advantages[3, 1].item() == pytest.approx(
        reward[4, 1].item() + 0.9 * values[4, 1].item() - values[3, 1].item(), abs=1e-5)


def test_gae_rollout_leaves_out_transitions_from_done_states_and_keeps_rows_aligned():
    buffer, reward, mask, done, values = fill_gae(seed=1)
    advantages, returns = buffer.advantages(values)
    rollout = buffer.rollout(values)
    cells = [(t, e) for t in range(6) for e in range(2) if not done[t, e]]
    assert rollout.size == 12 - 2 == len(cells)
    obs = rollout.observation.squeeze(-1)
    assert obs.tolist() == [10.0 * t + e for t, e in cells]
    assert (2, 0) not in cells and (4, 1) not in cells
    assert rollout.action.tolist() == [t if e == 0 else 100 + t for t, e in cells]
    assert torch.allclose(rollout.log_prob, torch.tensor([-0.1 * t if e == 0 else -0.2 * t for t, e in cells]))
    assert torch.allclose(rollout.advantage, torch.stack([advantages[t, e] for t, e in cells]))
    assert torch.allclose(rollout.returns, torch.stack([returns[t, e] for t, e in cells]))


def test_gae_rollout_carries_the_last_row_to_row_zero():
    buffer, reward, mask, done, values = fill_gae(seed=2)
    last_observation = buffer.observation[-1].clone()
    buffer.rollout(values)
    assert buffer.t == 0 and not buffer.full
    assert torch.equal(buffer.observation[0], last_observation)
    assert torch.equal(buffer.reward[0], reward[-1])
    assert torch.equal(buffer.mask[0], mask[-1])
    assert torch.equal(buffer.done[0], done[-1])


def test_gae_state_dict_holds_only_the_rows_written_so_far(tmp_path):
    """A PPO checkpoint mid-rollout holds the states and actions stored since the rollout began, not the
    preallocated rows (29 MB of frames on Atari), and restores them; an older checkpoint of every row loads."""
    frames = (4, 84, 84)
    buffer = GeneralizedAdvantageBuffer(128, 2, frames, torch.uint8)
    for t in range(3):
        buffer.store_state(states(torch.full((2, *frames), t + 1, dtype=torch.uint8), [1.0, 0.0], [False, t == 1],
                                  torch.ones(2)))
        buffer.store_action(torch.tensor([t, t + 1]), torch.tensor([-0.5, -0.25]))
    state = buffer.state_dict()
    # Row 3 is written by the next step (the rollout's next state): not saved.
    assert state["t"] == 3 and len(state["observation"]) == 3 and len(state["action"]) == 3
    torch.save(state, tmp_path / "rollout.pt")
    assert (tmp_path / "rollout.pt").stat().st_size < 250_000, "3 rows of frames (170 kB), not all 129 (7.3 MB)"

    for saved in (torch.load(tmp_path / "rollout.pt", weights_only=True),
                  {k: v.clone() if torch.is_tensor(v) else v for k, v in vars(buffer).items()
                   if k in state}):  # the whole preallocated rows, as checkpoints held them before
        restored = GeneralizedAdvantageBuffer(128, 2, frames, torch.uint8)
        restored.load_state_dict(saved)
        assert restored.t == 3
        assert torch.equal(restored.observation[:3], buffer.observation[:3])
        assert torch.equal(restored.action[:3], buffer.action[:3])
        assert torch.equal(restored.log_prob[:3], buffer.log_prob[:3])
        assert restored.done[2].all(), "the newest stored state's action never gets its outcome after a resume"
        assert restored.done[1].tolist() == [False, True] and not restored.done[0].any()
