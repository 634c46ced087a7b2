"""murano_widgets: the logit lens for notebooks.

Compute it as a Murano-style pipeline step over nnsight/nnterp, then look at it as an
interactive heatmap (layers × token positions) with layer and prompt sliders::

    from murano_widgets import MuranoModel, show_logit_lens
    model = MuranoModel("gpt2")
    show_logit_lens(model, ["The Eiffel Tower is in the city of", "one two three four"])
"""

from murano_widgets._memory import MemoryBudgetError, set_memory_budget
from murano_widgets._version import __version__ as __version__  # re-exported
from murano_widgets.attribution.outputs import component_outputs
from murano_widgets.backends.architectures import LogitTransform, UnsupportedModelError
from murano_widgets.backends.base import ModelBackend, MuranoModel
from murano_widgets.backends.self_check import LensSelfCheckError
from murano_widgets.comparison.compare import LensComparison, compare, compare_lenses
from murano_widgets.comparison.patching import Patch, PatchComparison, patch_lens
from murano_widgets.dataset.agreement import LensAgreement, lens_agreement
from murano_widgets.dataset.groups import (
    cloze_prompts,
    group_summary,
    plot_groups,
    translation_prompts,
)
from murano_widgets.dataset.lens_dataset import LensDataset
from murano_widgets.dataset.runner import lens_dataset
from murano_widgets.demo_model import (
    load_demo_jacobian_lens,
    load_demo_model,
    load_demo_tuned_lens,
)
from murano_widgets.generation import Generation
from murano_widgets.groups import TokenGroup
from murano_widgets.lenses import Lens
from murano_widgets.lenses.jacobian import JacobianLens
from murano_widgets.lenses.patchscope import PatchscopeLens
from murano_widgets.lenses.tuned import TunedLens
from murano_widgets.live import LiveSession
from murano_widgets.metrics import METRICS, Metric
from murano_widgets.plot import plot_logit_lens
from murano_widgets.results import LensResults, LogitLensResult
from murano_widgets.run import run_logit_lens
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import RESID_MID, RESID_POST, Node, PromptBatch, Results, Step
from murano_widgets.widgets.diff import LensDiffWidget, show_lens_diff
from murano_widgets.widgets.lens import LogitLensWidget
from murano_widgets.widgets.show import show_logit_lens

__all__ = [
    "METRICS",
    "RESID_MID",
    "RESID_POST",
    "Generation",
    "JacobianLens",
    "Lens",
    "LensAgreement",
    "LensComparison",
    "LensDataset",
    "LensDiffWidget",
    "LensResults",
    "LensSelfCheckError",
    "LiveSession",
    "LogitLens",
    "LogitLensResult",
    "LogitLensWidget",
    "LogitTransform",
    "MemoryBudgetError",
    "Metric",
    "ModelBackend",
    "MuranoModel",
    "Node",
    "Patch",
    "PatchComparison",
    "PatchscopeLens",
    "PromptBatch",
    "Results",
    "Step",
    "TokenGroup",
    "TunedLens",
    "UnsupportedModelError",
    "cloze_prompts",
    "compare",
    "compare_lenses",
    "component_outputs",
    "group_summary",
    "lens_agreement",
    "lens_dataset",
    "load_demo_jacobian_lens",
    "load_demo_model",
    "load_demo_tuned_lens",
    "patch_lens",
    "plot_groups",
    "plot_logit_lens",
    "run_logit_lens",
    "set_memory_budget",
    "show_lens_diff",
    "show_logit_lens",
    "translation_prompts",
]
