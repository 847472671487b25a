"""Neural-network layers and model builders."""

from rlconf.nn.builders import MLPSettings, ModelSettings, NatureCNNSettings, flat_size, input_layers, model_settings
from rlconf.nn.layers import (
    ACTIVATIONS,
    Aggregation,
    CategoricalDueling,
    ChannelsLast,
    Dueling,
    Flatten,
    Linear0,
    NoisyFactorizedLinear,
    NoisyLinear,
    Scale,
    Tanh,
    activation,
)

__all__ = [
    "ACTIVATIONS", "Aggregation", "CategoricalDueling", "ChannelsLast", "Dueling", "Flatten", "Linear0",
    "MLPSettings", "ModelSettings", "NatureCNNSettings", "NoisyFactorizedLinear", "NoisyLinear", "Scale", "Tanh",
    "activation", "flat_size", "input_layers", "model_settings",
]
