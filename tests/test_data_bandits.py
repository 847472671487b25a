"""GenRL's remaining bandits (issue 38): the UCI data bandits read from files in their real layouts (each
written here, a few rows as UCI serves them), Mushroom's reward rule and regret, a reward rule of your own,
the variational agent (Bayes by backprop) and its learning bounds, dropout in the neural bandits, and the
fixed-arm baseline; bad input is one line."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, one_error_line, only_run_dir
from test_contextual_bandits import build

from rlconf import registry
from rlconf.environments import uci
from rlconf.environments.bandit import ContextualBandit, MultiArmedBandit
from rlconf.environments.bandit_rewards import MushroomRewards
from rlconf.errors import ConfigError

SMALL = {"hidden": [32]}


# -- files in the UCI layouts -----------------------------------------------------------------------------
def write_covertype(path: Path, rows: int = 60, seed: int = 0) -> None:
    """covtype.data: 10 integers, 4 wilderness and 40 soil indicators (one of each set on), the type 1-7."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(rows):
        numbers = rng.integers(0, 3000, size=10)
        wilderness, soil = np.eye(4, dtype=int)[rng.integers(4)], np.eye(40, dtype=int)[rng.integers(40)]
        lines.append(",".join(map(str, [*numbers, *wilderness, *soil, i % 7 + 1])))
    path.write_text("\n".join(lines) + "\n")


def write_shuttle(path: Path, rows: int = 40, seed: int = 0) -> None:
    """shuttle.trn: 9 integers and the class 1-7, separated by single spaces."""
    rng = np.random.default_rng(seed)
    path.write_text("".join(" ".join(map(str, [*rng.integers(-50, 120, size=9), [1, 4, 5][i % 3]])) + "\n"
                            for i in range(rows)))


ADULT = "".join(row + "\n" for row in (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
    "Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, "
    "Husband, White, Male, 0, 0, 13, United-States, <=50K",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, "
    "Not-in-family, White, Male, 0, 0, 40, United-States, <=50K",
    "53, Private, 234721, 11th, 7, Married-civ-spouse, Handlers-cleaners, "
    "Husband, Black, Male, 0, 0, 40, United-States, <=50K",
    "28, Private, 338409, Bachelors, 13, Married-civ-spouse, Prof-specialty, "
    "Wife, Black, Female, 0, 0, 40, Cuba, <=50K",
    "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, "
    "Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K",
    "37, Private, 284582, Masters, 14, Married-civ-spouse, Exec-managerial, "
    "Wife, White, Female, 0, 0, 40, United-States, <=50K",
    "52, Self-emp-inc, 287927, HS-grad, 9, Married-civ-spouse, Exec-managerial, "
    "Wife, White, Female, 15024, 0, 40, United-States, >50K",
)) + "\n"  # adult.data ends with a blank line; row 6 has missing values (" ?")


def write_census(path: Path, rows: int = 30, seed: int = 0) -> None:
    """USCensus1990.data.txt: a header row, caseid, then 68 coded attributes, dOccup among them."""
    rng = np.random.default_rng(seed)
    names = ["caseid", "dAge", "dAncstry1", *[f"iAttr{i}" for i in range(63)], "dOccup", "dPOB", "iYearsch"]
    lines = [",".join(names)]
    for i in range(rows):
        codes = rng.integers(0, 4, size=len(names) - 1)
        codes[names.index("dOccup") - 1] = i % 9
        lines.append(",".join(map(str, [10000 + i, *codes])))
    path.write_text("\r\n".join(lines) + "\r\n")  # the file's line ends


def write_magic(path: Path, rows: int = 30, seed: int = 0) -> None:
    """magic04.data: 10 real-valued shower features, the class g or h."""
    rng = np.random.default_rng(seed)
    path.write_text("".join(",".join([*(f"{v:.4f}" for v in rng.normal(20, 10, 10)), "gh"[i % 2]]) + "\n"
                            for i in range(rows)))


MUSHROOM_VALUES = ("bcxfks", "fgys", "nbcgrpuewy", "tf", "alcyfmnps", "adfn", "cwd", "bn", "knbhgropuewy", "et",
                   "bcuezr?", "fyks", "fyks", "nbcgopewy", "nbcgopewy", "pu", "nowy", "not", "ceflnpsz", "knbhrouwy",
                   "acnsvy", "glmpuwd")  # each attribute's letters, as agaricus-lepiota.names lists them


