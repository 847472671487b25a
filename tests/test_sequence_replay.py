"""Sequence replay (rlconf.memory.sequence): what a sample holds, which sequences exist, priorities, checkpoints.

Every stored observation here is its step number times 10 plus its environment, and every stored recurrent
state the step number, so a sampled sequence says exactly which rows it read.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from conftest import states

from rlconf.memory.sequence import SequenceReplay, n_step_returns, sequence_priorities

N_ENVS, STATE = 2, 3


def replay(capacity: int = 16, prioritized: bool = False, **options) -> SequenceReplay:
    settings = dict(state_size=STATE, sequence_length=3, burn_in=1, period=2, n_steps=1) | options
    return SequenceReplay(capacity, N_ENVS, (1,), torch.float32, prioritized=prioritized,
                          generator=torch.Generator().manual_seed(0), **settings)


def store(buffer: SequenceReplay, step: int, done=(False, False)) -> None:
    observation = torch.tensor([[10.0 * step], [10.0 * step + 1]])
    buffer.store(states(observation, [float(step)] * N_ENVS, list(done)), torch.tensor([step % 2, 1 - step % 2]),
                 torch.full((N_ENVS, STATE), float(step)))


def steps_of(observation: torch.Tensor) -> torch.Tensor:
    """``[T, B]``: the step numbers a sampled sequence's observations were stored at."""
    return (observation[..., 0] // 10).long()


def test_rows_are_whole_periods_with_room_for_a_sequence():
    buffer = replay(capacity=7, period=4)  # span 1 + 3 + 1 = 5 rows, ceil(7 / 2) = 4 -> 5 + 1 -> 8
    assert buffer.rows == 8 and buffer.starts == 2
    assert buffer.recurrent_state.shape == (2, N_ENVS, STATE)


def test_a_sequence_holds_exactly_the_stored_steps_and_the_state_at_its_start():
    buffer = replay()  # 8 rows, starts at rows 0, 2, 4, 6; a sequence reads 5 rows
    for step in range(7):
        store(buffer, step)
    batch = buffer.gather_sequences(torch.tensor([2, 0]), torch.tensor([1, 0]))
    assert batch.observation.shape == (5, 2, 1)
    assert torch.equal(batch.observation[:, 0, 0], torch.tensor([21.0, 31, 41, 51, 61]))
    assert torch.equal(batch.observation[:, 1, 0], torch.tensor([0.0, 10, 20, 30, 40]))
    assert torch.equal(batch.reward[:, 0], torch.tensor([2.0, 3, 4, 5, 6]))
    assert torch.equal(batch.action[:, 0], torch.tensor([1, 0, 1, 0, 1]))  # env 1 took 1 - step % 2
    assert torch.equal(batch.state, torch.tensor([[2.0] * STATE, [0.0] * STATE]))
    assert not batch.resets.any() and batch.valid.all()


def test_only_complete_sequences_exist():
    buffer = replay()
    for step in range(4):
        store(buffer, step)
        assert len(buffer) == 0 and not buffer.holds(1)
    store(buffer, 4)  # rows 0 .. 4: the sequence from row 0
    assert len(buffer) == N_ENVS and buffer.holds(10)
    starts, _, _ = buffer.draw(50)
    assert set(starts.tolist()) == {0}


@pytest.mark.parametrize("prioritized", [False, True])
def test_sampled_sequences_never_cross_the_write_head_nor_read_overwritten_rows(prioritized):
    buffer = replay(prioritized=prioritized)
    for step in range(30):  # the 8-row ring wraps several times
        store(buffer, step)
        if len(buffer) == 0:
            continue
        batch = buffer.sample(64)
        taken = steps_of(batch.observation)
        assert torch.equal(taken - taken[0], torch.arange(5).unsqueeze(1).expand_as(taken)), "not consecutive"
        assert int(taken.max()) <= step and int(taken.min()) > step - 8, "read beyond the rows held"
        assert torch.equal(batch.state[:, 0].long(), taken[0]), "the state stored at another row"
        assert torch.equal(taken[0] % 2, torch.zeros_like(taken[0])), "a start off the period"
    # With 8 rows held and 5 read, the starts 2 rows apart whose 5 rows are all held: 2 of 4 start rows.
    assert len(buffer) == 2 * N_ENVS


def test_frame_stacks_reaching_into_overwritten_rows_are_not_sampled():
    buffer = SequenceReplay(8, 1, (2, 1, 1), torch.uint8, state_size=1, sequence_length=2, burn_in=0, period=2,
                            n_steps=1, generator=torch.Generator().manual_seed(0), frame_stack=2)
    assert buffer.rows == 8
    for step in range(12):
        frames = torch.tensor([[[[max(step - 1, 0)]], [[step]]]], dtype=torch.uint8)
        buffer.store(states(frames, [0.0], [False]), torch.tensor([0]), torch.zeros(1, 1))
    # Rows hold steps 4 .. 11; the start at step 4 needs step 3's frame, overwritten: starts 6 and 8 remain.
    starts, _, _ = buffer.draw(100)
    sampled = buffer.gather_sequences(starts, torch.zeros_like(starts))
    first = sampled.observation[0, :, :, 0, 0]  # [B, 2]: the first stack of each sequence
    assert set(first[:, 1].tolist()) == {6, 8}
    assert torch.equal(first[:, 0], first[:, 1] - 1), "the stack was not rebuilt from the row before"


def test_resets_and_valid_steps_follow_episode_ends():
    buffer = replay()
    for step in range(5):
        store(buffer, step, done=(step == 1, step == 3))
    batch = buffer.gather_sequences(torch.tensor([0, 0]), torch.tensor([0, 1]))
    assert batch.resets[:, 0].tolist() == [False, False, True, False, False]  # the step after env 0's done
    assert batch.resets[:, 1].tolist() == [False, False, False, False, True]
    assert batch.valid[:, 0].tolist() == [True, False, True, True, True]  # leaving a done state: no transition
    assert batch.valid[:, 1].tolist() == [True, True, True, False, True]


def test_n_step_returns_inside_a_sequence_by_hand():
    reward = torch.tensor([[0.0], [1.0], [2.0], [4.0], [8.0]])
    done = torch.tensor([[False], [False], [True], [False], [False]])
    returns, discount, last = n_step_returns(reward, done, steps=3, n=2, gamma=0.5)
    # t=0: r1 + 0.5 r2 = 2, bootstrap from row 2 after 2 steps; t=1: r2 = 2 and the episode ended at row 2.
    # t=2 leaves a done state (masked out by ``valid``): its sum runs on regardless.
    assert returns[:, 0].tolist() == [2.0, 2.0, 4.0 + 0.5 * 8.0]
    assert discount[:, 0].tolist() == [0.25, 0.5, 0.25]
    assert last[:, 0].tolist() == [2, 2, 4]


def test_sequence_priority_mixes_max_and_mean_over_valid_steps():
    td = torch.tensor([[1.0, -2.0], [-3.0, 100.0], [2.0, 0.0]])
    valid = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    priorities = sequence_priorities(td, valid, eta=0.9)
    assert priorities.tolist() == pytest.approx([0.9 * 3 + 0.1 * 2, 0.9 * 2 + 0.1 * 1])


def test_priorities_new_at_the_max_updated_by_td_and_zero_once_overwritten():
    buffer = replay(prioritized=True, alpha=0.5)
    for step in range(5):
        store(buffer, step)
    assert buffer.tree.get(np.array([0, 1])).tolist() == [1.0, 1.0]  # entered at max priority 1 ** alpha
    assert buffer.tree.total == 2.0
    buffer.update_priorities((torch.tensor([0, 0]), torch.tensor([0, 1])), torch.tensor([4.0, 0.0]))
    assert buffer.tree.get(np.array([0, 1])) == pytest.approx([(4 + 1e-5) ** 0.5, 1e-5 ** 0.5])
    assert buffer.max_priority == pytest.approx(4 + 1e-5)
    store(buffer, 5)
    store(buffer, 6)  # completes the sequence from row 2: the largest priority so far
    assert buffer.tree.get(np.array([2, 3])) == pytest.approx([(4 + 1e-5) ** 0.5] * 2)
    starts, cols, weights = buffer.draw(2000)
    drawn = starts * N_ENVS // 2 + cols  # slot numbers: start row 0 -> 0, 1; start row 2 -> 2, 3
    shares = np.bincount(drawn.numpy(), minlength=4) / 2000
    total = buffer.tree.total
    assert shares == pytest.approx(buffer.tree.get(np.arange(4)) / total, abs=0.01)
    # (N P) ** -beta over the largest: the rare sequence weighs 1, the common ones (p_rare / p_common) ** beta.
    rare, common = 1e-5 ** 0.5, (4 + 1e-5) ** 0.5
    assert float(weights.max()) == 1.0 and float(weights.min()) == pytest.approx((rare / common) ** 0.6)
    for step in range(7, 9):
        store(buffer, step)  # rows 0 and 1 overwritten: the sequence from row 0 is gone
    assert buffer.tree.get(np.array([0, 1])).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("prioritized", [False, True])
def test_state_dict_round_trip_through_a_file(prioritized):
    buffer = replay(prioritized=prioritized)
    for step in range(11):
        store(buffer, step)
    if prioritized:
        buffer.update_priorities((torch.tensor([4, 6]), torch.tensor([1, 0])), torch.tensor([3.0, 0.5]))
    saved = io.BytesIO()
    torch.save({"contents": buffer.state_dict(), "generator": buffer.generator_state()}, saved)
    saved.seek(0)
    checkpoint = torch.load(saved, weights_only=True)

    resumed = replay(prioritized=prioritized)
    resumed.load_state_dict(checkpoint["contents"])
    resumed.load_generator_state(checkpoint["generator"])
    assert resumed.done[resumed.newest_row].all() and not buffer.done[buffer.newest_row].any()
    buffer.done[buffer.newest_row] = True  # what the resumed one marks: its environments restart
    for a, b in zip(buffer.sample(32), resumed.sample(32), strict=True):
        if isinstance(a, tuple):
            assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
        else:
            assert (a is None and b is None) or torch.equal(a, b)
    assert torch.equal(resumed.recurrent_state, buffer.recurrent_state)
    if prioritized:
        assert np.array_equal(resumed.tree.tree, buffer.tree.tree)


def test_a_checkpoint_holds_only_the_rows_written():
    buffer = replay(capacity=64)  # 32 rows, 16 starts
    for step in range(5):
        store(buffer, step)
    state = buffer.state_dict()
    assert len(state["observation"]) == 5 and len(state["recurrent_state"]) == 3  # starts at rows 0, 2, 4
