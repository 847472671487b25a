"""The environments of the team kind on real simulators: VMAS (vmas/balance) and PettingZoo's parallel games
(mpe2's simple_spread and simple_tag, and tests/team_envs.py's tiny game whose agents finish at different
times): the TeamStates' shapes, dtypes and global states, the next-step reset of finished copies, the step
count, the episodes' returns, seeding, and the refusals, each in one line."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import FAST_RUN, one_error_line, run_main
from omegaconf import OmegaConf

from rlconf import registry
from rlconf.core import EnvKind, TeamEpisode, TeamState
from rlconf.errors import ConfigError
from rlconf.paths import config_dir

pytest.importorskip("vmas", reason="the vmas extra is not installed: pip install -e '.[dev,vmas]'")
pytest.importorskip("mpe2", reason="the pettingzoo extra is not installed: pip install -e '.[dev,pettingzoo]'")

from rlconf.environments.pettingzoo_parallel import ParallelTeamEnvironment  # noqa: E402
from rlconf.environments.vmas import VmasEnvironment  # noqa: E402

BALANCE = {"n_agents": 4, "random_package_pos_on_line": True, "package_mass": 5}  # configs/env/vmas/balance.yaml
SPREAD = {"N": 3, "max_cycles": 25}
CONFIGS = sorted(path for folder in ("vmas", "mpe", "sisl") for path in (config_dir() / "env" / folder).glob("*.yaml"))
EXTRAS = {"vmas": "vmas", "pettingzoo_parallel": "pettingzoo"}


def balance(n_envs: int = 3, steps: int = 100, **options) -> VmasEnvironment:
    return VmasEnvironment("balance", n_envs, kwargs={**BALANCE, **options}, max_episode_steps=steps, seed=0)


def tiny(n_envs: int = 2, **kwargs) -> ParallelTeamEnvironment:
    return ParallelTeamEnvironment("team_envs", n_envs, kwargs=kwargs, seed=0)


def still(env, n_envs: int | None = None) -> dict[str, torch.Tensor]:
    """Zero actions of every group: no force (VMAS), action 0 (discrete games)."""
    n = n_envs or env.n_envs
    discrete = {name: isinstance(group.action_space, gym.spaces.Discrete) for name, group in env.agent_groups.items()}
    return {name: torch.zeros((n, group.size, *group.action_space.shape),
                              dtype=torch.int64 if discrete[name] else torch.float32)
            for name, group in env.agent_groups.items()}


def assert_team_state(state: TeamState, env, state_size: int) -> None:
    """Every group's keys, shapes and dtypes; the global state the same for every agent of a copy."""
    assert isinstance(state, TeamState) and state.n_envs == env.n_envs
    for name, group in env.agent_groups.items():
        x, shape = state[name], (env.n_envs, group.size)
        assert x.shape == shape
        assert x["observation"].shape == (*shape, *group.observation_space.shape)
        assert x["observation"].dtype == torch.float32
        assert x["reward"].shape == shape and x["reward"].dtype == torch.float32
        assert x["done"].dtype == torch.bool and x["alive"].dtype == torch.bool and x["mask"].dtype == torch.float32
        assert x["global_state"].shape == (*shape, state_size) == (*shape, *group.state_space.shape)
        assert torch.equal(x["global_state"], x["global_state"][:, :1].expand_as(x["global_state"]))


def test_vmas_balance_is_one_group_whose_global_state_is_every_observation_concatenated():
    env = balance(n_envs=3)
    assert env.kind is EnvKind.TEAM and env.agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    group = env.agent_groups["agent"]
    assert (group.observation_space.shape, group.action_space.shape, group.has_state) == ((16,), (2,), False)
    assert env.observation_space == gym.spaces.Dict({"agent": group.observation_space})
    for state in (env.reset(seed=1), env.step(still(env))):
        assert_team_state(state, env, 4 * 16)
        x = state["agent"]
        assert torch.equal(x["global_state"][:, 0], x["observation"].reshape(3, -1))
        assert x["alive"].all() and not x["done"].any()
    discrete = VmasEnvironment("balance", 2, kwargs={**BALANCE, "continuous_actions": False}, seed=0)
    assert discrete.agent_groups["agent"].action_space == gym.spaces.Discrete(9)
    discrete.reset(seed=0)
    assert_team_state(discrete.step(still(discrete)), discrete, 64)


