"""The tuned lens: one learned affine translator per layer in front of the logit lens.

The logit lens reads a block's output through the model's final norm and unembedding. Early
layers' residual streams are not yet in the basis the unembedding expects, so their rows read
poorly. The tuned lens (Belrose et al. 2023, "Eliciting Latent Predictions from Transformers with
the Tuned Lens") learns, for every hidden state ``h`` but the last, a translator
``h + A h + b`` trained so that the lens distribution matches the model's final one, and reads
the translated state through the same final norm and unembedding.

This module reads and writes the format of the ``tuned-lens`` package (version 0.2.0): a folder
with ``config.json`` and ``params.pt``, a state dict of one ``Linear(d_model, d_model)`` per
hidden state (keys ``"{i}.weight"`` and ``"{i}.bias"``). Translator ``i`` acts on hidden state
``i``, and hidden state 0 is the embeddings, so the output of block ``l`` takes translator
``l + 1`` and the last block's output (the model's own prediction) takes none.

It also trains translators for any model :class:`~murano_widgets.MuranoModel` can load, with the
paper's recipe, through the model's public surface only (``trace``, ``layer``, ``unembed``).

Example:
    >>> from murano_widgets import LogitLens, load_demo_model
    >>> from murano_widgets.lenses.tuned import TunedLens
    >>> model = load_demo_model()  # doctest: +SKIP
    >>> lens = TunedLens.train(model, texts, steps=100, tokens_per_step=8192)  # doctest: +SKIP
    >>> lens.save("my-lens")  # doctest: +SKIP
    >>> LogitLens(model, lens=TunedLens.load("my-lens", model))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from murano_widgets._checks import (
    check_model,
    check_path,
    check_str,
)
from murano_widgets._files import read_json, read_torch, write_files
from murano_widgets.lenses import Lens
from murano_widgets.lenses.base import lens_versions, model_name, model_width
from murano_widgets.lenses.train import DEFAULT_MAX_CHUNK_BYTES, STATE_FILE, train_tuned_lens

# STATE_FILE and model_width are read from here as well (the lens's files, the model's width).
__all__ = ["LENS_TYPE", "STATE_FILE", "TunedLens", "model_width"]

LENS_TYPE = "linear_tuned_lens"
"""The only ``lens_type`` of tuned-lens's ``config.json`` that this module reads."""

CONFIG_FILE = "config.json"
PARAMS_FILE = "params.pt"
PROVENANCE_FILE = "provenance.json"
"""Where this package keeps the lens's provenance (tuned-lens ignores the file)."""


