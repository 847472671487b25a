"""Neural-network layers and model builders, and the models' settings (``schemas``).

Each name is imported where it is first used: reading the models' settings (rlconf.nn.schemas, which a config
is checked against) imports no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ACTIVATIONS", "Aggregation", "CategoricalDueling", "ChannelsLast", "Dueling", "Flatten", "Linear0",
    "MLPSettings", "ModelSettings", "NatureCNNSettings", "NoisyFactorizedLinear", "NoisyLinear", "Scale", "Tanh",
    "activation", "flat_size", "input_layers", "model_settings",
]
_BUILDERS = {"MLPSettings", "ModelSettings", "NatureCNNSettings", "flat_size", "input_layers", "model_settings"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rlconf.nn' has no attribute {name!r}")
    value = getattr(importlib.import_module("rlconf.nn.builders" if name in _BUILDERS else "rlconf.nn.layers"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
