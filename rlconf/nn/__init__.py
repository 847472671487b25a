"""Neural-network layers and model builders."""

from rlconf.nn.builders import MLPSettings, flat_size, head, mlp_head, mlp_trunk
from rlconf.nn.models import ACTIVATIONS, Flatten, activation, mlp, output_width

__all__ = ["ACTIVATIONS", "Flatten", "MLPSettings", "activation", "flat_size", "head", "mlp", "mlp_head",
           "mlp_trunk", "output_width"]
