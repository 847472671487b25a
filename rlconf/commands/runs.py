"""The commands that read run and sweep directories: ``rlconf status`` and ``rlconf plot``, and those that play
a trained run's test agent again: ``eval``, ``watch`` and ``export``. What each needs (Hydra, numpy, matplotlib,
torch) is imported when it runs, so that ``rlconf list`` and a mistyped path are answered at once."""

from __future__ import annotations

from pathlib import Path

from rlconf.errors import RlconfError, UsageError


def status(directory: str, lines: int) -> int:
    """``rlconf status DIR``: how the runs of a sweep (or a run) are doing."""
    from rlconf.launch.status import print_status

    return print_status(Path(directory), lines)


def plot(args: list[str]) -> int:
    """``rlconf plot``: learning curves of the runs below a folder; with --aggregate the statistics comparing
    agents. Its options are its own (rlconf.analysis.command)."""
    from rlconf.analysis.command import plot as plot_runs

    return plot_runs(args)


def trained_run(path: str) -> str:
    """``path``, a run directory with a checkpoint: checked before torch is imported, so a mistyped path is
    answered at once."""
    from rlconf.experiments.rundir.directory import check_trained_run

    try:
        check_trained_run(path)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return path


def parse_episodes(value: str | None) -> int | None:
    """``--episodes N``: at least 1, and no more than this machine can keep the results of (rlconf.cost)."""
    from rlconf.cost import episodes_cost, refuse_unless_fits

    episodes = parse_count(value, "--episodes")
    if episodes is not None:
        refuse_unless_fits(episodes_cost("--episodes", episodes))
    return episodes


def parse_fps(value: str | None) -> float | None:
    """``--fps F``: frames per second, above 0 and at most 1000."""
    try:
        fps = None if value is None else float(value)
    except ValueError:
        fps = 0.0
    if fps is not None and not 0 < fps <= 1000:
        raise UsageError(f"--fps {value}: must be frames per second, a number above 0")
    return fps


def parse_count(value: str | None, name: str, minimum: int = 1, maximum: int | None = None) -> int | None:
    """An option's integer value (None when not given): a bad one is the user's input, one line."""
    if value is None:
        return None
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise UsageError(f"{name} {value}: must be an integer >= {minimum}")
    if maximum is not None and int(value) > maximum:
        raise UsageError(f"{name} {value}: must be an integer from {minimum} to {maximum:,}")
    return int(value)


def parse_seed(value: str | None) -> int | None:
    """``--seed S``: the range of the ``seed=`` key (rlconf.schema.MAX_SEED), which numpy and the simulators take."""
    from rlconf.schema import MAX_SEED

    return parse_count(value, "--seed", minimum=0, maximum=MAX_SEED)


def evaluate(run_dir: str, episodes: int | None, seed: int | None, device: str | None, plugins: list[str],
             which: str) -> int:
    """``rlconf eval``: the test agent played again, its line printed, then eval.json written (a full disk is
    said in one line, exit status 1: the episodes were played, their result was not kept)."""
    from rlconf.experiments.playback.play import eval_line, evaluate_run, write_eval
    from rlconf.files import write_failure

    result = evaluate_run(run_dir, episodes, seed, device, plugins, which)
    print(eval_line(result), flush=True)  # first: the episodes were played whether or not eval.json can be kept
    try:
        write_eval(result)
    except OSError as error:
        raise RlconfError(f"{write_failure(error)}; the result above was not kept", exit_status=1) from None
    return 0


def watch(run_dir: str, episodes: int, video: str | None, fps: float | None, seed: int | None,
          device: str | None, plugins: list[str], which: str) -> int:
    """``rlconf watch``: the test agent playing, in a window or into a video."""
    from rlconf.experiments.playback.play import watch_line, watch_run

    result = watch_run(run_dir, episodes, video, fps, seed, device, plugins, which)
    print(watch_line(result, episodes))
    return 0


def export(run_dir: str, fmt: str, out: str | None, which: str, plugins: list[str], group: str | None = None) -> int:
    """``rlconf export``: the greedy policy as a TorchScript module or an ONNX graph, and a line saying how to
    feed it. A full disk or a read-only folder is bad input (exit status 2): nothing half-written is left."""
    from rlconf.experiments.playback.export import export_run
    from rlconf.files import write_failure

    try:
        exported = export_run(run_dir, fmt, out, which, plugins, group)
    except OSError as error:
        raise UsageError(write_failure(error)) from None
    print(export_line(exported))
    return 0


def export_line(exported: dict) -> str:
    def shape(part: dict) -> str:
        return f"{part['dtype']} [{', '.join(map(str, part['shape']))}]"

    # One observation input, or one a key of a Dict or Tuple observation; then the action mask where there is one.
    inputs = [f"observation {shape(exported['input'])}"] if "input" in exported else \
        [f"{part['name']} {shape(part)}" for part in exported["inputs"]]
    if "action_mask" in exported:
        inputs.append(f"action_mask {shape(exported['action_mask'])}")
    # R2D1's previous action and reward (agent.prev_action_reward), then a recurrent policy's state: inputs after
    # those, the state returned after the action, each fed back by the caller.
    previous = exported.get("previous", {"inputs": []})
    state = exported.get("state", {"inputs": [], "outputs": []})
    inputs += [f"{part['name']} {shape(part)}" for part in (*previous["inputs"], *state["inputs"])]
    outputs = [f"action {shape(exported['output'])}", *(part["name"] for part in state["outputs"])]
    checked = f"{exported['checked_observations']} observations" + (
        f" x {exported['checked_steps']} steps" if "checked_steps" in exported else "")
    feeding = "".join(f"; feed it: {how}" for how in exported["feeding"])
    for fed in (previous, state):
        if fed["inputs"]:
            feeding += f"; feed {', '.join(part['name'] for part in fed['inputs'])}: {fed['start']}"
    return (f"{exported['agent']} {exported['env']} at step {exported['checkpoint_step']:,}: {exported['format']} "
            f"policy, {', '.join(inputs)} -> {', '.join(outputs)}, the same actions as the policy on {checked} "
            f"-> {exported['file']}{feeding}")
