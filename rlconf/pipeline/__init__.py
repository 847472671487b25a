"""One validation pipeline, compose -> check -> plan, used alike by the command line, ``rlconf.compose`` and
``rlconf.train``, the launchers and the sweeper. Bad input fails in one of its steps, as one ``ConfigError``
line, before anything is written.

- ``overrides``: the overrides typed (what Hydra's parser would refuse), merged with a ``resume=``'s or
  ``rerun=``'s saved ones
- ``check``: every value a run or a sweep will use composed (``rlconf.config.compose``) and validated
  (``rlconf.config.validate``, which reads the registry's specs; a launcher validates each job's config so too)
- ``plan``: the launcher's and the sweeper's settings (``rlconf.launch.launcher_config.check``,
  ``rlconf.tuning.sweeper.check_settings``, which the sweeper calls again when Hydra is started otherwise), a
  sweep's directory, and the hand-over to Hydra, whose job runs ``rlconf.experiments.run.run``
- ``compose``: one run's config from Python, with the overrides it was composed from
- ``groups``: the config groups on disk and their options

Nothing here imports Hydra, omegaconf or torch at import time: ``rlconf list`` stays fast.
"""

from rlconf.pipeline.check import Checked, check_run
from rlconf.pipeline.compose import compose_run, recorded_overrides
from rlconf.pipeline.groups import applied_preset
from rlconf.pipeline.plan import drop_if_empty, launch, run_job, with_sweep_dir

__all__ = ["Checked", "applied_preset", "check_run", "compose_run", "drop_if_empty", "launch",
           "recorded_overrides", "run_job", "with_sweep_dir"]