def write_mushroom(path: Path, rows: int = 300, seed: int = 0) -> None:
    """agaricus-lepiota.data: the class (e, p), then 22 one-letter attributes (stalk-root ? where missing).
    As in the real data, many attributes tell: each takes a value from the first half of its letters for an
    edible mushroom and the second half for a poisonous one, 80% of the time (else any letter)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        edible = bool(rng.random() < 0.5)
        values = []
        for letters in MUSHROOM_VALUES:
            half = letters[: max(len(letters) // 2, 1)] if edible else letters[len(letters) // 2:]
            values.append(str(rng.choice(list(half if rng.random() < 0.8 else letters))))
        lines.append(",".join(["e" if edible else "p", *values]))
    path.write_text("\n".join(lines) + "\n")


def read(name: str, path: Path, rows: int | None = None) -> uci.Table:
    return uci.read(uci.DATA_SETS[name], path, rows)


# -- the loaders ------------------------------------------------------------------------------------------
def test_covertype_standardises_its_numbers_and_keeps_its_indicators(tmp_path):
    path = tmp_path / "covtype.data"
    write_covertype(path)
    table = read("covertype", path)
    assert table.features.shape == (60, 54) and table.label_names == [str(k) for k in range(1, 8)]
    np.testing.assert_allclose(table.features[:, :10].mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(table.features[:, :10].std(0), 1, atol=1e-4)
    assert set(np.unique(table.features[:, 10:])) == {0.0, 1.0} and (table.features[:, 10:].sum(1) == 2).all()
    assert (table.labels == np.arange(60) % 7).all()  # types 1-7 are arms 0-6
    gz = tmp_path / "covtype.data.gz"  # as UCI serves it
    gz.write_bytes(gzip.compress(path.read_bytes()))
    np.testing.assert_array_equal(read("covertype", gz).features, table.features)
    assert read("covertype", path, rows=20).features.shape == (20, 54)  # env.kwargs.rows: the first rows only


def test_statlog_reads_the_space_separated_shuttle_file(tmp_path):
    path = tmp_path / "shuttle.trn"
    write_shuttle(path)
    table = read("statlog", path)
    assert table.features.shape == (40, 9) and table.label_names == ["1", "4", "5"]
    np.testing.assert_allclose(table.features.std(0), 1, atol=1e-4)


def test_adult_drops_rows_with_missing_values_and_one_hot_encodes_its_categories(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text(ADULT)
    table = read("adult", path)
    # The label is the occupation (the Showdown's 14 arms; 4 occur here); the " ?" row is gone.
    assert table.label_names == ["Adm-clerical", "Exec-managerial", "Handlers-cleaners", "Prof-specialty"]
    assert table.labels.tolist() == [0, 1, 2, 2, 3, 1, 1]
    # 6 numbers, then one indicator per value of workclass 3, education 5, marital 3, relationship 3, race 2,
    # sex 2, country 2 and income 2
    assert table.features.shape == (7, 6 + 3 + 5 + 3 + 3 + 2 + 2 + 2 + 2)
    # adult.test's layout too: a first line of comment, labels ending in a period
    test = tmp_path / "adult.test"
    test.write_text("|1x3 Cross validator\n" + ADULT.replace("50K\n", "50K.\n"))
    np.testing.assert_array_equal(read("adult", test).features, table.features)


def test_census_one_hot_encodes_every_coded_attribute_but_the_case_id(tmp_path):
    path = tmp_path / "USCensus1990.data.txt"
    write_census(path)
    table = read("census", path)
    assert table.label_names == [str(k) for k in range(9)]
    assert table.features.shape[0] == 30 and set(np.unique(table.features)) == {0.0, 1.0}
    assert (table.features.sum(1) == 67).all()  # one value of each of the 67 attributes; caseid is no feature


def test_magic_and_mushroom(tmp_path):
    magic = tmp_path / "magic04.data"
    write_magic(magic)
    table = read("magic", magic)
    assert table.features.shape == (30, 10) and table.label_names == ["g", "h"]
    mushroom = tmp_path / "agaricus-lepiota.data"
    write_mushroom(mushroom, rows=200)
    table = read("mushroom", mushroom)
    assert table.label_names == ["e", "p"] and (table.features.sum(1) == 22).all()  # 22 attributes, one-hot
    levels = {line.split(",")[11] for line in mushroom.read_text().splitlines()}
    assert "?" in levels  # a missing stalk-root is a value of its own, as the Showdown's loader keeps it


@pytest.mark.parametrize(("name", "content", "message"), [
    ("covertype", "1,2,3\n", "line 1 has 3 values, covertype's rows have 55"),
    ("statlog", "1 2 3 4 5 6 7 8 9 1\n1 2 3 4 5 6 7 8 x 1\n", "'x' is not a number"),
    ("census", "caseid,dAge\n", "line 1 has 2 values, census's rows have 69"),
    ("magic", "1,2,3,4,5,6,7,8,9,10,g\n", "fewer than 2 rows of data"),
])
def test_a_file_not_in_the_layout_is_one_line_naming_the_file_and_its_source(tmp_path, name, content, message):
    path = tmp_path / "data"
    path.write_text(content)
    with pytest.raises(ConfigError) as error:
        read(name, path)
    line = str(error.value)
    assert "\n" not in line and line.startswith(f"env.path={path}: ") and message in line
    assert uci.DATA_SETS[name].source in line  # where the right file comes from


# -- rewards and regret -----------------------------------------------------------------------------------
def test_mushroom_pays_by_its_rule_and_regret_is_against_the_best_expected_reward(tmp_path):
    path = tmp_path / "agaricus-lepiota.data"
    write_mushroom(path, rows=100)
    env = ContextualBandit("mushroom", 1, kwargs={"path": str(path)}, seed=0)
    assert env.arms == 2 and env.reward_range == (-35.0, 5.0)
    env.reset(0)
    eaten = {"e": [], "p": []}
    for step in range(4000):
        label = env.problem.label_names[env.problem.labels[env.problem._rows[0]]]
        arm = step % 2  # pass, eat, pass, ...
        env.step(torch.tensor([arm]))
        reward, regret = float(env.pulls.rewards[0]), float(env.pulls.regrets[0])
        if arm == MushroomRewards.PASS:
            assert reward == 0 and regret == (5.0 if label == "e" else 0.0)  # passing an edible one: 5 lost
        else:
            eaten[label].append(reward)
            assert regret == (0.0 if label == "e" else 15.0)  # eating a poisonous one: 0 - (-15) expected
    assert set(eaten["e"]) == {5.0} and set(eaten["p"]) == {5.0, -35.0}
    assert abs(np.mean(eaten["p"]) + 15) < 2.5  # +5 or -35 at even odds (4 standard errors at ~1,000 draws)


def test_a_reward_rule_of_your_own_is_a_plugin(run_cli, workdir, tmp_path):
    """A module named in plugins= registers a rule; env.kwargs.reward names it, for a data set or your CSV."""
    (tmp_path / "my_rewards.py").write_text(textwrap.dedent('''
        import numpy as np
        from rlconf import register
        from rlconf.environments.bandit_rewards import LabelPays

        @register("reward", "costly_mistakes")
        class CostlyMistakes(LabelPays):
            """The label's arm pays 1, any other -1."""
            reward_range = (-1.0, 1.0)

            def expected(self, labels):
                return 2 * super().expected(labels) - 1
    '''))
    data = tmp_path / "magic04.data"
    write_magic(data, rows=50)
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=fixed", "env=bandit/magic", f"env.path={data}", "env.kwargs.reward=costly_mistakes",
                     "plugins=[my_rewards]", "steps=200", f"logdir={logdir}", *FAST_RUN, "test_episodes=100",
                     cwd=workdir, pythonpath=[tmp_path])
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(logdir) / "summary.json").read_text())
    # Always arm 0 (g): rows are half g, half h, so the reward averages 0 and each h row costs 2 of regret.
    assert set(np.unique(summary["arm_counts"])) == {0, 200} and abs(summary["reward_mean"]) < 0.3
    assert summary["cumulative_regret"] == pytest.approx(2 * 200 * (1 - (1 + summary["reward_mean"]) / 2))
    line = one_error_line(run_cli("run", "agent=fixed", "env=bandit/magic", f"env.path={data}",
                                  "env.kwargs.reward=nope", f"logdir={logdir}", cwd=workdir))
    assert line.startswith("rlconf: error: env.kwargs.reward=nope") and "label" in line and "mushroom" in line
    assert "reward" in registry.KINDS


# -- the command line -------------------------------------------------------------------------------------
def test_variational_runs_on_mushroom_as_the_readme_says(run_cli, workdir, tmp_path):
    data = tmp_path / "agaricus-lepiota.data"
    write_mushroom(data, rows=100)
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=variational", "env=bandit/mushroom", f"env.path={data}", "steps=300",
                     f"logdir={logdir}", *FAST_RUN, "test_episodes=100", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 300 and sum(summary["arm_counts"]) == 300 and len(summary["arm_counts"]) == 2
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)["agent"]
    layers = sum(key.startswith("weights.") for key in state["networks"])
    assert len(state["rho"]) == 2 * layers and state["rho"][0].shape == state["networks"]["weights.0"].shape


def test_a_missing_env_path_is_one_line_naming_the_file_and_its_source(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    line = one_error_line(run_cli("run", "agent=variational", "env=bandit/covertype", f"logdir={logdir}", cwd=workdir))
    assert line.startswith("rlconf: error: env.path: not set") and uci.DATA_SETS["covertype"].source in line
    assert not logdir.exists() or not any(logdir.iterdir())  # nothing half-written


# -- the agents -------------------------------------------------------------------------------------------
def cumulative_regret(agent, env, pulls: int, seed: int) -> float:
    state, regret = env.reset(seed), 0.0
    for _ in range(pulls):
        state = env.step(agent.act(state))
        regret += float(env.pulls.regrets.sum())
    return regret


def test_fixed_always_pulls_its_arm_and_its_regret_is_the_gap_times_the_pulls():
    env = MultiArmedBandit("bernoulli", 3, kwargs={"probabilities": [0.2, 0.5, 0.8]}, seed=0)
    agent = build("fixed", env, arm=1)
    assert cumulative_regret(agent, env, 100, 0) == pytest.approx(3 * 100 * 0.3)
    assert (env.pulls.arms == 1).all() and agent.state_dict()["pulls"] == 100
    with pytest.raises(ConfigError) as error:
        build("fixed", env, arm=3)
    assert str(error.value) == "agent.arm=3: out of range; allowed: 0 to 2 (the env has 3 arms)"


def test_variational_kl_is_the_closed_form_and_sampling_follows_the_posterior():
    env = ContextualBandit("linear", 2, kwargs={"arms": 3, "features": 4}, seed=0)
    agent = build("variational", env, approximation=SMALL, prior_std=0.5, init_std=0.2)
    mu, std = agent.networks.parameter_list(), [torch.nn.functional.softplus(rho) for rho in agent.rho]
    assert torch.allclose(std[0], torch.full_like(std[0], 0.2))
    expected = sum(torch.distributions.kl_divergence(torch.distributions.Normal(m, s), torch.distributions.Normal(
        0.0, 0.5)).flatten(1).sum(1) for m, s in zip(mu, std, strict=True))
    torch.testing.assert_close(agent.kl(), expected)
    with torch.no_grad():
        draws = torch.stack([agent.sample()[0] for _ in range(300)])  # offsets from the means
    assert abs(float(draws.mean())) < 0.01 and abs(float(draws.std()) - 0.2) < 0.01
    contexts = env.problem.contexts(np.random.default_rng(0), 2).astype(np.float64)
    assert (agent.greedy(contexts) == agent.greedy(contexts)).all()  # the test agent: the posterior means


def test_variational_learns_a_bernoulli_bandit():
    """600 pulls of arms paying 1 with probability 0.2, 0.5, 0.8: regret below 120, where pulling at random
    costs 180 and the worst fixed arm 360 (seeds 0-5 measured 11-79)."""
    env = MultiArmedBandit("bernoulli", 1, kwargs={"probabilities": [0.2, 0.5, 0.8]}, seed=0)
    agent = build("variational", env, seed=0, approximation=SMALL)
    assert cumulative_regret(agent, env, 600, 0) < 120


def test_variational_learns_mushroom(tmp_path):
    """1,500 pulls of the Mushroom file: regret below 1,800, half of what passing every mushroom costs (about
    3,600: half of them are edible, 5 each) and a sixth of eating every one (about 11,000); seeds 0-5
    measured 535-1,265."""
    path = tmp_path / "agaricus-lepiota.data"
    write_mushroom(path)
    env = ContextualBandit("mushroom", 1, kwargs={"path": str(path)}, seed=0)
    agent = build("variational", env, seed=0, approximation=SMALL)
    assert cumulative_regret(agent, env, 1500, 0) < 1800


def test_dropout_draws_in_training_and_when_acting_if_asked_never_in_tests():
    env = ContextualBandit("linear", 1, kwargs={"arms": 3, "features": 4}, seed=0)
    contexts = env.problem.contexts(np.random.default_rng(0), 1).astype(np.float64)
    plain = build("neural_greedy", env, approximation={"hidden": [32, 32]})
    dropping = build("neural_greedy", env, approximation={"hidden": [32, 32]}, dropout_p=0.5, eval_with_dropout=True)
    np.testing.assert_array_equal(plain.predict(contexts, acting=True), plain.predict(contexts))
    acting = np.stack([dropping.predict(contexts, acting=True) for _ in range(20)])
    assert acting.std(0).min() > 0  # a fresh mask each time
    np.testing.assert_array_equal(dropping.predict(contexts), plain.predict(contexts))  # same weights, no mask
    for agent in (plain, dropping):  # training rounds run with the mask
        cumulative_regret(agent, env, 300, 0)
    assert dropping.rounds == plain.rounds == 5
    with pytest.raises(ConfigError, match=r"^agent.eval_with_dropout=True: .* set agent.dropout_p > 0$"):
        build("neural_greedy", env, eval_with_dropout=True)
    with pytest.raises(ConfigError, match=r"^agent.dropout_p=1.0: must lie in \[0, 1\)"):
        build("neural_greedy", env, dropout_p=1.0)
