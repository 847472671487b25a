"""A run's side of a sweep's trial: each periodic evaluation's mean return reported to the study at its step,
and the pruner's verdict. The experiment loop calls a ``TrialReporter`` after each evaluation
(its callback ``loop.bookkeeping.Pruning``); a run outside an Optuna sweep has none, and never imports optuna."""

from __future__ import annotations

from typing import Any

from rlconf.tuning.study import make_pruner, quiet, trial


class TrialReporter:
    """Trial ``number`` of the study ``study`` in the journal ``storage``; ``pruner`` (and its ``pruner_args``)
    as the sweeper was given them, with defaults from the run's ``steps`` and ``eval_every``.

    A trial that has ended already (a run of a finished sweep resumed on its own) is left as it is: the run goes
    on, reporting nothing. Steps reported before (an attempt that was stopped and resumed from a checkpoint
    evaluates them again) are not reported twice. The run's last evaluation (none follows before its budget of
    ``steps``) is reported and never pruned: the run has spent its budget, and its final test is the trial's value."""

    def __init__(self, storage: str, study: str, number: int, pruner: str | None, pruner_args: dict[str, Any] | None,
                 steps: int, eval_every: int):
        import optuna

        quiet()
        self.trial, frozen = trial(storage, study, number, make_pruner(pruner, pruner_args or {}, steps, eval_every))
        self.active = frozen.state == optuna.trial.TrialState.RUNNING
        self.reported = set(frozen.intermediate_values)
        self.steps, self.eval_every = steps, eval_every

    def __call__(self, steps: int, mean_return: float) -> bool:
        """Report an evaluation; True when the pruner says the run should stop here."""
        if not self.active:
            return False
        if steps not in self.reported:
            self.trial.report(mean_return, steps)
            self.reported.add(steps)
        return not self.last(steps) and self.trial.should_prune()

    def last(self, steps: int) -> bool:
        """Whether the evaluation at ``steps`` is the run's last: the one due at the last multiple of eval_every
        within the budget (copies stepping together may overshoot it by a few steps), or any after it."""
        return self.eval_every > 0 and steps >= self.steps // self.eval_every * self.eval_every
