"""What names a recorded run: the trainer config's project, experiment and seed, or its folder.

verl's ``trainer.default_local_dir`` is ``checkpoints/<project_name>/<experiment_name>`` and
docs/VERL.md's recipe records into ``<default_local_dir>/crbc-run``; a run is named
``project/experiment`` from the config when the recorder is given it, else after its folder
(the parent's name joined for a generic folder name such as ``crbc-run``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["run_name", "SEED_KEYS", "trainer_facts"]


def _get(cfg: Any, dotted: str) -> Any:
    """``cfg.a.b`` of a dict or an OmegaConf config (None when absent)."""
    for part in dotted.split("."):
        if cfg is None:
            return None
        cfg = cfg.get(part) if hasattr(cfg, "get") else getattr(cfg, part, None)
    return cfg


#: where verl and verl-agent configs keep the seed, in the order they are tried
SEED_KEYS = ("trainer.seed", "data.seed", "env.seed", "actor_rollout_ref.rollout.seed", "seed")


def trainer_facts(cfg: Any) -> dict[str, Any]:
    """``project``, ``experiment`` (verl's ``trainer.project_name``, ``trainer.experiment_name``)
    and ``seed`` (the first of :data:`SEED_KEYS` that is a whole number) of a trainer config, those
    it has; {} for None."""
    if cfg is None:
        return {}
    out: dict[str, Any] = {}
    for name, key in (("project", "trainer.project_name"), ("experiment", "trainer.experiment_name")):
        v = _get(cfg, key)
        if isinstance(v, str) and v.strip():
            out[name] = v.strip()
    for key in SEED_KEYS:
        v = _get(cfg, key)
        if isinstance(v, int) and not isinstance(v, bool):
            out["seed"] = int(v)
            break
    return out


def run_name(path: Path, config: dict[str, Any]) -> str:
    """A run's name: ``project/experiment`` of the trainer's config (either alone), else the
    folder's name, or ``<parent>/<folder>`` for a generic folder name (the recipe's ``crbc-run``
    under verl's ``checkpoints/<project>/<experiment>``)."""
    from crbc.io.runs import GENERIC_NAMES

    parts = [config[k] for k in ("project", "experiment") if config.get(k)]
    if parts:
        return "/".join(parts)
    path = Path(path).resolve()
    return f"{path.parent.name}/{path.name}" if path.name in GENERIC_NAMES and path.parent.name else path.name
