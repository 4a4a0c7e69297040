"""Config tooling: where the configs live, composing them outside ``@hydra.main``, and what a run
records about its composition (Hydra's group choices, the command as typed).

- :data:`CONFIG_DIR`: the repository's configs/, or their copy inside an installed wheel
  (softmax_zoo/configs; ``train.py``'s ``@hydra.main`` reads it too).
- :func:`compose`: configs/train.yaml + overrides, for tests and notebooks, with Hydra's runtime
  (``${hydra:runtime.choices...}``, :func:`hydra_choices`) set as in a real run.
- :func:`compose_option`: one option of a config group (``loss``, ``loss/sampler``) composed alone,
  its ``defaults:`` list included (``softmax_zoo.hf.use_head`` builds heads from them).
- :func:`unknown_key_hint`: the valid keys when a command-line override names one that does not exist;
  :func:`unknown_name`: the message for an unknown name, listing the valid ones and the closest.
- :func:`command_line`, :func:`hydra_choices`: what :func:`softmax_zoo.records.make_record` keeps.
- :func:`run_id`: the one rule that names runs (parts + the overrides they do not name);
  :func:`run_name`: the name a job of given overrides gets (make: ``python -m softmax_zoo.config
  run_name|output_dir <overrides>``; reports: ``run_name(record["job"]["overrides"])``).
- :func:`register`: what Hydra needs before it composes, registered by an explicit call (importing
  this module registers nothing): :func:`compose` calls it, and ``python -m softmax_zoo.train`` before
  ``@hydra.main`` composes (a submitit job gets both registries with Hydra's own state). It is
  :func:`register_resolvers` and :func:`register_families`:

  - each task family's file (<config folder>/families/<family>.yaml) as the Hydra configs
    ``family/<family>`` and ``family_scale/<family>_<scale>``, from every folder a composition reads
    (:func:`config_sources`: the primary one and each ``hydra.searchpath`` folder;
    :func:`command_line_sources` for a command line);
  - the resolvers the configs use: ``${zoo.run_id:[parts],[named]}`` (:func:`job_run_id`), ``${zoo.name_excluded:}``
    (the keys no run name holds, :mod:`softmax_zoo.run_identity`),
    ``${zoo.run_of:changes...}`` (another job's name, :func:`run_of`), ``${zoo.group:...}`` (:func:`run_group`),
    ``${zoo.results_dir:...}`` (:func:`results_dir`) and ``${zoo.epoch_checkpoint:...}`` (:func:`epoch_checkpoint`).
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import hashlib
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from .run_identity import name_excluded


def _config_dir() -> Path:
    """The package's own configs/ where a wheel installed it (``setup.py`` ships them), else the repository's."""
    package = Path(__file__).resolve().parent
    shipped = package / "configs"
    return shipped if shipped.is_dir() else package.parents[1] / "configs"


CONFIG_DIR = _config_dir()
# Record key -> Hydra config group: the choices every record keeps (None: group not chosen).
CHOICE_GROUPS = {
    "task": "task",
    "model": "model",
    "loss": "loss",
    "sampler": "loss/sampler",
    "scale": "scale",
    "experiment": "experiment",
    "start": "start",
}


def compose(overrides: list[str] = (), config_dir: str | Path | None = None) -> DictConfig:
    """Compose configs/train.yaml with ``overrides`` outside ``@hydra.main`` (tests, notebooks).

    The ``${hydra:runtime.choices...}`` interpolations of the config resolve as in a real run, and
    :func:`hydra_choices` gives this composition's choices.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    register(config_sources(config_dir, overrides))
    with initialize_config_dir(config_dir=str(config_dir or CONFIG_DIR), version_base="1.3"):
        cfg = hydra_compose("train", overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


GIVEN_OPTION = "_given"  # the name a config handed to compose_option is stored under while it is composed


def compose_option(group: str, option: str | dict, config_dir: str | Path | None = None) -> dict[str, Any]:
    """The option ``option`` of the config group ``group`` composed alone, as a plain resolved dict.

    Args:
        group: a config group, e.g. ``"loss"`` or ``"loss/sampler"``.
        option: the name of ``configs/<group>/<name>.yaml``, or a config (a dict) whose ``defaults:``
            list names options relative to ``group`` as a file there would (``- sampler: uniform``
            in a loss config: configs/loss/sampler/uniform.yaml).
        config_dir: the config folder (default: the repository's configs/).

    Raises:
        ValueError: ``option`` (or an option its defaults list names) is not in its group; the
            message lists the group's options (:func:`unknown_name`).

    The caller's Hydra state (a running ``@hydra.main`` app, an earlier :func:`compose`) is restored afterwards.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.errors import MissingConfigException

    config_dir = str(config_dir or CONFIG_DIR)
    name = option if isinstance(option, str) else GIVEN_OPTION
    with _hydra_state_kept(), initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        if not isinstance(option, str):
            ConfigStore.instance().store(group=group, name=GIVEN_OPTION, node=dict(option))
        try:
            cfg = hydra_compose(None, overrides=[f"+{group}={name}"])
        except MissingConfigException as e:
            missing = (e.missing_cfg_file or "").rsplit("/", 1)
            options = group_options(missing[0] if len(missing) == 2 else group, config_dir)
            raise ValueError(unknown_name(f"{missing[0] if len(missing) == 2 else group} option", missing[-1], options)) from e
        finally:
            _unstore(group, GIVEN_OPTION)
    return OmegaConf.to_container(OmegaConf.select(cfg, group.replace("/", ".")), resolve=True)


def group_options(group: str, config_dir: str | Path | None = None) -> list[str]:
    """The option names of the config group ``group`` (``"loss/sampler"``: quadratic, ..., unigram), sorted."""
    folder = Path(config_dir or CONFIG_DIR) / group
    return sorted(p.stem for p in folder.glob("*.yaml"))


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> str:
    """The message for an unknown ``name``: "unknown sampler 'unigramm' (did you mean 'unigram'?); valid: ...".

    The suggestion is the closest valid name (:func:`difflib.get_close_matches`), left out when none is close.
    """
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {kind} {name!r}{hint}; valid: {', '.join(valid)}"


@contextlib.contextmanager
def _hydra_state_kept() -> Iterator[None]:
    """Clear Hydra's global state for a composition, restoring the caller's (its app, its HydraConfig) afterwards."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    saved_cfg, saved_hydra = HydraConfig.instance().cfg, GlobalHydra.instance().hydra
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        HydraConfig.instance().cfg, GlobalHydra.instance().hydra = saved_cfg, saved_hydra


def _unstore(group: str, name: str) -> None:
    """Remove ``<group>/<name>`` from Hydra's ConfigStore (where it is absent: nothing)."""
    from hydra.core.config_store import ConfigStore

    node = ConfigStore.instance().repo
    for part in group.split("/"):
        node = node.get(part, {})
    node.pop(f"{name}.yaml", None)


def hydra_choices() -> dict[str, str | None]:
    """Hydra's choice for each group of :data:`CHOICE_GROUPS` (``{"loss": "sparse_softmax", "sampler": None, ...}``).

    Empty outside a Hydra run or :func:`compose` (nothing is known about the composition).
    """
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return {}
    choices = HydraConfig.get().runtime.choices
    return {key: choices.get(group) for key, group in CHOICE_GROUPS.items()}


def hydra_job() -> dict[str, Any]:
    """The Hydra job of this run: ``{"mode": "RUN"|"MULTIRUN", "overrides": [...], "sweep_dir", "job_num"}`` ({} outside Hydra).

    ``sweep_dir`` (the multirun's folder, one per launch) and ``job_num`` are None for a single run.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return {}
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    return {
        "mode": "MULTIRUN" if multirun else "RUN",
        "overrides": [o.replace("\\{", "{").replace("\\}", "}") for o in hc.overrides.task],
        "sweep_dir": str(Path(hc.sweep.dir).absolute()) if multirun else None,
        "job_num": hc.job.get("num") if multirun else None,
    }


def command_line() -> list[str]:
    """The command as typed: ``python -m softmax_zoo.train`` + the Hydra overrides (sys.argv otherwise)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return list(sys.argv)
    prefix = ["python", "-m", "softmax_zoo.train"] if sys.argv[0].endswith("train.py") else [sys.argv[0]]
    # Hydra escapes interpolations in a job's overrides (run_name=k$\{loss.k\}); show them as typed.
    return prefix + [o.replace("\\{", "{").replace("\\}", "}") for o in HydraConfig.get().overrides.task]


def unknown_key_hint(overrides: list[str], config_dir: str | Path | None = None) -> str | None:
    """For command-line ``a.b.c=v`` overrides naming keys that do not exist, list the valid keys.

    Hydra already lists the valid choices of an unknown group option (``loss=nope``); for an
    unknown key it only says "not in struct". Returns None when every key exists (or the group
    choices themselves do not compose).
    """
    config_dir = Path(config_dir or CONFIG_DIR)
    groups = {str(p.relative_to(config_dir)) for p in config_dir.rglob("*") if p.is_dir()} | set(FAMILY_GROUPS.values())
    group_args, keys = [], []
    for arg in overrides:
        if arg.startswith(("-", "+", "~", "hydra")) or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        if key.split("@")[0] in groups:
            group_args.append(f"{key}={value.split(',')[0]}")  # a sweep: the first choice is enough
        else:
            keys.append(key)
    try:
        cfg = compose(group_args, config_dir)
    except Exception:  # noqa: BLE001 - Hydra has already reported the composition error
        return None
    hints = []
    for key in keys:
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if isinstance(node, DictConfig) and leaf not in node:
            target = node.get("_target_")
            if target and leaf in accepted_arguments(target):
                hints.append(
                    f"{key!r} is not in the composed config, but {target.rpartition('.')[2]} takes {leaf}: "
                    f"add it with +{key}={value_of(overrides, key)}"
                )
                continue
            if target and (message := unknown_option(target, leaf, parent)):
                hints.append(message)
                continue
            valid = ", ".join(sorted(node.keys()))
            hints.append(f"unknown key {key!r}; valid keys under {parent or 'the top level'}: {valid}")
        elif node is None:
            hints.append(f"unknown key {key!r}: {parent!r} does not exist")
    return "\n".join(hints) or None


def accepted_arguments(target: str) -> set[str]:
    """Keyword arguments the class or function ``target`` (a ``_target_``) takes, following ``**kwargs`` up the base classes."""
    import inspect

    from hydra.utils import get_object

    try:
        obj = get_object(target)
    except Exception:  # noqa: BLE001 - a target that does not import: nothing to suggest
        return set()
    names: set[str] = set()
    for owner in inspect.getmro(obj) if inspect.isclass(obj) else (obj,):
        function = owner.__init__ if inspect.isclass(owner) else owner
        if inspect.isclass(owner) and "__init__" not in vars(owner):
            continue
        params = inspect.signature(function).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return names - {"self"}


NOT_OPTIONS = ("in_features", "num_classes", "weight")  # a head's arguments its builder fills, never a config's option


def unknown_option(target: str, key: str, where: str) -> str | None:
    """The message for a config key ``<where>.<key>`` that the class ``target`` (its ``_target_``) takes no argument
    of: "loss.kk: unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?); valid: ..."; None when it takes it.
    Hydra's own keys (``_target_``, ``_convert_``, ...) are never unknown."""
    accepted = accepted_arguments(target)
    if key in accepted or not accepted or (key.startswith("_") and key.endswith("_")):
        return None
    name = target.rpartition(".")[2]
    return f"{where}.{key}: " + unknown_name(f"option of {name}", key, accepted - set(NOT_OPTIONS))


def value_of(overrides: Sequence[str], key: str) -> str:
    """The value ``key=value`` sets in ``overrides`` (the last one)."""
    return [arg.split("=", 1)[1] for arg in overrides if arg.split("=", 1)[0] == key][-1]


# ---------------------------------------------------------------- resolvers of configs/train.yaml


MAX_SUFFIX = 120  # characters of overrides kept in a run name; longer ones end in a hash of the whole
NAME_KEYS = ("run_name", "output_dir", "experiment_name")  # what names a run and where it goes


def name_exclude_keys() -> list[str]:
    """The override keys no run name holds: those of the run-identity table (:data:`softmax_zoo.run_identity.NAME_EXCLUDED`),
    which configs/hydra/default.yaml's ``override_dirname.exclude_keys`` reads (``${zoo.name_excluded:}``)."""
    return name_excluded()


def run_id(parts: Sequence[Any], overrides: Sequence[str], named: Sequence[str] = (),
           exclude: Sequence[str] | None = None) -> str:
    """The run name, the join key of records, checkpoints and wandb runs: ``"_".join(parts)`` + the override suffix.

    Args:
        parts: what the name always holds, e.g. ``["gigaword", "unilm_minilm", "softmax", "cpu", "seed0"]``
            (each config's ``run_name`` lists them from its Hydra choices and values).
        overrides: the job's overrides as Hydra keeps them (``hydra.overrides.task``, a record's
            ``job.overrides``), e.g. ``["experiment=fig2", "loss.k=5", "seed=0", "scale=cpu"]``.
        named: the override keys ``parts`` already hold (e.g. ``loss.k``), left out of the suffix.
        exclude: the keys no name holds (:func:`name_exclude_keys`, the default).

    The suffix is ``"_" +`` the overrides that are neither named nor excluded, sorted, as Hydra's
    ``override_dirname`` (``key=value`` joined by ``,``; patterns such as ``loss.*`` match with
    :mod:`fnmatch`), with "/" (a config group such as ``loss/sampler``, or a path) made "-" so that
    the name stays one file name; ``""`` when there are none. A job of ``-m loss.k=5,10 seed=0,1``
    gets ``_loss.k=5``; the seed is in the parts. Re-running the same command gives the same name,
    so ``resume=true`` finds each job's checkpoints. A suffix over ``MAX_SUFFIX`` characters keeps
    its head and ends in a hash of the whole, so that record and checkpoint names stay valid file names.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    patterns = [*(name_exclude_keys() if exclude is None else exclude), *named]
    lines = sorted(
        o.input_line
        for o in OverridesParser.create().parse_overrides(list(overrides))
        if not any(fnmatch.fnmatchcase(o.key_or_group, pattern) for pattern in patterns)
    )
    suffix = ",".join(lines).replace("/", "-")
    if len(suffix) > MAX_SUFFIX:  # file names stop at 255 bytes: keep a readable head and a hash of the whole
        suffix = f"{suffix[:MAX_SUFFIX - 17]}..{hashlib.sha256(suffix.encode()).hexdigest()[:15]}"
    return "_".join(str(p) for p in parts) + (f"_{suffix}" if suffix else "")


def _job_overrides() -> list[str]:
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def _job_exclude_keys() -> list[str]:
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().job.config.override_dirname.exclude_keys) if HydraConfig.initialized() else []


def job_run_id(parts: Sequence[Any], named: Sequence[str] = ()) -> str:
    """``${zoo.run_id:[parts],[named]}``: :func:`run_id` of this job's overrides and Hydra settings."""
    return run_id(list(parts), _job_overrides(), list(named), _job_exclude_keys())


def run_name(overrides: Sequence[str], config_dir: str | Path | None = None) -> str:
    """The ``run_name`` the job of ``overrides`` gets (a record's ``job.overrides``, or a make target's command).

    Composes the configs as ``python -m softmax_zoo.train <overrides>`` does and returns the
    resolved name. Inside a Hydra job (a config's ``${zoo.run_of:...}``) the job's own Hydra state
    is restored afterwards.
    """
    return str(_composed(overrides, config_dir).run_name)


def _composed(overrides: Sequence[str], config_dir: str | Path | None = None) -> DictConfig:
    """:data:`NAME_KEYS` of :func:`compose`'s config, resolved; the caller's Hydra state is restored after."""
    with _hydra_state_kept():
        cfg = compose(list(overrides), config_dir)
        return OmegaConf.create({key: cfg[key] for key in NAME_KEYS})  # resolved while this composition's Hydra state is set


def with_changes(overrides: Sequence[str], changes: Sequence[str]) -> list[str]:
    """``overrides`` with ``changes`` applied: ``key=value`` sets (replacing that key), ``~pattern`` drops (fnmatch)."""
    def key(line: str) -> str:
        return line.split("=", 1)[0].lstrip("+~")

    out = list(overrides)
    for change in changes:
        if change.startswith("~"):
            out = [o for o in out if not fnmatch.fnmatchcase(key(o), change[1:])]
        else:
            out = [o for o in out if key(o) != key(change)] + [change]
    return out


def run_of(*changes: str) -> str:
    """``${zoo.run_of:loss=softmax,~start}``: the ``run_name`` of this job with ``changes`` made to its overrides.

    How one run names another (the run it starts from): by the same function and configs, not by a
    copy of the other's name template. See :func:`with_changes` for the changes.
    """
    return str(_composed(with_changes(_job_overrides(), changes) + _job_searchpath(), _job_config_dir()).run_name)


def _job_searchpath() -> list[str]:
    """This Hydra job's ``hydra.searchpath`` override, if it has one, so that another composition reads the same folders."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return [o for o in HydraConfig.get().overrides.hydra if o.split("=", 1)[0] == SEARCHPATH]


def _job_config_dir() -> str | None:
    """The primary config folder of this Hydra job (``--config-path``), else None (the repository's configs/)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    for source in HydraConfig.get().runtime.config_sources:
        if source.provider == "main" and source.schema == "file":
            return source.path
    return None


def run_group(experiment_name: str) -> str:
    """The wandb group: the experiment, or for an unnamed multirun its Hydra sweep folder (one per launch)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if experiment_name != "default" or not HydraConfig.initialized():
        return experiment_name
    hc = HydraConfig.get()
    return str(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else experiment_name


SCRATCH_DIR = "scratch"  # git-ignored: records and pages of runs that are not reproductions
COMMITTED_SCALES = ("cpu", "paper")


def results_dir(reproduction: bool, scale: str) -> str:
    """``results`` (the committed tree) for a reproduction experiment at cpu or paper scale, else ``scratch``.

    Smoke runs and ad-hoc runs thus never touch the committed records, pages or claims.md.
    """
    return "results" if reproduction and scale in COMMITTED_SCALES else SCRATCH_DIR


def epoch_checkpoint(run_dir: str, epoch: int) -> str | None:
    """The checkpoint of ``run_dir`` saved at the end of epoch ``epoch`` (``train.save_steps: epoch``); None for epoch 0.

    Epoch 0 means the model's own initialisation (no ``init_from``). The epoch is read from each
    ``checkpoint-N/trainer_state.json``.

    Raises:
        FileNotFoundError: no checkpoint of that epoch (the run that saves it has not got there).
    """
    import json

    epoch = int(epoch)
    if epoch == 0:
        return None
    for state in sorted(Path(run_dir).glob("checkpoint-*/trainer_state.json")):
        if abs(float(json.loads(state.read_text()).get("epoch") or 0.0) - epoch) < 1e-6:
            return str(state.parent)
    raise FileNotFoundError(
        f"no checkpoint saved at the end of epoch {epoch} in {run_dir} (its trainer_state.json files name the epoch): "
        "finish the run that saves it first (e.g. experiment=sparse_regime_start)"
    )


# A task family is one file, configs/families/<family>.yaml, and two Hydra configs: its shared keys
# (merged before the task file) and each scale's block (merged after the scale file); configs/train.yaml
# says why. Not in a folder named family/: a file there would shadow the registered config of its name.
FAMILY_DIR = "families"
FAMILY_GROUPS = {"shared": "family", "scales": "family_scale"}  # what of the file -> its Hydra config group
FAMILY_ONLY = ("scales", "dry_run")  # keys of a family file that are not keys of the composed config


def family_files(config_dir: str | Path | None = None) -> dict[str, DictConfig]:
    """Every family file of ``config_dir`` (default configs/) as written, by family name."""
    folder = Path(config_dir or CONFIG_DIR) / FAMILY_DIR
    return {path.stem: OmegaConf.load(path) for path in sorted(folder.glob("*.yaml"))}


def family_configs(config_dirs: str | Path | Sequence[str | Path] | None = None) -> dict[str, DictConfig]:
    """The Hydra configs of the family files: ``"family/lm"`` (the shared keys), ``"family_scale/lm_cpu"`` (``scales.cpu``), ...

    Args:
        config_dirs: a config folder or several, in Hydra's search order (a family in two: the
            first one's, as Hydra picks a config); default configs/.
    """
    files: dict[str, DictConfig] = {}
    for folder in _as_folders(config_dirs):
        files = {**family_files(folder), **files}
    configs = {}
    for name, file in sorted(files.items()):
        shared = OmegaConf.masked_copy(file, [k for k in file if k not in FAMILY_ONLY])
        configs[f"{FAMILY_GROUPS['shared']}/{name}"] = shared
        for scale, keys in (file.get("scales") or {}).items():
            configs[f"{FAMILY_GROUPS['scales']}/{name}_{scale}"] = keys
    return configs


def _as_folders(config_dirs: str | Path | Sequence[str | Path] | None) -> list[Path]:
    if config_dirs is None:
        return [CONFIG_DIR]
    return [Path(config_dirs)] if isinstance(config_dirs, (str, Path)) else [Path(d) for d in config_dirs]


def register_families(config_dirs: str | Path | Sequence[str | Path] | None = None) -> None:
    """Store :func:`family_configs` of ``config_dirs`` in Hydra's ConfigStore (at the root package), replacing any stored before.

    train.yaml selects them as it would files: ``family: <family>`` (a task file's choice) and
    ``optional family_scale: ${family}_${scale}``. Give every folder the job composes from
    (:func:`config_sources`), so that a family file in any of them is found.
    """
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group in FAMILY_GROUPS.values():
        store.repo.pop(group, None)
    for path, node in family_configs(config_dirs).items():
        group, name = path.split("/")
        store.store(name=name, node=node, group=group, package="_global_")


SEARCHPATH = "hydra.searchpath"


def config_sources(config_dir: str | Path | None = None, overrides: Sequence[str] = ()) -> list[Path]:
    """The config folders a composition reads, in Hydra's search order: the primary ``config_dir``
    (default configs/), then each folder of ``hydra.searchpath`` (the override's in ``overrides``,
    else the primary train.yaml's), as Hydra takes them. ``pkg://`` entries hold no family files here
    and are left out."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    primary = Path(config_dir or CONFIG_DIR)
    given = [o for o in OverridesParser.create().parse_overrides(list(overrides)) if o.get_key_element() == SEARCHPATH]
    if given:
        searchpath = given[0].value()
    else:
        train = primary / "train.yaml"
        searchpath = OmegaConf.select(OmegaConf.load(train), SEARCHPATH) if train.is_file() else None
    folders = [entry.removeprefix("file://") for entry in searchpath or () if not str(entry).startswith("pkg://")]
    return [primary, *(Path(folder) for folder in folders)]


def command_line_sources(argv: Sequence[str]) -> list[Path]:
    """:func:`config_sources` of a ``python -m softmax_zoo.train`` command line: ``--config-path``/``-cp``
    (else configs/), ``--config-dir``/``-cd`` and the ``hydra.searchpath`` override, read with Hydra's own parser."""
    from hydra._internal.utils import get_args_parser

    args, _ = get_args_parser().parse_known_args(list(argv))
    primary = args.config_path
    if primary is not None and not Path(primary).is_absolute():  # Hydra: relative to the @hydra.main module (train.py)
        primary = Path(__file__).parent / primary
    sources = config_sources(primary, args.overrides)
    return sources[:1] + ([Path(args.config_dir)] if args.config_dir else []) + sources[1:]


def register_resolvers() -> None:
    """Register the ``zoo.*`` resolvers (idempotent)."""
    for name, fn in (("zoo.run_id", job_run_id), ("zoo.run_of", run_of), ("zoo.name_excluded", name_excluded),
                     ("zoo.group", run_group), ("zoo.results_dir", results_dir), ("zoo.epoch_checkpoint", epoch_checkpoint)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def register(config_dirs: str | Path | Sequence[str | Path] | None = None) -> None:
    """Make Hydra ready to compose: the ``zoo.*`` resolvers, and the family configs of ``config_dirs``
    (default configs/; give every folder the composition reads, :func:`config_sources`)."""
    register_resolvers()
    register_families(config_dirs)


def main(argv: Sequence[str]) -> None:
    """``python -m softmax_zoo.config <key> <overrides...>``: print the resolved ``key`` of that job (make asks it for run names)."""
    if not argv:
        raise SystemExit(f"usage: python -m softmax_zoo.config {'|'.join(NAME_KEYS)} <overrides...>")
    if argv[0] not in NAME_KEYS:
        raise SystemExit(f"python -m softmax_zoo.config: the key must be one of {', '.join(NAME_KEYS)}, got {argv[0]!r}")
    print(_composed(argv[1:])[argv[0]])


if __name__ == "__main__":
    main(sys.argv[1:])