def test_mpe_games_give_their_own_global_state_and_their_groups():
    env = ParallelTeamEnvironment("mpe2.simple_spread_v3", 2, kwargs=SPREAD, seed=0)
    group = env.agent_groups["agent"]
    assert (group.agents, group.observation_space.shape, group.action_space, group.has_state) == (
        ("agent_0", "agent_1", "agent_2"), (18,), gym.spaces.Discrete(5), True)
    env.reset(seed=0)
    state = env.step(still(env, 2))
    assert_team_state(state, env, 54)
    for i, copy in enumerate(env.envs):
        assert np.array_equal(state["agent"]["global_state"][i, 0].numpy(), copy.state())
    tag = ParallelTeamEnvironment("mpe2.simple_tag_v3", 2, kwargs={"max_cycles": 25}, seed=0)
    assert {name: (g.size, g.observation_space.shape) for name, g in tag.agent_groups.items()} == {
        "adversary": (3, (16,)), "agent": (1, (14,))}
    assert_team_state(tag.reset(seed=0), tag, 62)


def test_a_finished_copy_shows_its_final_state_once_then_its_first_with_reward_zero():
    """Copy 0's package is tipped off (terminated, mask 0 at step 50) while copy 1 goes on; then both reach the
    time limit (a truncation: mask 1). Each finished copy is reset on the next step, which is not counted."""
    env = balance(n_envs=2, steps=60)
    env.reset(seed=0)
    tip = torch.zeros(2, 4, 2)
    tip[0, :2, 1], tip[0, 2:, 1] = 1.0, -1.0  # copy 0: two robots push up, two down
    ended_at, steps = None, []
    for t in range(1, 63):
        state = env.step({"agent": tip})
        steps.append(env.steps)
        x = state["agent"]
        if ended_at is None and x["done"][0].any():
            ended_at = t
            assert x["done"][0].all() and not x["done"][1].any() and (x["mask"][0] == 0).all()
            final = x["observation"][0].clone()
            assert [e.env_index for e in env.completed] == [0] and env.completed[0].length == t
        elif ended_at is not None and t == ended_at + 1:  # copy 0 starts again; copy 1 steps on
            assert not x["done"].any() and (x["reward"][0] == 0).all() and (x["reward"][1] != 0).all()
            assert not torch.equal(x["observation"][0], final) and env.completed == []
            assert steps[-1] - steps[-2] == 1  # only copy 1 stepped
        elif t == 60:
            assert x["done"][1].all() and (x["mask"][1] == 1).all()  # truncated
            assert [(e.env_index, e.length) for e in env.completed] == [(1, 60)]
    assert ended_at is not None and ended_at < 59
    assert steps[-1] == 2 * 62 - 2  # every step of both copies but the two reset steps


def test_episode_returns_are_the_summed_rewards_the_states_showed():
    env = tiny(n_envs=2)
    seen = torch.zeros(2, 2, dtype=torch.float64)
    env.reset(seed=0)
    for _ in range(5):
        seen += env.step(still(env))["agent"]["reward"]
    assert all(isinstance(e, TeamEpisode) for e in env.completed)
    assert [(e.env_index, e.length) for e in env.completed] == [(0, 5), (1, 5)]
    for episode in env.completed:
        agents = seen[episode.env_index].tolist()
        assert agents == [5.0, 6.0]  # agent_0: 1 for 5 steps; agent_1: 2 for 3
        assert episode.group_returns == {"agent": pytest.approx(5.5)} and episode.returns == pytest.approx(5.5)
    vmas = balance(n_envs=2, steps=4)
    vmas.reset(seed=0)
    summed = sum(vmas.step(still(vmas))["agent"]["reward"].double() for _ in range(4))
    assert [e.returns for e in vmas.completed] == pytest.approx(summed.mean(dim=1).tolist())


