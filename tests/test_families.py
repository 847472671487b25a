"""The Box2D, MiniGrid and highway-env families: their env configs listed and run for real (a few steps each),
their presets composed into the settings a run gets, MiniGrid's Dict observation without its mission string,
highway-env's settings passed through env.kwargs, and a missing extra named in one line. A family whose package
is not installed is skipped, saying which."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, assert_preset_reaches, build, one_error_line, only_run_dir, run_main
from omegaconf import OmegaConf

from rlconf import registry
from rlconf.config import compose, validate
from rlconf.paths import config_dir

PACKAGE = {"box2d": "Box2D", "minigrid": "minigrid", "highway": "highway_env"}  # what each family's extra installs
ENVS = {
    "box2d": ["box2d/lunar_lander", "box2d/lunar_lander_continuous", "box2d/bipedal_walker"],
    "minigrid": ["minigrid/doorkey_5x5", "minigrid/doorkey_8x8", "minigrid/empty_8x8", "minigrid/memory_s7"],
    "highway": ["highway/highway_fast", "highway/highway_continuous"],
}
# An env of each family whose actions suit the agent, for the presets (configs/preset/<family>/<agent>.yaml).
PRESET_ENV = {("box2d", "ppo"): "box2d/lunar_lander", ("box2d", "sac"): "box2d/lunar_lander_continuous",
              ("highway", "dqn"): "highway/highway_fast", ("highway", "ppo"): "highway/highway_continuous",
              ("minigrid", "ppo"): "minigrid/doorkey_5x5", ("minigrid", "dqn"): "minigrid/doorkey_5x5",
              ("minigrid", "r2d1"): "minigrid/doorkey_5x5"}
SHORT_HIGHWAY = "env.kwargs.config.duration=4"  # highway-env steps slowly: episodes of 4 steps
# Each env config with an agent that plays it, a few steps of training and its greedy test.
RUNS = [
    ("ppo", "box2d/lunar_lander", ["steps=64", "hardware.n_envs=2", "agent.n_steps=32", "agent.batch_size=32"]),
    ("sac", "box2d/lunar_lander_continuous", ["steps=80", "agent.replay_start_size=40", "agent.batch_size=16"]),
    ("sac", "box2d/bipedal_walker", ["steps=80", "agent.replay_start_size=40", "agent.batch_size=16"]),
    ("dqn", "highway/highway_fast", ["steps=12", "agent.replay_start_size=6", SHORT_HIGHWAY]),
    ("ppo", "highway/highway_continuous", ["steps=12", "hardware.n_envs=2", "agent.n_steps=6", "agent.batch_size=6",
                                           SHORT_HIGHWAY, "hardware.vectorization=async"]),
    ("ppo", "minigrid/doorkey_5x5", ["steps=64", "hardware.n_envs=2", "agent.n_steps=32", "agent.batch_size=32"]),
    ("dqn", "minigrid/doorkey_8x8", ["steps=64", "agent.replay_start_size=32", "agent.batch_size=16",
                                     "hardware.n_envs=2"]),
    ("r2d1", "minigrid/empty_8x8", ["steps=96", "agent.replay_start_size=64", "agent.batch_size=2",
                                    "hardware.n_envs=2"]),
    ("ppo", "minigrid/memory_s7", ["steps=64", "hardware.n_envs=2", "agent.n_steps=32", "agent.batch_size=32",
                                   "approximation.recurrent=lstm"]),
]


def needs(family: str) -> None:
    """Skip unless the family's package (its extra: pip install 'rlconf[FAMILY]') is installed."""
    pytest.importorskip(PACKAGE[family],
                        reason=f"the {family} extra is not installed: pip install -e '.[dev,{family}]'")


def family_of(env: str) -> str:
    return env.split("/", 1)[0]


def test_rlconf_list_shows_every_env_config_and_preset_of_the_families(capsys):
    result = run_main(["list", "env"], capsys)
    assert result.returncode == 0, result.stderr
    for env in [e for envs in ENVS.values() for e in envs]:
        line = next((line for line in result.stdout.splitlines() if line.split()[:1] == [env]), None)
        assert line is not None and len(line.split()) > 1, f"{env} listed with its description"
    presets = run_main(["list", "preset"], capsys).stdout
    for family, agent in PRESET_ENV:
        assert f"{family}/{agent}" in presets


@pytest.mark.parametrize(("family", "agent"), sorted(PRESET_ENV))
def test_each_preset_reaches_the_settings_of_a_run(family, agent):
    """configs/preset/<family>/<agent>.yaml is applied by naming the agent and an env of the family: every value
    it sets reaches the checked settings."""
    settings = validate(compose([f"agent={agent}", f"env={PRESET_ENV[family, agent]}"], []))
    assert settings.env.family == family
    assert_preset_reaches(settings, family, agent)


