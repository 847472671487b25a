"""Neural-network layers and model builders, the multi-input encoders of Dict and Tuple observations
(``encoders``), and the models' settings (``schemas``).

Each name is imported where it is first used: reading the models' settings (rlconf.nn.schemas, which a config
is checked against) imports no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ACTIVATIONS", "Aggregation", "CategoricalDueling", "ChannelsLast", "Dueling", "Flatten", "Linear", "Linear0",
    "MLPSettings", "ModelSettings", "MultiInputEncoder", "NatureCNNSettings", "NoisyFactorizedLinear", "NoisyLinear",
    "Scale", "Tanh", "activation", "check_encoders", "describe_encoders", "flat_size", "input_layers",
    "model_settings", "multi_input",
]
_MODULES = {
    **dict.fromkeys(("MLPSettings", "ModelSettings", "NatureCNNSettings", "flat_size", "input_layers",
                     "model_settings"), "rlconf.nn.builders"),
    **dict.fromkeys(("MultiInputEncoder", "check_encoders", "describe_encoders", "multi_input"), "rlconf.nn.encoders"),
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rlconf.nn' has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES.get(name, "rlconf.nn.layers")), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
