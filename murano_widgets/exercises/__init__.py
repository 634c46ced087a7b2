"""Exercises that check themselves: one check per core idea of the logit lens.

A student computes something by hand (one layer's lens, the top-1 token per layer, KL in bits, a
logit difference, direct logit attribution, a token group's probability, a patched run) and
hands it to its check with the inputs it was computed on. The check compares it with the
package's own answer and, when the numbers match a known mistake (the final norm skipped, the
softmax over the wrong axis, nats for bits, the patch the wrong way round, ...), says which in
one sentence with a hint::

    from murano_widgets import load_demo_model
    from murano_widgets.exercises import check_layer_probs, model_parts

    model = load_demo_model()
    check_layer_probs(my_probs, model, "The capital of France is", layer=3)

A pass prints one line; a failure raises ``AssertionError`` with the message alone. The
exercise notebooks that use them are in the repository's ``notebooks/exercises/``; the teacher's
guide is the documentation's "Teaching" page.
"""

from murano_widgets.exercises._reference import ModelParts, model_parts
from murano_widgets.exercises.checks import (
    check_dla,
    check_group_prob,
    check_kl_bits,
    check_layer_probs,
    check_logit_diff,
    check_patch,
    check_top1,
)

__all__ = [
    "ModelParts",
    "check_dla",
    "check_group_prob",
    "check_kl_bits",
    "check_layer_probs",
    "check_logit_diff",
    "check_patch",
    "check_top1",
    "model_parts",
]