def test_the_minigrid_family_reads_the_view_with_a_small_unscaled_cnn():
    settings = validate(compose(["agent=ppo", "env=minigrid/doorkey_5x5"], []))
    assert settings.approximation["encoders"]["image"] == {"type": "small_cnn", "scale": False}


@pytest.mark.parametrize(("agent", "env", "overrides"), RUNS, ids=[f"{a}-{e}" for a, e, _ in RUNS])
def test_each_env_config_trains_and_tests_for_real(agent, env, overrides, tmp_path, capsys):
    needs(family_of(env))
    result = run_main(["run", f"agent={agent}", f"env={env}", *overrides, *FAST_RUN, f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    budget = int(next(o for o in overrides if o.startswith("steps=")).split("=")[1])
    assert summary["steps"] >= budget
    assert summary["test_episodes"] == 2 and np.isfinite(summary["test_return_mean"])


def test_minigrid_observations_are_the_view_and_direction_without_the_mission():
    """The adapter drops the mission string (no network takes text): what is left is packed, the 7x7x3 view
    as uint8, stored once; the direction a discrete key."""
    needs("minigrid")
    _, env, _ = build("agent=ppo", "env=minigrid/doorkey_5x5", "hardware.n_envs=2")
    layout = env.layout
    assert {field.key for field in layout.fields} == {"image", "direction"}
    state = env.reset(seed=0)
    assert state["observation"].dtype == torch.uint8
    view = layout.unpack(state["observation"])
    assert view["image"].shape == (2, 7, 7, 3) and view["image"].dtype == torch.uint8
    assert view["direction"].shape[0] == 2 and int(view["direction"].max()) < 4
    env.close()


def test_minigrid_copies_in_subprocesses_give_what_copies_in_this_process_give():
    """vectorization=async: each subprocess imports minigrid (registering its ids), drops the mission and packs
    the observation as this process does; seeded alike, both see the same grids."""
    needs("minigrid")
    rows = []
    for mode in ("sync", "async"):
        _, env, _ = build("agent=ppo", "env=minigrid/doorkey_5x5", "hardware.n_envs=2",
                          f"hardware.vectorization={mode}")
        states = [env.reset(seed=3)["observation"]]
        for _ in range(3):
            states.append(env.step(torch.tensor([2, 1]))["observation"])
        rows.append(torch.stack(states))
        env.close()
    assert torch.equal(rows[0], rows[1])


def test_highway_settings_pass_through_env_kwargs(tmp_path, capsys):
    """env.kwargs.config reaches gym.make(id, config=...): a duration of 3 s makes episodes of at most 3 steps
    (one decision a second), where highway-fast's own are 30."""
    needs("highway")
    result = run_main(["run", "agent=dqn", "env=highway/highway_fast", "steps=10", "agent.replay_start_size=5",
                       "env.kwargs.config.duration=3", "env.kwargs.config.vehicles_count=5", *FAST_RUN,
                       f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    with (only_run_dir(tmp_path) / "episodes.csv").open(newline="") as f:
        lengths = [int(row["length"]) for row in csv.DictReader(f)]
    assert lengths and max(lengths) <= 3


def test_a_missing_simulator_is_one_line_naming_the_extra(tmp_path, capsys, monkeypatch):
    """Without the box2d wheel, the adapter's import of Box2D fails first, and the run says which extra
    installs it (gymnasium's own error names neither)."""
    needs("box2d")
    monkeypatch.setitem(sys.modules, "Box2D", None)  # import Box2D now raises ModuleNotFoundError
    line = one_error_line(run_main(["run", "agent=ppo", "env=box2d/lunar_lander", *FAST_RUN,
                                    f"logdir={tmp_path}"], capsys))
    assert "'Box2D'" in line and "pip install 'rlconf[box2d]'" in line
    assert list(tmp_path.iterdir()) == []  # refused before the run directory was made


def test_every_family_config_names_its_family_and_an_extra_that_pyproject_declares():
    """Each env config of the families (all of them run above) names its family, whose spec's extra pyproject
    declares, and which the ``all`` extra includes."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader reads pyproject.toml")
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    for family, envs in ENVS.items():
        assert registry.env_spec(family).extra == family and family in extras
        assert family in extras["all"][0].split("[", 1)[1]
        on_disk = sorted(f"{family}/{path.stem}" for path in (config_dir() / "env" / family).glob("*.yaml"))
        assert on_disk == sorted(envs)
        for env in envs:
            cfg = OmegaConf.load(config_dir() / "env" / f"{env}.yaml")
            assert (cfg.env.name, cfg.env.family) == (env, family)
