"""What the ``rlconf`` command says about itself: its usage, each subcommand's help, and ``rlconf run --help``'s
table of config groups and top-level keys (read from the config folders and configs/config.yaml)."""

from __future__ import annotations

import re

import yaml

from rlconf.paths import config_dir
from rlconf.pipeline.groups import HIDDEN_GROUPS, IMPLICIT_GROUPS, REQUIRED_GROUPS, group_options, search_dirs
from rlconf.registry import choices

RUN_USAGE = "usage: rlconf run [-m] [--cfg {job,hydra,all}] [--config-dir DIR] [--hydra-help] key=value ..."
USAGE = f"""{RUN_USAGE}
       rlconf list [GROUP | components]
       rlconf check-env ID | module:Class [--plugins M,...]   (what rlconf makes of an environment)
       rlconf status DIR [--lines N]   (a run, a sweep, or a folder of them)
       rlconf eval RUN_DIR [--episodes N] [--seed S] [--device D] [--plugins M,...]
       rlconf watch RUN_DIR [--episodes N] [--video OUT.mp4] [--fps F] [--seed S] [--device D] [--plugins M,...]
       rlconf export RUN_DIR --format torchscript|onnx [--out FILE] [--checkpoint best|last|STEP]
       rlconf plot RUNS_DIR [--out FILE.png] [--aggregate] [--metric M] ... (rlconf plot --help)

Compose a run from config groups and train it:
  rlconf run agent=dqn env=classic/cartpole
  rlconf run agent=ppo env=classic/cartpole seed=3 steps=50000 logger=tensorboard
  rlconf run -m agent=dqn,ppo env=classic/cartpole seed=0,1,2
  rlconf run -m agent=dqn,ddqn env=classic/cartpole seed='range(5)' launcher=slurm
Continue a stopped run, or a sweep (finished runs are skipped):
  rlconf run resume=runs/<run dir>          rlconf run -m resume=runs/<sweep dir>
Evaluate a trained run's test agent again (eval.json), or watch it play (a window, or a video):
  rlconf eval runs/<run dir> --episodes 20  rlconf watch runs/<run dir> --video run.mp4
Export its greedy policy to act without rlconf (TorchScript, or ONNX for onnxruntime):
  rlconf export runs/<run dir> --format onnx
Plot learning curves across seeds; compare agents (IQM, bootstrap CIs, performance profiles):
  rlconf plot runs/<sweep dir> --aggregate  (writes plot.png and CSVs of its numbers there)

options:
  -m, --multirun        sweep over comma-separated values (Hydra's multirun)
  --cfg {{job,hydra,all}} print the composed config instead of running
  --config-dir DIR      add a folder of your own config groups (may repeat)
  -h, --help            this help (rlconf run --help: the config groups and the keys)
"""
RUN_HELP = f"""{RUN_USAGE}

Compose a run from config groups (GROUP=OPTION) and keys (key=value), check it, and train it:
  rlconf run agent=dqn env=classic/cartpole
  rlconf run agent=ppo env=classic/cartpole seed=3 steps=50000 logger=[csv,tensorboard]
  rlconf run agent=dqn env=atari/pong agent.lr=1e-4 hardware=gpu
  rlconf run -m agent=dqn,ppo env=classic/cartpole seed=0,1,2     (a sweep: a run per combination)
  rlconf run experiment=atari_pong_ppo                             (a whole setting by name: rlconf list experiment)
  rlconf run resume=runs/<run dir>                                 (go on from a stopped run's checkpoint)
  rlconf run rerun=runs/<run dir>                                  (a new run of a run's recorded config)

options:
  -m, --multirun        sweep over comma-separated values (Hydra's multirun)
  --cfg {{job,hydra,all}} print the composed config instead of running (job: every key of the run)
  --config-dir DIR      add a folder of your own config groups (may repeat)
  --hydra-help          Hydra's own help, and which of its flags rlconf run takes
  -h, --help            this help
"""
HYDRA_NOTE = """rlconf run is a Hydra application: it takes Hydra's overrides (key=value, +key=value, GROUP=OPTION,
sweeps such as seed=0,1,2 or range(5)) and, of the flags below, -m/--multirun, --cfg and --config-dir (which
may repeat); see the composed config with --cfg job (or hydra, all) where Hydra would use --info or --resolve.
Hydra's .hydra/ folder is not written: a run directory's config.yaml holds the resolved config, overrides.yaml
the overrides it was launched with, and a sweep directory's multirun.yaml Hydra's config of the sweep.
Hydra's own help follows.
"""


EVAL_USAGE = ("usage: rlconf eval RUN_DIR [--checkpoint best|last|STEP] [--episodes N] [--seed S] [--device D] "
              "[--plugins M,...]")
WATCH_USAGE = ("usage: rlconf watch RUN_DIR [--checkpoint best|last|STEP] [--episodes N] [--video OUT.mp4] [--fps F] "
               "[--seed S] [--device D] [--plugins M,...]")
CHECKPOINT_HELP = """  --checkpoint C  which weights: last (checkpoint.pt, the default), best (best.pt: the best
                  periodic evaluation's) or a step kept with checkpoint.keep=N (checkpoint-STEP.pt)"""
PLUGINS_HELP = """  --plugins M,... import these modules first: a run that was launched with plugins=[...] (or an agent
                given by import path) needs them named again; nothing from RUN_DIR is imported otherwise"""
