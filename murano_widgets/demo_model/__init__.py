"""The package's own small language model, trained on a generated "toy world".

No model can be downloaded on a plane, in CI or in a locked-down classroom, and a randomly
initialised model shows a meaningless lens. The demo model is a 6-layer Llama-style model
(about 1.8 M parameters) trained by ``python -m murano_widgets.demo_model.train`` on text that
``murano_widgets.demo_model.corpus`` generates: capitals, languages, animal sounds and young,
opposites, plurals, colours, days, months, counting, the alphabet, small arithmetic in words and
short stories. It ships inside the package in standard Hugging Face format, so it loads with
``AutoModelForCausalLM`` and nnterp as any other model does. It knows nothing outside its toy
world.

Example:
    >>> from murano_widgets.demo_model import load_demo_model
    >>> model = load_demo_model()  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from murano_widgets.backends.base import MuranoModel
    from murano_widgets.lenses.jacobian import JacobianLens
    from murano_widgets.lenses.tuned import TunedLens

__all__ = [
    "DEMO_JACOBIAN_LENS_FILE",
    "DEMO_JACOBIAN_LENS_PATH",
    "DEMO_MODEL_PATH",
    "DEMO_TUNED_LENS_PATH",
    "load_demo_jacobian_lens",
    "load_demo_model",
    "load_demo_tuned_lens",
]

DEMO_MODEL_PATH = Path(__file__).resolve().parent / "toy-world"
"""The shipped model folder (``config.json``, ``model.safetensors``, ``tokenizer.json``, …)."""

DEMO_TUNED_LENS_PATH = Path(__file__).resolve().parent / "toy-world-tuned-lens"
"""The shipped tuned lens of the demo model (tuned-lens's format: ``config.json``, ``params.pt``)."""

DEMO_JACOBIAN_LENS_PATH = Path(__file__).resolve().parent / "toy-world-jacobian-lens"
"""The shipped Jacobian lens of the demo model: the lens file, ``provenance.json`` and its card."""

DEMO_JACOBIAN_LENS_FILE = DEMO_JACOBIAN_LENS_PATH / "toy-world_jacobian_lens.pt"
"""The lens file, in the reference format (float16), which TransformerLens reads too."""


def load_demo_model(**kwargs: Any) -> MuranoModel:
    """Loads the shipped toy-world model; needs no network (works with ``HF_HUB_OFFLINE=1``).

    Args:
        **kwargs: Passed on to ``MuranoModel`` (``device``, ``dtype``, …).

    Returns:
        ``MuranoModel(DEMO_MODEL_PATH, **kwargs)``.

    Raises:
        FileNotFoundError: If the model files are missing from the installed package.
    """
    from murano_widgets.backends.base import MuranoModel

    if not (DEMO_MODEL_PATH / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"the demo model's weights are missing from {DEMO_MODEL_PATH}; rebuild them with "
            "`python -m murano_widgets.demo_model.train`"
        )
    return MuranoModel(DEMO_MODEL_PATH, **kwargs)


def load_demo_tuned_lens(model: MuranoModel | None = None) -> TunedLens:
    """Loads the tuned lens trained for the demo model; needs no network.

    Args:
        model: The demo model, to check the lens against now (the lens step checks it
            again when given the lens).

    Returns:
        A :class:`~murano_widgets.lenses.tuned.TunedLens` for ``LogitLens(model, lens=...)``.

    Raises:
        FileNotFoundError: If the lens files are missing from the installed package.
        TypeError: If ``model`` is given but is not a loaded model (a string, a Hugging Face
            model object, ...).
        ValueError: If ``model`` is not the demo model (another layer count or width), or is on
            the ``meta`` device.
    """
    from murano_widgets._checks import check_model
    from murano_widgets.lenses.tuned import TunedLens

    if model is not None:
        check_model(model)
    if not (DEMO_TUNED_LENS_PATH / "params.pt").is_file():
        raise FileNotFoundError(
            f"the demo tuned lens is missing from {DEMO_TUNED_LENS_PATH}; rebuild it with "
            "`python -m murano_widgets.demo_model.train_tuned_lens`"
        )
    return TunedLens.load(DEMO_TUNED_LENS_PATH, model)


def load_demo_jacobian_lens(model: MuranoModel | None = None) -> JacobianLens:
    """Loads the Jacobian lens fitted for the demo model; needs no network.

    Args:
        model: The demo model, to check the lens against now (the lens step checks it
            again when given the lens).

    Returns:
        A :class:`~murano_widgets.JacobianLens` for ``LogitLens(model, lens=...)``.

    Raises:
        FileNotFoundError: If the lens file is missing from the installed package.
        TypeError: If ``model`` is given but is not a loaded model.
        ValueError: If ``model`` is not the demo model (another width or fewer layers), or is on
            the ``meta`` device.
    """
    from murano_widgets._checks import check_model
    from murano_widgets.lenses.jacobian import JacobianLens

    if model is not None:
        check_model(model)
    if not DEMO_JACOBIAN_LENS_FILE.is_file():
        raise FileNotFoundError(
            f"the demo Jacobian lens is missing from {DEMO_JACOBIAN_LENS_PATH}; rebuild it with "
            "`python -m murano_widgets.demo_model.fit_jacobian_lens`"
        )
    return JacobianLens.load(DEMO_JACOBIAN_LENS_FILE, model)