def test_agents_that_finish_before_their_game_are_out_until_their_copy_resets():
    """agent_1 ends at step 3 (terminated), agent_0 at step 5 (truncated): agent_1 shows its final state once,
    then an empty slot that is not alive; the game's action mask reaches agent_0 once it is alone."""
    env = tiny(n_envs=1)
    assert env.masks_actions and env.agent_groups["agent"].has_state is False
    first = env.reset(seed=0)["agent"]
    assert first["action_mask"].tolist() == [[[True, True], [True, True]]]
    rows = [env.step({"agent": torch.tensor([[1, 1]])})["agent"] for _ in range(6)]
    alive = [x["alive"][0].tolist() for x in rows]
    done = [x["done"][0].tolist() for x in rows]
    assert alive == [[True, True]] * 3 + [[True, False]] * 2 + [[True, True]]
    assert done == [[False, False]] * 2 + [[False, True]] + [[False, True]] + [[True, True]] + [[False, False]]
    assert rows[2]["mask"][0].tolist() == [1.0, 0.0] and rows[4]["mask"][0].tolist() == [1.0, 0.0]
    assert rows[3]["observation"][0, 1].abs().sum() == 0 and rows[3]["reward"][0, 1] == 0  # agent_1 is out
    assert rows[3]["observation"][0, 0, 2] == 1  # agent_0's last action
    assert rows[3]["action_mask"][0].tolist() == [[True, False], [True, True]]
    # The next game's first state: step 0 from its seed's start (0 or 10), no reward; the reset is not counted.
    assert rows[5]["reward"][0].tolist() == [0.0, 0.0] and rows[5]["observation"][0, :, 1].tolist() in (
        [0.0, 0.0], [10.0, 10.0])
    assert env.steps == 5 and env.completed == []


def test_the_same_seed_gives_the_same_episodes():
    for make in (lambda: balance(n_envs=2), lambda: ParallelTeamEnvironment("mpe2.simple_spread_v3", 2,
                                                                              kwargs=SPREAD)):
        runs = []
        for _ in range(2):
            env = make()
            states = [env.reset(seed=7)]
            generator = torch.Generator().manual_seed(0)
            for _ in range(3):
                actions = {name: (torch.randint(0, 5, (2, g.size), generator=generator)
                                  if isinstance(g.action_space, gym.spaces.Discrete)
                                  else torch.rand(2, g.size, 2, generator=generator))
                           for name, g in env.agent_groups.items()}
                states.append(env.step(actions))
            runs.append(torch.stack([s["agent"]["observation"] for s in states]))
        assert torch.equal(runs[0], runs[1])
        other = make()
        assert not torch.equal(other.reset(seed=8)["agent"]["observation"], runs[0][0])


def test_a_vmas_evaluation_reseeding_its_copies_leaves_the_training_copies_stream_alone():
    """VMAS keeps one set of generators for the whole process; each adapter keeps its own."""
    def first_layouts(interrupt: bool) -> torch.Tensor:
        train = balance(n_envs=2, steps=2)
        train.reset(seed=1)
        for _ in range(3):  # the time limit at step 2, then a reset of both copies
            train.step(still(train))
        if interrupt:
            balance(n_envs=2).reset(seed=5)
        for _ in range(2):  # the time limit again
            train.step(still(train))
        return train.step(still(train))["agent"]["observation"]  # the copies' next first states

    assert torch.equal(first_layouts(False), first_layouts(True))


def test_a_vmas_env_stepped_under_inference_mode_resets_outside_it():
    """A periodic evaluation steps its copies under torch.inference_mode and the next one resets them outside it
    (the second evaluation of a run once failed there, writing in place into an inference tensor)."""
    env = balance(n_envs=2, steps=2)
    env.reset(seed=0)
    with torch.inference_mode():
        for _ in range(2):  # to the time limit: both copies are due a reset
            env.step(still(env))
    env.reset(seed=0)
    with torch.inference_mode():  # the next evaluation
        assert not env.step(still(env))["agent"]["done"].any()


