"""State and StateArray (what agents see), and the schedules agents read with float()."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rlconf.core import State, StateArray
from rlconf.optim import Clock, LinearScheduler, schedule


def batch(n: int = 3, obs_dim: int = 2) -> StateArray:
    return StateArray({
        "observation": torch.arange(n * obs_dim, dtype=torch.float32).view(n, obs_dim),
        "reward": torch.arange(n, dtype=torch.float32),
        "done": torch.tensor([False, True, False][:n]),
        "mask": torch.tensor([1.0, 0.0, 1.0][:n]),
    }, (n,))


# -- State ------------------------------------------------------------------------------------------------
def test_state_defaults_for_a_fresh_state():
    state = State({"observation": torch.tensor([1.0, 2.0])})
    assert state.reward == 0.0
    assert state.done is False
    assert state.mask == 1.0
    assert state.shape == ()
    assert len(state) == 1


def test_state_done_defaults_mask_to_zero_but_a_truncation_keeps_its_mask():
    terminal = State({"observation": torch.zeros(2), "done": True})
    truncated = State({"observation": torch.zeros(2), "done": True, "mask": 1.0})
    assert terminal.mask == 0.0
    assert truncated.mask == 1.0


def test_state_needs_an_observation():
    with pytest.raises(KeyError, match="observation"):
        State({"reward": 1.0})


def test_state_as_input_adds_a_batch_dimension_and_as_output_removes_it():
    state = State({"observation": torch.tensor([1.0, 2.0, 3.0])})
    assert state.as_input().shape == (1, 3)
    assert torch.equal(state.as_input()[0], state.observation)
    assert state.as_output(torch.ones(1, 5)).shape == (5,)


def test_state_apply_runs_a_batch_model_on_one_state():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    state = State({"observation": torch.tensor([1.0, -1.0, 0.5])})
    out = state.apply(model)
    assert out.shape == (2,)
    assert torch.allclose(out, model(state.observation))


def test_state_apply_mask_zeroes_values_of_terminal_states_only():
    values = torch.tensor([2.0, 3.0])
    terminal = State({"observation": torch.zeros(1), "done": True, "mask": torch.tensor(0.0)})
    live = State({"observation": torch.zeros(1), "mask": torch.tensor(1.0)})
    assert torch.equal(terminal.apply_mask(values), torch.zeros(2))
    assert torch.equal(live.apply_mask(values), values)


def test_state_update_returns_a_new_state_and_leaves_the_old_one_alone():
    state = State({"observation": torch.zeros(2), "reward": 1.0})
    new = state.update("reward", 5.0)
    assert new is not state
    assert type(new) is State
    assert new.reward == 5.0
    assert state.reward == 1.0
    assert new.observation is state.observation


def test_state_array_stacks_states():
    states = [State({"observation": torch.full((2,), float(i)), "reward": float(i), "done": i == 1})
              for i in range(3)]
    array = State.array(states)
    assert isinstance(array, StateArray)
    assert array.shape == (3,)
    assert len(array) == 3
    assert array.observation.shape == (3, 2)
    assert torch.equal(array.observation[:, 0], torch.tensor([0.0, 1.0, 2.0]))
    assert torch.equal(array.reward, torch.tensor([0.0, 1.0, 2.0]))
    assert torch.equal(array.done, torch.tensor([False, True, False]))
    assert torch.equal(array.mask, torch.tensor([1.0, 0.0, 1.0]))


# -- StateArray -------------------------------------------------------------------------------------------
def test_state_array_int_index_gives_a_state():
    array = batch()
    one = array[2]
    assert type(one) is State
    assert torch.equal(one.observation, torch.tensor([4.0, 5.0]))
    assert one.reward == 2.0
    assert one.done.item() is False


def test_state_array_slice_and_index_tensor_give_state_arrays():
    array = batch()
    part = array[1:]
    assert isinstance(part, StateArray)
    assert part.shape == (2,)
    assert torch.equal(part.reward, torch.tensor([1.0, 2.0]))
    picked = array[torch.tensor([2, 0])]
    assert isinstance(picked, StateArray)
    assert picked.shape == (2,)
    assert torch.equal(picked.observation, torch.tensor([[4.0, 5.0], [0.0, 1.0]]))
    assert array["reward"] is array.reward  # a string key is still a component


def test_state_array_as_input_flattens_batch_dims_and_as_output_restores_them():
    array = StateArray({"observation": torch.randn(4, 3, 5), "mask": torch.ones(4, 3)}, (4, 3))
    flat = array.as_input()
    assert flat.shape == (12, 5)
    assert torch.equal(flat.view(4, 3, 5), array.observation)
    assert array.as_output(torch.zeros(12, 2)).shape == (4, 3, 2)
    assert len(array) == 4
    assert array.flatten().shape == (12,)


def test_state_array_apply_mask_broadcasts_over_trailing_dims():
    array = batch()
    out = array.apply_mask(torch.ones(3, 4))
    assert torch.equal(out, torch.tensor([[1.0] * 4, [0.0] * 4, [1.0] * 4]))


def test_state_array_cat_joins_along_the_batch():
    a, b = batch(3), batch(2)
    joined = StateArray.cat([a, b])
    assert isinstance(joined, StateArray)
    assert joined.shape == (5,)
    assert torch.equal(joined.reward, torch.tensor([0.0, 1.0, 2.0, 0.0, 1.0]))
    assert joined.observation.shape == (5, 2)


def test_state_array_update_keeps_the_shape_and_returns_a_new_object():
    array = batch()
    new = array.update("reward", torch.zeros(3))
    assert isinstance(new, StateArray)
    assert new is not array
    assert new.shape == (3,)
    assert torch.equal(array.reward, torch.tensor([0.0, 1.0, 2.0]))
    assert torch.equal(new.reward, torch.zeros(3))


def test_state_array_batch_execute_covers_every_element_in_order():
    array = StateArray({"observation": torch.arange(10.0).view(10, 1)}, (10,))
    out = array.batch_execute(3, lambda part: part.observation.squeeze(1) * 2)
    assert torch.equal(out, torch.arange(10.0) * 2)


def test_state_to_the_same_device_is_a_no_op():
    array = batch()
    assert array.to("cpu") is array


# -- schedules --------------------------------------------------------------------------------------------
def test_linear_scheduler_start_middle_end():
    clock = Clock()
    epsilon = LinearScheduler(1.0, 0.1, decay_start=100, decay_end=200, clock=clock, name="epsilon")
    assert epsilon.value == 1.0
    clock.tick(100)
    assert epsilon.value == 1.0
    clock.tick(50)
    assert float(epsilon) == pytest.approx(0.55)
    clock.tick(50)
    assert epsilon.value == pytest.approx(0.1)
    clock.tick(1000)
    assert epsilon.value == pytest.approx(0.1)


def test_linear_scheduler_rejects_an_end_before_its_start():
    with pytest.raises(ValueError, match="decay_end"):
        LinearScheduler(1.0, 0.0, decay_start=10, decay_end=5, clock=Clock())


def test_schedule_is_a_plain_float_when_final_is_none():
    value = schedule(3, None, 1000, Clock(), "lr")
    assert type(value) is float
    assert value == 3.0


def test_schedule_decays_over_its_steps_from_decay_start():
    clock = Clock(steps=0)
    value = schedule(1.0, 0.0, 100, clock, "clip", decay_start=50)
    assert isinstance(value, LinearScheduler)
    assert float(value) == 1.0
    clock.steps = 100
    assert float(value) == pytest.approx(0.5)
    clock.steps = 150
    assert float(value) == 0.0


def test_a_clock_names_the_schedules_that_read_it_and_numbers_a_shared_name():
    clock, other = Clock(), Clock()
    lr = schedule(1.0, 0.0, 100, clock, "lr")
    schedule(1.0, 0.1, 10, other, "epsilon")
    lr_v, lr_v_again = (schedule(0.5, 0.0, 100, clock, "lr_v") for _ in range(2))
    assert schedule(3, None, 1000, clock, "constant") == 3.0  # a constant is no schedule
    assert clock.named_schedules() == {"lr": lr, "lr_v_0": lr_v, "lr_v_1": lr_v_again}


@pytest.mark.parametrize(("family", "env_id"), [("classic", "CartPole-v1"), ("atari", "ALE/Pong-v5"),
                                                ("bandit", "bernoulli"), ("contextual_bandit", "linear")])
def test_an_environment_hands_over_states_on_the_run_device(family, env_id):
    """States come off numpy on the CPU and must be moved, not only labelled: a state labelled cuda whose tensors
    stayed on the CPU made every agent fail its first act on a GPU. PyTorch's meta device stands in for one."""
    from rlconf import registry

    env = registry.get("environment", family)(env_id, 2, device="meta")
    state = env.reset()
    assert state.device == torch.device("meta")
    assert all(value.device.type == "meta" for value in state.values() if torch.is_tensor(value))
    env.close()
