"""Which component wrote a prediction: the residual stream split into its terms, and each
term's direct contribution to a lens cell's logit (direct logit attribution).

- :mod:`.sublayers`: where a model's attention and MLP meet (its architecture's record in
  :mod:`murano_widgets.backends.architectures`, and the variants a config selects).
- :mod:`.components`: the terms read in the step's one trace, and their effects along a
  direction.
- :mod:`.readout`: the lens's readout (final norm, unembedding, logit scale) linearised at a
  cell.
- :mod:`.direct`: one row of cells attributed.
"""

from murano_widgets.attribution.components import ComponentLayout, Components, component_labels
from murano_widgets.attribution.readout import Readout, readout_of

__all__ = [
    "ComponentLayout",
    "Components",
    "Readout",
    "component_labels",
    "readout_of",
]