EVAL_HELP = f"""{EVAL_USAGE}

Play a trained run's test agent again: the env, agent and body built from RUN_DIR/config.yaml, the weights
from RUN_DIR/checkpoint.pt. Prints mean ± std and writes RUN_DIR/eval.json. Without options it repeats the
run's final test, and reproduces summary.json's test return exactly. Another checkpoint's result goes to
RUN_DIR/eval-best.json or eval-STEP.json.
{CHECKPOINT_HELP}
  --episodes N  episodes to play (default: the run's test_episodes)
  --seed S      the episodes' seed (default: the final test's, the run's seed + 1000003)
  --device D    compute on D (cpu, cuda:0, ...) rather than on the run's hardware.device
{PLUGINS_HELP}"""
WATCH_HELP = f"""{WATCH_USAGE}

Watch a trained run's test agent play: in a window (needs a display), or into a video file.
{CHECKPOINT_HELP}
  --episodes N     episodes to play (default: 1)
  --video OUT.mp4  write one video of every episode (needs moviepy: pip install 'rlconf[video]')
  --fps F          frames per second (default: real time)
  --seed S         the episodes' seed (default: the run's final test's)
  --device D       compute on D rather than on the run's hardware.device
{PLUGINS_HELP}"""



LIST_USAGE = "usage: rlconf list [GROUP | components] [--config-dir DIR]"
LIST_HELP = f"""{LIST_USAGE}

Every option of every config group, each with the first sentence of its file's comment; with GROUP, that group's
options only (agents grouped by what they play and how they learn). `components` lists the registry instead:
agents, environment families, models, bodies, loggers, buffers and policies. Nothing is composed or built: it
answers at once.
  --config-dir DIR  add a folder of your own config groups (may repeat), as rlconf run takes it
"""
STATUS_USAGE = "usage: rlconf status DIR [--lines N]"
STATUS_HELP = f"""{STATUS_USAGE}

How the runs below DIR stand (a run directory, a sweep, or a folder of sweeps and single runs): each run queued,
running, done, failed or stopped, its steps and its last return, counted per sweep. A failed run shows the last
lines of its log. It reads the run directories as data and imports nothing from them.
  --lines N       how many lines of a failed run's log to show (default 5)
"""
EXPORT_USAGE = ("usage: rlconf export RUN_DIR --format torchscript|onnx [--out FILE] [--checkpoint best|last|STEP] "
                "[--group NAME] [--plugins M,...]")
EXPORT_HELP = f"""{EXPORT_USAGE}

Write a trained run's greedy test policy as one file that acts without rlconf: a TorchScript module
(torch.jit.load) or an ONNX graph (onnxruntime; needs pip install 'rlconf[export]'). It maps a batch of
observations to a batch of actions: the body's observation normalisation and masking, the networks, the
greedy choice, the clip to a continuous action space. What a body keeps per environment (Atari's frame
stack, a time feature) is the caller's to do: the command says how, and so does FILE.json, beside the file,
with the input and output shapes and dtypes. The file is checked against the policy before it is kept.
  --format F      torchscript or onnx
  --out FILE      where to write (default: RUN_DIR/policy.pt or policy.onnx; policy-best.onnx for --checkpoint best)
  --group NAME    a team's policy of that group of agents (needed where the team has several; default file
                  policy-NAME.onnx): it maps each agent's own observation (then its one-hot index in the
                  group, where the group's networks read one) to its action
{CHECKPOINT_HELP}
{PLUGINS_HELP}"""


def run_help(config_dirs: list[str]) -> str:
    """``rlconf run --help``: the usage, each config group with how many options it has (and a few of them),
    and the top-level keys with their defaults and what they do, read from configs/config.yaml."""
    groups = {g: o for g, o in group_options(search_dirs(config_dirs)).items()
              if g not in HIDDEN_GROUPS | IMPLICIT_GROUPS}
    width = max(map(len, groups))
    lines = [RUN_HELP, "config groups (GROUP=OPTION; rlconf list GROUP shows every option and what it is):"]
    for group, options in sorted(groups.items(), key=lambda item: (item[0] not in REQUIRED_GROUPS, item[0])):
        shown = choices(sorted(options), "option", room=110 - width).removeprefix("available: ")
        lines.append(f"  {group:<{width}}  {shown}")
    keys = top_level_keys()
    lines += ["", "keys (key=value) and their defaults; an env's family and the agent's preset may set others (a "
              "run's own: --cfg job):"]
    width = max(len(f"{key}={default}") for key, default, _ in keys)
    lines += [f"  {f'{key}={default}':<{width}}  {text}".rstrip() for key, default, text in keys]
    lines.append(f"  {'GROUP.KEY=VALUE':<{width}}  a key of a group's option: agent.lr=1e-4, hardware.n_envs=8")
    return "\n".join(lines)


def top_level_keys() -> list[tuple[str, str, str]]:
    """The keys of configs/config.yaml outside the config groups, as ``(key, default, description)``: its
    values and the comment written beside each (nested keys dotted: ``checkpoint.replay``)."""
    text = (config_dir() / "config.yaml").read_text()
    values = yaml.safe_load(text)
    keys, parent = [], ""
    for line in text.splitlines():
        match = re.match(r"^( *)([A-Za-z_]\w*):([^#]*)(?:#\s*(.*))?$", line)
        if not match:
            continue
        indent, key, value, comment = match.groups()
        if not indent:
            parent = "" if value.strip() else key
            if parent:
                continue
        elif not parent or parent in ("defaults", "hydra"):
            continue
        dotted = f"{parent}.{key}" if indent else key
        default = values[parent][key] if indent else values[key]
        keys.append((dotted, _yaml_value(default), (comment or "").strip().rstrip(";")))
    return keys


def _yaml_value(value) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return "[" + ",".join(map(_yaml_value, value)) + "]" if isinstance(value, list) else str(value)
