"""Replay variants: n-step returns, frame-deduplicated stacks, prioritized sampling on a sum tree."""

from __future__ import annotations

import numpy as np
import torch
from conftest import states

from rlconf.memory import NStepReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer, SumTree


def test_n_step_returns_stop_at_episode_ends_and_at_the_newest_row():
    buffer = ReplayBuffer(100, 1, (1,), torch.float32)
    rewards = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    dones = [0, 0, 0, 1, 0, 0, 0, 0, 0]  # row 3 ends an episode (terminal), row 4 is the reset state
    for t, (r, d) in enumerate(zip(rewards, dones, strict=True)):
        buffer.store(states([[float(t)]], [r], [bool(d)]), torch.tensor([0]))
    gamma, n = 0.5, 3
    rows = torch.tensor([0, 1, 2, 4, 6, 7])
    batch = buffer.gather(rows, torch.zeros_like(rows), n, gamma)

    def reference(t):
        total, discount, last = 0.0, 1.0, t
        for k in range(1, n + 1):
            if t + k > 8:
                break
            total += discount * rewards[t + k]
            discount *= gamma
            last = t + k
            if dones[t + k]:
                break
        return total, discount, last

    for i, t in enumerate(rows.tolist()):
        total, discount, last = reference(t)
        assert batch.reward[i].item() == total
        assert batch.discount[i].item() == discount
        assert batch.next_observation[i].item() == float(last)
        assert batch.next_mask[i].item() == (0.0 if dones[last] else 1.0)


def test_n_step_wrapper_draws_through_the_inner_buffer():
    inner = ReplayBuffer(50, 2, (1,), torch.float32, generator=torch.Generator().manual_seed(0))
    buffer = NStepReplayBuffer(3, 0.9, inner)
    for t in range(20):
        buffer.store(states([[t], [t]], [1.0, 1.0], [t % 7 == 6, False]), torch.tensor([0, 1]))
    batch = buffer.sample(256)
    assert batch.discount is not None and batch.reward.shape == (256,)
    # Away from episode ends and the newest row every sample is a full 3-step return of ones.
    full = torch.isclose(batch.discount, torch.tensor(0.9**3))
    assert full.any() and torch.allclose(batch.reward[full], torch.tensor(1 + 0.9 + 0.81))


def frame_stream(steps: int, envs: int, stack: int, seed: int = 0):
    """Stacks as a FrameStack body builds them: the first frame of an episode fills the whole stack."""
    rng = np.random.default_rng(seed)
    current = None
    previous_done = np.ones(envs, dtype=bool)
    for _ in range(steps):
        frames = torch.from_numpy(rng.integers(0, 256, (envs, 84, 84), dtype=np.uint8))
        start = torch.from_numpy(previous_done.copy())
        if current is None:
            current = frames.unsqueeze(1).repeat(1, stack, 1, 1)
        else:
            shifted = torch.cat([current[:, 1:], frames.unsqueeze(1)], dim=1)
            current = torch.where(start.view(-1, 1, 1, 1), frames.unsqueeze(1).expand(-1, stack, -1, -1), shifted)
        done = rng.random(envs) < 0.08
        previous_done = done
        yield current.clone(), torch.from_numpy(done), start


def test_frame_stacks_are_stored_once_and_rebuilt_exactly():
    envs, stack, steps = 3, 4, 120
    buffer = ReplayBuffer(60 * envs, envs, (stack, 84, 84), torch.uint8, frame_stack=stack)
    seen = []
    for observation, done, start in frame_stream(steps, envs, stack):
        actions = torch.zeros(envs, dtype=torch.long)
        buffer.store(states(observation, torch.zeros(envs), done, stack_start=start), actions)
        seen.append(observation)
    # The ring holds the last 60 rows; rows whose stacks reach before them are the oldest 3.
    for back in range(1, 57):
        row = (buffer.newest_row - back) % buffer.rows
        rows = torch.full((envs,), row)
        rebuilt = buffer.observations(rows, torch.arange(envs))
        assert torch.equal(rebuilt, seen[steps - 1 - back]), f"row {row}"
    assert buffer.observation.shape[2:] == (84, 84)  # one frame per slot, not four
    # Sampled transitions (one gather for a state and its successor) hold the stacks the agent saw.
    batch = buffer.sample(300)
    for i, (row, col) in enumerate(zip(*batch.indices, strict=True)):
        step = steps - 1 - (buffer.newest_row - int(row)) % buffer.rows
        assert torch.equal(batch.observation[i], seen[step][col])
        assert torch.equal(batch.next_observation[i], seen[step + 1][col])


def test_deduplicated_atari_transition_costs_one_frame_plus_scalars():
    buffer = ReplayBuffer(10_000, 1, (4, 84, 84), torch.uint8, frame_stack=4)
    per_transition = buffer.bytes_per_transition
    assert per_transition <= 1.05 * 84 * 84 + 32, per_transition
    assert 1_000_000 * per_transition < 8e9  # a million transitions in under 8 GB


def test_sum_tree_finds_the_leaf_of_every_prefix():
    tree = SumTree(5)
    tree.set(np.arange(5), np.array([1.0, 0.0, 2.0, 3.0, 4.0]))
    assert tree.total == 10.0
    prefixes = np.array([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.99])
    assert tree.find(prefixes).tolist() == [0, 0, 2, 2, 3, 3, 4, 4]


def test_prioritized_sampling_follows_priorities_and_skips_ended_episodes():
    buffer = PrioritizedReplayBuffer(64, 1, (1,), torch.float32, alpha=1.0, beta=1.0, seed=0)
    for t in range(9):
        buffer.store(states([[t]], [0.0], [t == 4]), torch.tensor([0]))
    rows, cols, _ = buffer.draw(4000)
    assert 4 not in rows.tolist() and 8 not in rows.tolist()  # ended episode; newest row has no successor
    # Seven valid transitions at priority 1; raised to 7, one of them is drawn 7 times in 13.
    buffer.update_priorities((torch.tensor([2]), torch.tensor([0])), torch.tensor([7.0]))
    rows, _, weights = buffer.draw(13000)
    share = (rows == 2).float().mean().item()
    assert abs(share - 7 / 13) < 0.02, share
    assert weights.max().item() == 1.0 and weights[rows == 2].max() < weights[rows != 2].min()


def test_prioritized_buffer_round_trips_through_its_state_dict():
    a = PrioritizedReplayBuffer(32, 2, (1,), torch.float32, seed=1)
    for t in range(10):
        a.store(states([[t], [t]], [1.0, 2.0], [False, False]), torch.tensor([0, 1]))
    a.update_priorities((torch.tensor([3]), torch.tensor([1])), torch.tensor([5.0]))
    b = PrioritizedReplayBuffer(32, 2, (1,), torch.float32, seed=1)
    b.load_state_dict(a.state_dict())
    assert np.array_equal(a.tree.tree, b.tree.tree) and b.max_priority == a.max_priority
    assert torch.equal(a.draw(50)[0], b.draw(50)[0])
