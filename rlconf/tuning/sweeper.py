"""rlconf's Optuna sweeper (``hydra/sweeper: rlconf_optuna``; the sweep configs ``sweep=optuna_*``).

Trials are asked of the study in the sweep directory (``rlconf.tuning.study``) ``n_jobs`` at a time, each
given to the launcher as a job of overrides: the trial's values, and ``trial.*``, which tell the run where
its trial is, so that it reports each periodic evaluation and stops when the pruner says so (in its own
process, on any node: ``rlconf.tuning.trial``). A job returns its run's summary; the trial is told its final
test return, PRUNED (the run ended pruned), or FAIL.

Launched again into the same sweep directory (``rlconf run -m resume=SWEEP_DIR``) the study continues: the
trials an interruption left running are asked again with the same values (the same run directories: their
runs resume from their checkpoints, or are skipped when they had finished), and only the trials still
missing from ``n_trials`` are run.

This module imports optuna only when a sweep starts: Hydra imports the plugin whenever it starts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from rlconf.errors import TuningError, reported
from rlconf.text import counted
from rlconf.tuning.sweeper_config import DIRECTIONS, RESULTS_FILE

OLD_STUDY_FILE = "optuna.db"  # where hydra-optuna-sweeper kept a sweep's study (SQLite)


def check_settings(sweeper: dict[str, Any], arguments: list[str], run: dict[str, Any]):
    """The sweeper's settings (``hydra.sweeper``, resolved) checked with the runs' ``run`` keys (steps,
    eval_every, test_episodes, hardware.learners); returns the search space. A TuningError names what is wrong."""
    from rlconf.tuning.space import search_space
    from rlconf.tuning.study import make_pruner, make_sampler

    if sweeper["direction"] not in DIRECTIONS:
        raise TuningError(f"hydra.sweeper.direction={sweeper['direction']}: allowed: {', '.join(DIRECTIONS)}")
    for key in ("n_trials", "n_jobs"):
        if sweeper[key] < 1:
            raise TuningError(f"hydra.sweeper.{key}={sweeper[key]}: must be at least 1")
    make_sampler(sweeper["sampler"]["name"], sweeper["sampler"]["seed"], 0)
    pruner = sweeper["pruner"]
    make_pruner(pruner, sweeper["pruner_args"] or {}, run["steps"], run["eval_every"])
    if pruner is not None and run["eval_every"] == 0:
        raise TuningError(f"hydra.sweeper.pruner={pruner}: the runs evaluate nothing to prune on (eval_every=0); "
                          "allowed: eval_every > 0, or hydra.sweeper.pruner=null")
    if pruner is not None and run["learners"] > 1:
        raise TuningError(f"hydra.sweeper.pruner={pruner}: hardware.learners={run['learners']} would have to stop "
                          "together; allowed: hardware.learners=1, or hydra.sweeper.pruner=null")
    if run["test_episodes"] == 0:
        raise TuningError("test_episodes=0: an Optuna sweep maximises the final test return; allowed: test_episodes "
                          "of 1 or more")
    space = search_space(sweeper["params"], arguments)
    if not space.dimensions:
        raise TuningError("hydra.sweeper.params: nothing to search; give keys choice(...), range(...) or "
                          "interval(...) (e.g. agent.lr='tag(log, interval(1e-5, 1e-2))')")
    for i, values in enumerate(sweeper["enqueue"]):
        _check_enqueued(i, values, space)
    return space


def _check_enqueued(index: int, values: Any, space) -> None:
    from optuna.distributions import CategoricalDistribution

    where = f"hydra.sweeper.enqueue[{index}]"
    if not isinstance(values, dict):
        raise TuningError(f"{where}={values}: a mapping of searched keys to values")
    for key, value in values.items():
        if key not in space.dimensions:
            raise TuningError(f"{where}.{key}: not a searched key; allowed: {', '.join(space.dimensions)}")
        d = space.dimensions[key].distribution
        inside = (value in d.choices if isinstance(d, CategoricalDistribution) else
                  isinstance(value, (int, float)) and not isinstance(value, bool) and d.low <= value <= d.high)
        if not inside:
            raise TuningError(f"{where}.{key}={value}: outside the search space of {key}")


class StudySweeper(Sweeper):
    """Hydra's sweeper interface: ``setup``, then ``sweep`` with the command line's overrides."""

    def __init__(self, **settings: Any) -> None:
        self.settings = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
                         for k, v in settings.items()}
        self.config: DictConfig | None = None
        self.launcher = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(config=config, hydra_context=hydra_context,
                                                                task_function=task_function)

    def sweep(self, arguments: list[str]) -> None:
        from rlconf.tuning.study import quiet, study_path

        assert self.config is not None and self.launcher is not None
        quiet()
        s, config = self.settings, self.config
        with reported():  # rlconf run checks them before Hydra starts; here for those who start Hydra otherwise
            space = check_settings(s, arguments, {"steps": config.steps, "eval_every": config.eval_every,
                                                  "test_episodes": config.test_episodes,
                                                  "learners": config.hardware.learners})
        sweep_dir = Path(str(config.hydra.sweep.dir))
        with reported():
            if (sweep_dir / OLD_STUDY_FILE).exists() and not study_path(sweep_dir).exists():
                raise TuningError(f"{sweep_dir}: its study is {OLD_STUDY_FILE}, from hydra-optuna-sweeper (rlconf's "
                                  "sweeper before Optuna 4), which this sweeper cannot continue; its finished runs "
                                  "stay there (sweep.csv); start a new sweep")
            sweep_dir.mkdir(parents=True, exist_ok=True)
            path = study_path(sweep_dir)
            # Before anything of the sweep directory is written: a study refused leaves it as it was.
            store, study, new = _open_study(path, s)
            check_trials(study, space, path)
        # As Hydra's basic sweeper does: the sweep's config and command line, which resume=SWEEP_DIR reads.
        OmegaConf.save(config, sweep_dir / "multirun.yaml")
        if new:
            for values in s["enqueue"]:
                study.enqueue_trial(values)
        Launch(self, study, store, space, path).all()

    def launch(self, overrides: list[list[str]], first: int) -> list[JobReturn]:
        assert self.launcher is not None
        return list(self.launcher.launch(overrides, initial_job_idx=first))

    def summary(self) -> None:
        """The closing table of the sweep's runs, printed once when its trials have ended (the plugin class
        prints rlconf's launchers' table, held back from each batch)."""

    @property
    def quiet(self) -> bool:
        return bool(self.config is not None and self.config.get("quiet"))


def _open_study(path: Path, s: dict[str, Any]):
    """The study in ``path`` (made when new): its storage, the study, and whether it is new. A journal whose
    operations Optuna cannot replay (a line that parses but says nothing Optuna wrote) is a TuningError."""
    import optuna

    from rlconf.errors import first_line
    from rlconf.tuning.study import exists, make_sampler, storage

    try:
        store = storage(path)
        new = not exists(store, s["study_name"])
        before = 0 if new else len(store.get_all_trials(store.get_study_id_from_name(s["study_name"])))
        sampler = make_sampler(s["sampler"]["name"], s["sampler"]["seed"], before)
        # A study that exists is loaded, not created again: Optuna's create_study(load_if_exists=True) would
        # append an operation to the journal before it has been checked (check_trials).
        study = optuna.create_study(storage=store, study_name=s["study_name"], direction=s["direction"],
                                    sampler=sampler) if new else optuna.load_study(
            study_name=s["study_name"], storage=store, sampler=sampler)
    except TuningError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        raise TuningError(f"{path}: not a journal of an Optuna study ({first_line(error)}); a study's journal is "
                          "written by its sweep only: restore it, or start a new sweep") from None
    return store, study, new


def check_trials(study, space, path: Path) -> None:
    """Every trial the sweep would run from its journal (one an interruption left running, asked again with
    its values; one enqueued and waiting, with its fixed values) holds values of the sweep's own search space:
    the journal is a file of the sweep directory, and a crafted trial would otherwise train with any value."""
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        fixed = trial.system_attrs.get("fixed_params") or {}
        if not isinstance(fixed, dict):
            raise TuningError(f"{path}: trial {trial.number}: its fixed values are not a mapping")
        space.check_values({**fixed, **trial.params}, f"{path}: trial {trial.number}")


class Launch:
    """One launch of a sweep: the trials still to run, asked, launched and told in batches of ``n_jobs``."""

    def __init__(self, sweeper: StudySweeper, study, store, space, path: Path):
        self.sweeper, self.study, self.store, self.space, self.path = sweeper, study, store, space, path
        self.settings = sweeper.settings
        self.launched = 0
        self.failed = 0

    def all(self) -> None:
        from optuna.trial import TrialState

        trials = self.study.get_trials(deepcopy=False)
        ended = sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) for t in trials)
        # Trials an interruption left running: asked again first, with their values (and run directories).
        again = [t.number for t in trials if t.state == TrialState.RUNNING]
        left = self.settings["n_trials"] - ended
        if again and left > 0:
            self.say(f"rlconf: study {self.path}: {counted(ended, 'trial')} ended; asking again the {len(again)} an "
                     f"interruption left running (trial {', '.join(map(str, again))})")
        while left > 0:
            size = min(left, self.settings["n_jobs"])
            batch = [self._asked_again(again.pop(0)) for _ in range(min(size, len(again)))]
            batch += [self.study.ask() for _ in range(size - len(batch))]
            left -= size
            self._run(batch, last=left <= 0)
        self.sweeper.summary()
        self._finish()

    def _asked_again(self, number: int):
        import optuna

        study_id = self.store.get_study_id_from_name(self.study.study_name)
        return optuna.Trial(self.study, self.store.get_trial_id_from_study_id_trial_number(study_id, number))

    def _run(self, batch: list, last: bool) -> None:
        """Launch a batch of trials (the launcher returns when their runs have ended) and tell the study; a
        line of the study's counts after each batch but the last (the closing line says them then)."""
        jobs = [self.space.overrides(self._draw(trial)) + self._trial_overrides(trial) for trial in batch]
        returns = self.sweeper.launch(jobs, self.launched)
        self.launched += len(jobs)
        for trial, result in zip(batch, returns, strict=True):
            self._tell(trial, result)
        if not last:
            self.say(f"rlconf: study: {self._counts()}{self._best()}")

    def _draw(self, trial) -> dict[str, Any]:
        """The trial's value of every searched key: drawn now, or the value it was given (a trial asked again,
        an enqueued one)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution

        values = {}
        for key, dimension in self.space.dimensions.items():
            d = dimension.distribution
            try:
                if isinstance(d, CategoricalDistribution):
                    values[key] = trial.suggest_categorical(key, d.choices)
                elif isinstance(d, FloatDistribution):
                    values[key] = trial.suggest_float(key, d.low, d.high, step=d.step, log=d.log)
                else:
                    values[key] = trial.suggest_int(key, d.low, d.high, step=d.step, log=d.log)
            except ValueError as error:  # a trial asked again after its key's space changed
                print(f"rlconf: error: trial {trial.number}: {key}: {error} (the search space changed since it "
                      "was asked; keep it, or start a new sweep)", file=sys.stderr)
                raise SystemExit(2) from None
        return values

    def _trial_overrides(self, trial) -> list[str]:
        """Where the run finds its trial (the ``trial`` keys: placement, so not part of its directory's name)."""
        s = self.settings
        overrides = [f"trial.storage={_quoted(str(self.path))}", f"trial.study={_quoted(s['study_name'])}",
                     f"trial.number={trial.number}", f"trial.pruner={s['pruner'] or 'null'}"]
        if s["pruner_args"]:  # as a mapping: the run's defaults depend on its own steps and eval_every
            overrides.append("trial.pruner_args={" + ",".join(f"{k}:{_text(v)}" for k, v in s["pruner_args"].items())
                             + "}")
        return overrides

    def _tell(self, trial, result: JobReturn) -> None:
        """The trial's outcome: its run's final test return, pruned, or failed (its run's line was printed)."""
        from optuna.trial import TrialState

        summary = result.return_value if result.status == JobStatus.COMPLETED else None
        if not isinstance(summary, dict):
            self.failed += 1
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            return
        if summary.get("run_dir"):
            trial.set_user_attr("run", Path(summary["run_dir"]).name)
        if summary.get("state") == "pruned":  # Optuna records its last reported value
            self.study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)
        elif summary.get("test_return_mean") is None:
            self.failed += 1
            print(f"rlconf: trial {trial.number}: {summary.get('run_dir')} has no test return", file=sys.stderr)
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        else:
            self.study.tell(trial, float(summary["test_return_mean"]), skip_if_finished=True)

    def _counts(self) -> str:
        from optuna.trial import TrialState

        trials = self.study.get_trials(deepcopy=False)
        counts = {state.name.lower(): sum(t.state == state for t in trials)
                  for state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)}
        return (f"{len(trials)} of {self.settings['n_trials']} trials" +
                "".join(f", {n} {name.replace('fail', 'failed')}" for name, n in counts.items() if n))

    def _best(self) -> str:
        best = self._best_trial()
        if best is None:
            return ""
        values = ", ".join(f"{k}={v}" for k, v in best.params.items())
        return f"; best {best.value:.1f}: trial {best.number} ({values}) {best.user_attrs.get('run', '')}".rstrip()

    def _best_trial(self):
        try:
            return self.study.best_trial
        except ValueError:  # no trial has completed
            return None

    def _finish(self) -> None:
        """optimization_results.yaml (the best trial, every trial's state), the closing line, and exit status 1
        when a trial of this launch failed."""
        from rlconf.files import write_text

        sweep_dir = self.path.parent
        best = self._best_trial()
        results = {"name": "optuna", "study": self.study.study_name, "storage": str(self.path),
                   "direction": self.settings["direction"],
                   "trials": {t.number: t.state.name.lower() for t in self.study.get_trials(deepcopy=False)}}
        if best is not None:
            results |= {"best_trial": best.number, "best_value": best.value, "best_params": best.params,
                        "best_run": best.user_attrs.get("run")}
        # Replaced whole, never written through a link a crafted sweep directory holds in its place.
        write_text(sweep_dir / RESULTS_FILE, OmegaConf.to_yaml(OmegaConf.create(results)))
        self.say(f"rlconf: study {self.path}: {self._counts()}{self._best()}; results: {sweep_dir / RESULTS_FILE}")
        if self.failed:
            print(f"rlconf: {self.failed} of {self.launched} trials failed; see: rlconf status {sweep_dir}",
                  file=sys.stderr)
            raise SystemExit(1)

    def say(self, line: str) -> None:
        if not self.sweeper.quiet:
            print(line, file=sys.stderr, flush=True)


def _quoted(text: str) -> str:
    """``text`` as a quoted value of a Hydra override (a path may hold spaces, commas or brackets)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _text(value: Any) -> str:
    """A pruner argument as a value of a Hydra override."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value) if isinstance(value, (int, float)) else _quoted(str(value))
