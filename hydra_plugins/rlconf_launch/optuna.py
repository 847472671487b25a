"""rlconf's Optuna sweeper: Hydra's, with a study that survives an interrupted sweep.

The study lives in ``optuna.db`` (SQLite) in the sweep directory. Launched again into the same sweep
directory (``rlconf run -m ... resume=SWEEP_DIR``), the sweep continues: trials that were running when it
was interrupted are asked again with the same parameters, so their runs resume from their checkpoints, and
only the trials still missing from ``n_trials`` are run.

Present only when hydra-optuna-sweeper is installed (``pip install 'rlconf[optuna]'``). No ``from __future__
import annotations`` here: Hydra runs this module before registering it, and dataclasses then cannot resolve
string annotations.
"""

from pathlib import Path
from typing import Any

try:
    from hydra_plugins.hydra_optuna_sweeper.optuna_sweeper import OptunaSweeper as _OptunaSweeper
except ImportError:  # the optional extra is not installed: no sweeper
    _OptunaSweeper = None


if _OptunaSweeper is not None:
    from dataclasses import dataclass

    from hydra.core.config_store import ConfigStore
    from hydra_plugins.hydra_optuna_sweeper.config import OptunaSweeperConf

    @dataclass
    class RlconfOptunaSweeperConf(OptunaSweeperConf):
        _target_: str = "hydra_plugins.rlconf_launch.optuna.OptunaSweeper"
        storage: Any = "sqlite:///${hydra.sweep.dir}/optuna.db"
        study_name: Any = "rlconf"

    class OptunaSweeper(_OptunaSweeper):
        def sweep(self, arguments: list[str]) -> None:
            from omegaconf import OmegaConf

            impl = self.sweeper
            sweep_dir = Path(str(impl.config.hydra.sweep.dir))
            sweep_dir.mkdir(parents=True, exist_ok=True)  # for the SQLite file
            # As Hydra's basic sweeper does: the sweep's config and command line, for resume=SWEEP_DIR.
            OmegaConf.save(impl.config, sweep_dir / "multirun.yaml")
            n_trials = _continue_study(impl.storage, impl.study_name, impl.n_trials)
            if n_trials < impl.n_trials and hasattr(impl.sampler, "reseed_rng"):
                # A sampler seeded as in the first launch would propose the first trials' parameters again
                # (whose runs are done, so they would be skipped and counted): continue from fresh draws.
                impl.sampler.reseed_rng()
            impl.n_trials = n_trials
            return impl.sweep(arguments)

    def _continue_study(storage: str | None, study_name: str | None, n_trials: int) -> int:
        """Re-ask the trials an interrupted sweep left running; return how many trials are still to run."""
        import optuna

        if storage is None:
            return n_trials
        try:
            study = optuna.load_study(study_name=study_name, storage=storage)
        except KeyError:  # a new study
            return n_trials
        TrialState = optuna.trial.TrialState
        done = [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)]
        for trial in study.trials:
            if trial.state == TrialState.RUNNING:  # its run may have a checkpoint: ask the same again
                study.enqueue_trial(trial.params)
                study.tell(trial.number, state=TrialState.FAIL)
        return max(0, n_trials - len(done))

    ConfigStore.instance().store(group="hydra/sweeper", name="rlconf_optuna", node=RlconfOptunaSweeperConf,
                                 provider="rlconf")