class TunedLens(Lens):
    """Affine translators for a model's hidden states, in tuned-lens's layout: a kind of
    :class:`~murano_widgets.Lens`.

    Most users get one from :meth:`load`, :meth:`train` or :meth:`identity` rather than building
    it. Hand it to ``LogitLens(model, lens=...)`` to see the tuned lens in the widget.

    Args:
        weight: ``[num_hidden_layers, d_model, d_model]``: ``A_i`` of translator ``i`` (a
            ``Linear``'s weight: the translator adds ``h @ A_i.T + b_i`` to ``h``).
        bias: ``[num_hidden_layers, d_model]``: ``b_i``.
        config: tuned-lens's config fields (``base_model_name_or_path``, ``d_model``,
            ``num_hidden_layers``, ``bias``, ``base_model_revision``, ``unembed_hash``,
            ``lens_type``).
        provenance: Where the lens comes from (JSON-able).

    Attributes:
        kind: ``"tuned"``, what the lens step records as ``lens_kind``.
        title: ``"Tuned lens"``, what the views call it.
        weight, bias: The translators, float32 on the CPU. Translator 0 acts on the embeddings,
            which the lens step does not read; translator ``l + 1`` on block ``l``'s output.
            Changing them in place is fine: device and dtype copies are refreshed.
        config: tuned-lens's config, as saved in ``config.json``.
        provenance: A JSON-able dict: base model, source, and for a lens trained here the
            training steps, tokens, seed, date and package version.
    """

    kind: ClassVar[str] = "tuned"
    title: ClassVar[str] = "Tuned lens"

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor,
        config: dict[str, Any],
        provenance: dict[str, Any] | None = None,
    ) -> None:
        if weight.dim() != 3 or weight.shape[1] != weight.shape[2]:
            raise ValueError(
                f"weight must be [num_hidden_layers, d_model, d_model], got {tuple(weight.shape)}"
            )
        if bias.shape != weight.shape[:2]:
            raise ValueError(
                f"bias must be [num_hidden_layers, d_model] = {tuple(weight.shape[:2])}, "
                f"got {tuple(bias.shape)}"
            )
        self.weight = weight.detach().to("cpu", torch.float32).contiguous()
        self.bias = bias.detach().to("cpu", torch.float32).contiguous()
        self.config = {
            "base_model_name_or_path": config.get("base_model_name_or_path"),
            "d_model": int(weight.shape[1]),
            "num_hidden_layers": int(weight.shape[0]),
            "bias": bool(config.get("bias", True)),
            "base_model_revision": config.get("base_model_revision"),
            "unembed_hash": config.get("unembed_hash"),
            "lens_type": LENS_TYPE,
        }
        self.provenance: dict[str, Any] = dict(provenance or {})
        self.provenance.setdefault("kind", self.kind)
        self.provenance.setdefault("lens_type", LENS_TYPE)
        self.provenance.setdefault("base_model", self.config["base_model_name_or_path"])
        self.training_state: dict[str, Any] | None = None
        self._operands: dict[tuple, tuple[Any, torch.Tensor, torch.Tensor]] = {}
        self._zero: dict[int, tuple[Any, bool]] = {}

    # -----------------------------------------------------------------------------------------
    # Shape and checks

    @property
    def num_hidden_layers(self) -> int:
        """Translators in the lens: the model's block count (hidden states but the last)."""
        return int(self.weight.shape[0])

    @property
    def d_model(self) -> int:
        """The width of the residual stream the translators act on."""
        return int(self.weight.shape[1])

    def __repr__(self) -> str:
        return (
            f"TunedLens(base_model={self.config['base_model_name_or_path']!r}, "
            f"num_hidden_layers={self.num_hidden_layers}, d_model={self.d_model})"
        )

    def check(self, model: Any) -> None:
        """Checks that the lens fits ``model``: its block count and, when known, its width.

        Raises:
            TypeError: If ``model`` is not a loaded model (see :func:`check_model`).
            ValueError: On a different number of layers or a different width, naming both, or
                a model on the ``meta`` device.
        """
        check_model(model)
        n_layers = int(model.n_layers)
        if n_layers != self.num_hidden_layers:
            raise ValueError(
                f"the tuned lens has {self.num_hidden_layers} layer translators "
                f"(num_hidden_layers, for {self.config['base_model_name_or_path']!r}) but the "
                f"model {model_name(model)!r} has {n_layers} layers: it was trained for another "
                "model"
            )
        width = model_width(model)
        if width is not None and width != self.d_model:
            raise ValueError(
                f"the tuned lens acts on d_model={self.d_model} (for "
                f"{self.config['base_model_name_or_path']!r}) but the model "
                f"{model_name(model)!r} has hidden size {width}: it was trained for another model"
            )

    # -----------------------------------------------------------------------------------------
    # Applying it

    def translate(self, layer: int, hidden: torch.Tensor) -> torch.Tensor:
        """Translates the output of block ``layer`` for the final norm and unembedding.

        Applies translator ``layer + 1``, ``hidden + hidden @ A.T + b``, as one ``addmm`` in
        ``hidden``'s dtype on ``hidden``'s device (the translator is copied there once). The
        last block's output, and any block whose translator is zero, come back unchanged (the
        same tensor), so an identity lens is exactly the logit lens.

        Args:
            layer: The model's block index whose output ``hidden`` is (``0 .. n_layers - 1``).
            hidden: ``[..., d_model]``.

        Raises:
            ValueError: If ``layer`` is out of range or ``hidden`` is not ``d_model`` wide.
        """
        if isinstance(layer, bool) or not 0 <= int(layer) < self.num_hidden_layers:
            raise ValueError(
                f"layer must be a block index from 0 to {self.num_hidden_layers - 1}, got {layer!r}"
            )
        if hidden.shape[-1] != self.d_model:
            raise ValueError(
                f"hidden must be [..., {self.d_model}] (the lens's d_model), "
                f"got {tuple(hidden.shape)}"
            )
        index = int(layer) + 1
        if index == self.num_hidden_layers or self._is_zero(index):
            return hidden
        weight_t, bias = self._operands_for(index, hidden.device, hidden.dtype)
        flat = hidden.reshape(-1, self.d_model)
        # The order tuned-lens uses (a Linear, then the residual), so the roundings agree.
        out = torch.addmm(bias, flat, weight_t).add_(flat)
        return out.reshape(hidden.shape)

    def pullback(
        self, layer: int, hidden: torch.Tensor, direction: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(I + A)^T r`` and ``r · b``: the translator transposed (see :meth:`Lens.pullback`)."""
        index = int(layer) + 1
        if index == self.num_hidden_layers or self._is_zero(index):
            return direction, direction.new_zeros(direction.shape[:-1])
        weight = self.weight[index].to(device=direction.device, dtype=direction.dtype)
        bias = self.bias[index].to(device=direction.device, dtype=direction.dtype)
        return direction + direction @ weight, direction @ bias

    def _version(self) -> tuple[int, int, int, int]:
        # In-place edits bump a tensor's version; assigning new tensors changes their id.
        return (id(self.weight), self.weight._version, id(self.bias), self.bias._version)

    def _is_zero(self, index: int) -> bool:
        version = self._version()
        cached = self._zero.get(index)
        if cached is None or cached[0] != version:
            zero = not bool(self.weight[index].any()) and not bool(self.bias[index].any())
            cached = self._zero[index] = (version, zero)
        return cached[1]

    def _operands_for(
        self, index: int, device: torch.device, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if device.type == "cpu" and dtype == torch.float32:
            # The translator itself: a transposed view costs nothing and BLAS reads it as is.
            return self.weight[index].t(), self.bias[index]
        key = (index, str(device), dtype)
        version = self._version()
        cached = self._operands.get(key)
        if cached is None or cached[0] != version:
            weight_t = self.weight[index].t().to(device=device, dtype=dtype)
            bias = self.bias[index].to(device=device, dtype=dtype)
            cached = self._operands[key] = (version, weight_t, bias)
        return cached[1], cached[2]

    # -----------------------------------------------------------------------------------------
    # Building, reading and writing

    @classmethod
    def identity(cls, model: Any, *, base_model_name: str | None = None) -> TunedLens:
        """A lens whose translators are all zero: exactly the logit lens (and training's start).

        Raises:
            TypeError: If ``model`` is not a loaded model, or ``base_model_name`` is not a
                string or ``None``.
            ValueError: If the model's width cannot be read from its config.
        """
        check_model(model)
        base_model_name = check_str("base_model_name", base_model_name, optional=True)
        width = model_width(model)
        if width is None:
            raise ValueError(
                "cannot read the model's hidden size from its config (hidden_size, n_embd or "
                "d_model); build the lens with TunedLens(weight, bias, config) instead"
            )
        n_layers = int(model.n_layers)
        name = base_model_name or model_name(model)
        return cls(
            torch.zeros(n_layers, width, width),
            torch.zeros(n_layers, width),
            {"base_model_name_or_path": name},
            {"source": "identity", **lens_versions()},
        )

    @classmethod
    def load(cls, folder: str | os.PathLike[str], model: Any | None) -> TunedLens:
        """Reads a lens folder in tuned-lens's format and checks it against ``model``.

        Args:
            folder: A folder with ``config.json`` and ``params.pt`` (a lens published with
                tuned-lens and downloaded, or one saved by :meth:`save`).
            model: The model it will be used with; ``None`` skips the check.

        Raises:
            TypeError: If ``model`` is neither ``None`` nor a loaded model (checked before any
                file is read).
            FileNotFoundError: If the folder, its ``config.json`` or its ``params.pt`` is missing.
            ValueError: For a lens of another type, a config or checkpoint that does not hold a
                linear tuned lens, or a lens that does not fit ``model`` (layer count, width).
        """
        if model is not None:
            check_model(model)
        path = Path(check_path("folder", folder)).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"tuned lens folder {str(folder)!r} does not exist (expected a folder with "
                f"{CONFIG_FILE} and {PARAMS_FILE})"
            )
        for name in (CONFIG_FILE, PARAMS_FILE):
            if not (path / name).is_file():
                raise FileNotFoundError(
                    f"tuned lens folder {str(folder)!r} has no {name}: a lens folder holds "
                    f"{CONFIG_FILE} and {PARAMS_FILE} (the format of the tuned-lens package)"
                )
        config = _read_config(
            read_json(path / CONFIG_FILE, "the tuned lens config"), path / CONFIG_FILE
        )
        state = read_torch(path / PARAMS_FILE, "the tuned lens parameters")
        weight, bias = _read_params(state, config, path / PARAMS_FILE)
        provenance: dict[str, Any] = {}
        if (path / PROVENANCE_FILE).exists():
            provenance = read_json(path / PROVENANCE_FILE, "the tuned lens provenance")
        provenance["source"] = str(path)
        lens = cls(weight, bias, config, provenance)
        if (path / STATE_FILE).exists():
            lens.training_state = _read_training_state(
                read_torch(path / STATE_FILE, "the tuned lens training state"), path / STATE_FILE
            )
        if model is not None:
            try:
                lens.check(model)
            except ValueError as error:
                # The check speaks of "the tuned lens"; here the user needs to know which one.
                raise ValueError(f"tuned lens folder {str(path)!r}: {error}") from None
        return lens

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Writes ``config.json`` and ``params.pt`` as tuned-lens does, plus ``provenance.json``.

        tuned-lens reads the folder back (``TunedLens.from_model_and_pretrained(model,
        folder)``) and ignores the extra files. A lens from an unfinished :meth:`train` also
        writes ``training_state.pt``, which ``train(..., resume_from=folder)`` continues from;
        a finished lens removes a stale one.

        The files are replaced together (see :func:`murano_widgets._files.write_files`): if
        the save fails or is interrupted at any point, the folder keeps its previous lens,
        whole, and no temporary file.

        Returns:
            The folder.
        """
        path = Path(check_path("folder", folder)).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        state: dict[str, torch.Tensor] = {}
        for index in range(self.num_hidden_layers):
            # Copies, or torch.save would store the whole stacked tensor under every key.
            state[f"{index}.weight"] = self.weight[index].clone()
            state[f"{index}.bias"] = self.bias[index].clone()
        provenance = {k: v for k, v in self.provenance.items() if k != "source"}
        files: dict[str | os.PathLike[str], Any] = {
            path / PARAMS_FILE: lambda temporary: torch.save(state, temporary),
            path / CONFIG_FILE: json.dumps(self.config, indent=2) + "\n",
            path / PROVENANCE_FILE: json.dumps(provenance, indent=2) + "\n",
        }
        training_state = self.training_state
        if training_state is not None:
            files[path / STATE_FILE] = lambda temporary: torch.save(training_state, temporary)
        write_files(files, remove=[] if training_state is not None else [path / STATE_FILE])
        return path

    # -----------------------------------------------------------------------------------------
    # Training

    @classmethod
    def train(
        cls,
        model: Any,
        texts: Sequence[str],
        *,
        steps: int = 250,
        tokens_per_step: int = 2**18,
        lr: float = 0.1,
        seed: int = 0,
        seq_len: int | None = None,
        momentum: float = 0.9,
        weight_decay: float = 1e-3,
        resume_from: str | os.PathLike[str] | None = None,
        stop_after: int | None = None,
        save_to: str | os.PathLike[str] | None = None,
        save_every: int | None = None,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        base_model_name: str | None = None,
        progress: bool = True,
    ) -> TunedLens:
        """Trains a tuned lens for ``model`` on ``texts`` with the tuned lens paper's recipe.

        The model stays frozen. The texts are tokenized, joined with EOS and cut into chunks of
        ``seq_len`` tokens that each start with EOS; each step reads ``tokens_per_step`` tokens
        of them (rounded up to whole chunks) in an order fixed by ``seed``. For every block
        output but the last, the loss is KL(final distribution ‖ lens distribution) averaged
        over the tokens; SGD with Nesterov momentum, weight decay, a learning rate decaying
        linearly to zero over ``steps`` and gradient-norm clipping at 1.0 updates the
        translators, which start at zero (the logit lens). Translator 0 (the embeddings, which
        the lens step does not read) stays zero.

        Memory is bounded: the forward pass runs on as many chunks as fit ``max_chunk_bytes``
        of float32 logits, and the loss is computed and back-propagated layer by layer on
        slices of that many rows, so a few ``[rows, vocab]`` buffers are the peak.

        Args:
            model: A :class:`~murano_widgets.MuranoModel` (CPU or GPU, any dtype).
            texts: The training documents.
            steps: Optimizer steps of the whole run (the schedule's length).
            tokens_per_step: Tokens per step (the published lenses used 2**18).
            lr: Peak learning rate (tuned-lens's default: 1.0 × (1 − momentum)).
            seed: Fixes the data order; the same seed, texts, settings and thread count give the
                same translators.
            seq_len: Tokens per chunk; defaults to the model's context (at most 2048).
            momentum: Nesterov momentum.
            weight_decay: SGD weight decay (pulls the translators toward the identity).
            resume_from: A folder saved from an earlier call with the same settings (by
                ``save_to``, or by :meth:`save` on a lens stopped with ``stop_after``): training
                continues from its step and optimizer state.
            stop_after: Stop after this many steps of this call (the schedule still spans
                ``steps``); the returned lens can be saved and resumed.
            save_to: Save the lens (with its training state) there every ``save_every`` steps
                and at the end.
            save_every: See ``save_to``; defaults to only at the end.
            max_chunk_bytes: The size of one chunk of float32 logits.
            base_model_name: Recorded in the config and provenance; defaults to the model's name.
            progress: Show a tqdm progress bar.

        Returns:
            The lens. Its ``provenance`` records the run; ``training_state`` holds the optimizer
            state (saved as ``training_state.pt``) and the mean training KL of every step.

        Raises:
            TypeError: If ``model`` is not a loaded model, or ``base_model_name`` is not a
                string.
            ValueError: For bad settings (each named, before any text is tokenized), texts that
                are not strings of valid Unicode or too short for one chunk, or a
                ``resume_from`` folder of another run.
        """
        return train_tuned_lens(
            cls,
            model,
            texts,
            steps=steps,
            tokens_per_step=tokens_per_step,
            lr=lr,
            seed=seed,
            seq_len=seq_len,
            momentum=momentum,
            weight_decay=weight_decay,
            resume_from=resume_from,
            stop_after=stop_after,
            save_to=save_to,
            save_every=save_every,
            max_chunk_bytes=max_chunk_bytes,
            base_model_name=base_model_name,
            progress=progress,
        )


def _read_config(config: dict[str, Any], where: Path) -> dict[str, Any]:
    """tuned-lens's config fields, checked: the type and shape the parameters must have."""
    config = dict(config)
    if "unemebd_hash" in config:  # the misspelling of older tuned-lens versions
        config.setdefault("unembed_hash", config.pop("unemebd_hash"))
    lens_type = config.get("lens_type", LENS_TYPE)
    if lens_type != LENS_TYPE:
        raise ValueError(
            f"{where} describes a lens of type {lens_type!r}; only tuned-lens's "
            f"{LENS_TYPE!r} (one affine translator per layer) can be read"
        )
    for key in ("d_model", "num_hidden_layers"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where} has no valid {key!r} (a positive int), got {value!r}")
    if not isinstance(config.get("bias", True), bool):
        raise ValueError(f"{where}: 'bias' must be true or false, got {config['bias']!r}")
    for key in ("base_model_name_or_path", "base_model_revision", "unembed_hash"):
        if not isinstance(config.get(key), (str, type(None))):
            raise ValueError(f"{where}: {key!r} must be a string or null, got {config[key]!r}")
    return config


def _read_params(
    state: Any, config: dict[str, Any], where: Path
) -> tuple[torch.Tensor, torch.Tensor]:
    """The stacked translators of a ``params.pt`` state dict, checked against the config."""
    if not isinstance(state, dict):
        raise ValueError(f"{where} must hold a state dict, got {type(state).__name__}")
    d, n = config["d_model"], config["num_hidden_layers"]
    has_bias = bool(config.get("bias", True))
    expected = {f"{i}.weight" for i in range(n)} | (
        {f"{i}.bias" for i in range(n)} if has_bias else set()
    )
    # key=str: a foreign file may have keys that are not strings, which would not sort.
    missing = sorted(expected - set(state), key=str)
    extra = sorted(set(state) - expected, key=str)
    if missing or extra:
        raise ValueError(
            f"{where} does not hold the {n} translators config.json describes "
            f"(num_hidden_layers={n}, bias={has_bias}): "
            + "; ".join(
                part
                for part in (
                    f"missing {missing[:4]}{'…' if len(missing) > 4 else ''}" if missing else "",
                    f"unexpected {extra[:4]}{'…' if len(extra) > 4 else ''}" if extra else "",
                )
                if part
            )
        )
    # Every tensor is checked before anything is allocated: the sizes come from the config,
    # which alone must not decide how much memory is taken.
    for i in range(n):
        _check_param(state[f"{i}.weight"], f"{i}.weight", (d, d), where)
        if has_bias:
            _check_param(state[f"{i}.bias"], f"{i}.bias", (d,), where)
    weight = torch.stack([state[f"{i}.weight"].float() for i in range(n)])
    bias = (
        torch.stack([state[f"{i}.bias"].float() for i in range(n)])
        if has_bias
        else torch.zeros(n, d)
    )
    return weight, bias


def _check_param(value: Any, key: str, shape: tuple[int, ...], where: Path) -> None:
    dims = ", ".join(map(str, shape))
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
        note = f" (d_model={shape[0]} in config.json)" if len(shape) == 2 else ""
        raise ValueError(
            f"{where}: '{key}' must be [{dims}]{note}, got "
            + (
                f"{tuple(value.shape)}"
                if isinstance(value, torch.Tensor)
                else f"a {type(value).__name__}, not a tensor"
            )
        )
    if value.layout != torch.strided or not value.is_floating_point():
        raise ValueError(
            f"{where}: '{key}' must be a dense floating-point tensor, got {value.dtype} "
            f"({value.layout})"
        )
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{where}: '{key}' holds NaN or infinite values; the file is damaged")


def _read_training_state(state: Any, where: Path) -> dict[str, Any]:
    """The training state of an unfinished run, checked for what ``train`` reads from it."""
    if not isinstance(state, dict):
        raise ValueError(f"{where} must hold a dict of training state, got {type(state).__name__}")
    kinds: dict[str, type | tuple[type, ...]] = {
        "run": dict,
        "step": int,
        "seconds": (int, float),
        "losses": list,
    }
    for key, kind in kinds.items():
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(
                f"{where} is not a training state this package wrote: {key!r} is "
                f"{type(value).__name__ if key in state else 'missing'}"
            )
    if state["step"] < 0:
        raise ValueError(f"{where}: 'step' must be at least 0, got {state['step']}")
    if not isinstance(state.get("optimizer"), (dict, type(None))):
        raise ValueError(f"{where}: 'optimizer' must be an optimizer state dict or absent")
    return state