def test_refusals_are_one_line():
    with pytest.raises(ConfigError, match=r"group 'agent' differ in their observation spaces .*agent_1.*"
                                          r"must see and act alike"):
        tiny(odd_space=True)
    with pytest.raises(ConfigError, match="are images; the pettingzoo_parallel family takes vectors; games seen "
                                          "in pixels: pettingzoo_butterfly"):
        tiny(images=True)
    with pytest.raises(ConfigError, match="env.id=nowhere: allowed: a VMAS scenario: .*balance"):
        VmasEnvironment("nowhere", 1)
    with pytest.raises(ConfigError, match="not used by the VMAS scenario balance"):
        VmasEnvironment("balance", 1, kwargs={"n_robots": 3})
    with pytest.raises(ConfigError, match="continuous_actions"):
        VmasEnvironment("balance", 1, kwargs={"continuous_actions": "yes"})
    with pytest.raises(ConfigError, match="not a PettingZoo parallel game"):
        ParallelTeamEnvironment("pettingzoo.classic.tictactoe_v3", 1)
    with pytest.raises(ConfigError, match="video recorders"):
        VmasEnvironment("balance", 1, kwargs=BALANCE, wrappers=(lambda env: env,))


def test_a_scenario_argument_vmas_does_not_take_is_one_line_before_the_run_starts(tmp_path, capsys):
    line = one_error_line(run_main(["run", "agent=mappo", "env=vmas/balance", "+env.kwargs.n_robots=3", *FAST_RUN,
                                    f"logdir={tmp_path}"], capsys))
    assert line == "rlconf: error: env.kwargs: {'n_robots': 3} not used by the VMAS scenario balance"
    assert list(tmp_path.iterdir()) == []


def test_copy_zero_renders_here():
    for env in (balance(n_envs=2), ParallelTeamEnvironment("mpe2.simple_spread_v3", 2, kwargs=SPREAD,
                                                           render_mode="rgb_array")):
        env.reset(seed=0)
        frame = env.render()
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
        env.close()


def test_rlconf_list_shows_the_team_envs(capsys):
    listed = run_main(["list", "env"], capsys).stdout
    for env in ("vmas/balance", "vmas/navigation", "vmas/sampling", "vmas/transport", "vmas/wheel",
                "vmas/dispersion", "mpe/simple_spread", "mpe/simple_adversary", "mpe/simple_tag", "sisl/multiwalker"):
        assert any(line.split()[:1] == [env] for line in listed.splitlines()), env


def random_actions(env, generator: torch.Generator) -> dict[str, torch.Tensor]:
    actions = {}
    for name, group in env.agent_groups.items():
        space, shape = group.action_space, (env.n_envs, group.size)
        if isinstance(space, gym.spaces.Discrete):
            actions[name] = torch.randint(0, int(space.n), shape, generator=generator)
        else:
            low, high = torch.as_tensor(space.low), torch.as_tensor(space.high)
            actions[name] = low + (high - low) * torch.rand(*shape, *space.shape, generator=generator)
    return actions


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_every_team_env_config_builds_and_plays(path: Path):
    settings = OmegaConf.load(path).env
    assert settings.name == f"{path.parent.name}/{path.stem}"
    assert registry.env_spec(settings.family).kind is EnvKind.TEAM
    env = registry.get("environment", settings.family)(
        settings.id, 2, kwargs=OmegaConf.to_container(settings.kwargs), max_episode_steps=settings.max_episode_steps,
        name=settings.name, seed=0)
    size = sum(int(np.prod(g.observation_space.shape)) * g.size for g in env.agent_groups.values())
    state_size = next(iter(env.agent_groups.values())).state_space.shape[0]
    assert state_size == size or next(iter(env.agent_groups.values())).has_state
    generator = torch.Generator().manual_seed(0)
    assert_team_state(env.reset(seed=0), env, state_size)
    for _ in range(3):
        assert_team_state(env.step(random_actions(env, generator)), env, state_size)
    assert env.steps == 6
    env.close()


def test_the_team_families_name_their_extras_and_family_configs():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader reads pyproject.toml")
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    for family, extra in EXTRAS.items():
        assert registry.env_spec(family).extra == extra and extra in extras
        assert extra in extras["all"][0].split("[", 1)[1].rstrip("]").split(",")
        assert OmegaConf.load(config_dir() / "family" / f"{family}.yaml").family == family
