"""The exercises' checks, and the exercise notebooks built from their sources.

Every answer given to a check here, right or wrong, is computed in this file from plain
transformers (forward hooks on the decoder blocks, the model's own final norm and lm_head, the
transforms written out from transformers' modeling code), never with murano_widgets: each known
mistake must fail its check with its own sentence, the right answer must pass, and answers that
are merely wrong (random, constant, another prompt's, the reference mutated) must fail too. The
checks run on the demo model (Llama-style), a tiny Gemma 2 (final soft-cap, ``1 + w`` norm) and
a tiny GPT-2 (LayerNorm, learned positions; given non-zero biases here so that DLA's bias term
is not 0).

The notebooks: the committed student and solution versions are what ``build.py`` makes from
the sources; the solutions run headless (nbclient, the demo model, seconds:
``test_solution_notebooks_run``, the test to run in the Colab job); the student versions with
each known-wrong answer filled in stop at their check with the intended hint.
"""

from __future__ import annotations

import importlib.util
import math
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch
from reference import ReferenceLens
from transformers import AutoModelForCausalLM

from murano_widgets.exercises import (
    check_dla,
    check_group_prob,
    check_kl_bits,
    check_layer_probs,
    check_logit_diff,
    check_patch,
    check_top1,
)

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "notebooks" / "exercises"
PROMPT = "The capital of France is"
OTHER = "The capital of Italy is"  # as many tokens as PROMPT on the demo model


class Plain:
    """One model in plain transformers: every number a test hands to a check comes from here."""

    def __init__(self, folder):
        self.ref = ReferenceLens(folder)
        self.model, self.tokenizer = self.ref.model, self.ref.tokenizer
        self.head = self.model.lm_head

    def ids(self, prompt):
        return self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)

    @torch.no_grad()
    def run(self, prompt, patch=None):
        """``(embeddings [seq, d], block outputs [layers, seq, d], output probs [seq, vocab])``;
        ``patch=(layer, fn)`` replaces block ``layer``'s output ``[seq, d]`` by ``fn`` of it."""
        seen, outs = {}, []

        def pre(_m, args, kwargs):
            seen["embed"] = (args[0] if args else kwargs["hidden_states"])[0]

        def post(index):
            def hook(_m, _i, out):
                h = out[0] if isinstance(out, tuple) else out
                if patch is not None and patch[0] == index:
                    h = patch[1](h[0]).unsqueeze(0)
                    out = (h, *out[1:]) if isinstance(out, tuple) else h
                outs.append(h[0])
                return out

            return hook

        hooks = [self.ref.blocks[0].register_forward_pre_hook(pre, with_kwargs=True)]
        hooks += [b.register_forward_hook(post(i)) for i, b in enumerate(self.ref.blocks)]
        try:
            logits = self.model(**self.ids(prompt)).logits[0]
        finally:
            for hook in hooks:
                hook.remove()
        return seen["embed"], torch.stack(outs), logits.softmax(-1)

    @torch.no_grad()
    def logits(self, h, norm=True, transform=True):
        z = self.head(self.ref.norm(h) if norm else h)
        if transform:
            z = self.ref.scale(z)
            if self.ref.cap:
                z = torch.tanh(z / self.ref.cap) * self.ref.cap
        return z

    def token(self, prompt, text):
        n = len(self.tokenizer(prompt)["input_ids"])
        return self.tokenizer(prompt + text)["input_ids"][n]


def _fails(check, *args, says):
    """The check fails with exactly one AssertionError whose message contains ``says``."""
    with pytest.raises(AssertionError) as info:
        check(*args)
    message = str(info.value)
    assert says in message, message
    assert info.value.__cause__ is None and info.value.__suppress_context__
    return message


# ---------------------------------------------------------------------------------------------
# Models: the demo model, a tiny Gemma 2 and a tiny GPT-2 with non-zero biases


@pytest.fixture(scope="module")
def demo():
    from murano_widgets import load_demo_model
    from murano_widgets.demo_model import DEMO_MODEL_PATH

    return load_demo_model(), Plain(DEMO_MODEL_PATH)


@pytest.fixture(scope="module")
def gemma2(load_tiny, tiny_model_dirs):
    return load_tiny("gemma2"), Plain(tiny_model_dirs["gemma2"])


@pytest.fixture(scope="module")
def gpt2_biased(tiny_model_dirs, tmp_path_factory):
    """The tiny GPT-2 with random final-norm biases: its DLA bias term is not 0."""
    from murano_widgets import MuranoModel

    folder = tmp_path_factory.mktemp("gpt2-biased")
    hf = AutoModelForCausalLM.from_pretrained(tiny_model_dirs["gpt2"])
    torch.manual_seed(1)
    with torch.no_grad():
        hf.transformer.ln_f.bias.normal_(0.0, 0.5)
    hf.save_pretrained(folder)
    Plain(tiny_model_dirs["gpt2"]).tokenizer.save_pretrained(folder)
    return MuranoModel(folder), Plain(folder)


MODELS = ["demo", "gemma2", "gpt2_biased"]


@pytest.fixture(params=MODELS)
def any_model(request):
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------------------------------------
# One layer's lens


def test_layer_probs_right_answer_passes_on_every_architecture(any_model, capsys):
    model, plain = any_model
    _, blocks, _ = plain.run(PROMPT)
    for layer in (0, 1, model.n_layers - 1):
        check_layer_probs(plain.logits(blocks[layer]).softmax(-1), model, PROMPT, layer)
    # The function form: the check calls it with its own inputs.
    check_layer_probs(
        lambda m, p, layer: plain.logits(blocks[layer]).softmax(-1), model, PROMPT, -1
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.startswith("✓ check_layer_probs passed") for line in lines)


@pytest.mark.parametrize("arch", ["demo", "gemma2"])
def test_layer_probs_mistakes_are_named(arch, request):
    model, plain = request.getfixturevalue(arch)
    embed, blocks, _ = plain.run(PROMPT)
    lens = plain.logits
    layer = 1
    cases = {
        "you skipped the final norm": lens(blocks[layer], norm=False).softmax(-1),
        "off by one layer: you read block 0's output": lens(blocks[0]).softmax(-1),
        "off by one layer: you read block 2's output": lens(blocks[2]).softmax(-1),
        "the softmax ran over the positions": lens(blocks[layer]).softmax(0),
        "these are logits, not probabilities": lens(blocks[layer]),
    }
    if arch == "demo":  # with a gain of 1 (the tiny Gemma's), a second RMSNorm changes nothing
        twice = lens(plain.ref.norm(blocks[layer])).softmax(-1)
        cases["the final norm was applied twice"] = twice
    for says, probs in cases.items():
        _fails(check_layer_probs, probs, model, PROMPT, layer, says=says)
    _fails(
        check_layer_probs,
        lens(embed).softmax(-1),
        model,
        PROMPT,
        0,
        says="off by one layer: you read the embeddings",
    )
    if arch == "gemma2":  # soft-capped: leaving the cap out is its own mistake
        _fails(
            check_layer_probs,
            lens(blocks[layer], transform=False).softmax(-1),
            model,
            PROMPT,
            layer,
            says="you skipped the model's logit transform (tanh soft-cap at 5)",
        )


def test_layer_probs_cannot_be_fooled(demo):
    model, plain = demo
    _, blocks, _ = plain.run(PROMPT)
    right = plain.logits(blocks[2]).softmax(-1)
    _, other_blocks, _ = plain.run(OTHER)
    assert other_blocks.shape == blocks.shape  # the same shape: only the numbers can tell
    torch.manual_seed(0)
    swapped = right.clone()
    swapped[[0, 3]] = right[[3, 0]]
    fakes = {
        "random": torch.rand_like(right).softmax(-1),
        "constant": torch.full_like(right, 1.0 / right.shape[-1]),
        "another prompt's": plain.logits(other_blocks[2]).softmax(-1),
        "scaled": right * 1.05,
        "shifted": right + 0.01,
        "two rows swapped": swapped,
        "vocabulary permuted": right[:, torch.randperm(right.shape[-1])],
        "another layer far away": plain.logits(blocks[5]).softmax(-1),
    }
    for name, fake in fakes.items():
        message = _fails(check_layer_probs, fake, model, PROMPT, 2, says="check_layer_probs: ")
        assert "probs" in message or "layer" in message, name
    _fails(check_layer_probs, None, model, PROMPT, 2, says="probs is None")
    _fails(check_layer_probs, right.T, model, PROMPT, 2, says="probs is transposed")
    _fails(check_layer_probs, right[:-1], model, PROMPT, 2, says="has shape (4, 1536)")


def test_bad_arguments_are_named_before_any_model_work(demo):
    """The teacher's arguments (model, prompt, layer, position) are checked first, with the
    package's errors; only the student's answer gets an AssertionError."""
    model, _ = demo
    probs = torch.zeros(5, 1536)
    with pytest.raises(TypeError, match="model"):
        check_layer_probs(probs, "gpt2", PROMPT, 0)
    with pytest.raises(TypeError, match="prompt must be a string"):
        check_layer_probs(probs, model, ["a", "b"], 0)
    with pytest.raises(ValueError, match="layer must be an int from -6 to 5"):
        check_layer_probs(probs, model, PROMPT, 6)
    with pytest.raises(ValueError, match="position must be an int"):
        check_patch(probs, model, PROMPT, OTHER, 0, 9)
    _fails(check_layer_probs, "not numbers", model, PROMPT, 0, says="is not an array of numbers")
    _fails(check_top1, torch.zeros(6, 5) + 0.5, torch.zeros(6, 5), model, PROMPT, says="token ids")


# ---------------------------------------------------------------------------------------------
# The top-1 token per layer, KL in bits


def _all_probs(plain, prompt):
    _, blocks, _ = plain.run(prompt)
    return plain.logits(blocks).softmax(-1)  # [layers, seq, vocab]


def test_top1_right_and_wrong(any_model, capsys):
    model, plain = any_model
    probs = _all_probs(plain, PROMPT)
    top, tokens = probs.max(-1)
    check_top1(tokens, top, model, PROMPT)
    check_top1(lambda m, p: (tokens.numpy(), top.numpy()), None, model, PROMPT)
    assert capsys.readouterr().out.count("✓ check_top1 passed") == 2
    over_positions = probs.max(dim=1)  # [layers, vocab]
    _fails(
        check_top1,
        over_positions.indices,
        over_positions.values,
        model,
        PROMPT,
        says="you took the maximum over the positions",
    )
    n = probs.shape[0]
    below = torch.stack([probs[layer - 1, :, :] for layer in range(n)])  # probs[-1] for row 0
    _fails(
        check_top1,
        tokens,
        below.gather(-1, tokens.unsqueeze(-1)).squeeze(-1),
        model,
        PROMPT,
        says="the probabilities are from the wrong layer",
    )
    _fails(
        check_top1,
        tokens,
        probs[-1].max(-1).values.expand_as(top),
        model,
        PROMPT,
        says="the probabilities are from the wrong layer",
    )
    _fails(check_top1, tokens.roll(1, 0), top, model, PROMPT, says="tokens are off by one layer")
    _fails(
        check_top1, torch.zeros_like(tokens), top, model, PROMPT, says="the top-1 token is wrong"
    )
    _fails(check_top1, tokens, torch.rand_like(top), model, PROMPT, says="probs is wrong")


def test_kl_bits_right_and_wrong(any_model):
    model, plain = any_model
    probs = _all_probs(plain, PROMPT).double()
    final = plain.run(PROMPT)[2].double()  # the model's own output distribution
    nats = (final * (final.log() - probs.log())).sum(-1)
    check_kl_bits(nats / math.log(2), model, PROMPT)
    _fails(check_kl_bits, nats, model, PROMPT, says="these are nats, not bits")
    reverse = (probs * (probs.log() - final.log())).sum(-1)
    _fails(check_kl_bits, reverse / math.log(2), model, PROMPT, says="the wrong way round")
    right = nats / math.log(2)
    for fake in (torch.rand_like(right), torch.ones_like(right), right * 1.1, right.flip(0)):
        _fails(check_kl_bits, fake, model, PROMPT, says="kl is wrong")


# ---------------------------------------------------------------------------------------------
# The logit difference, a token group


def test_logit_diff_right_and_wrong(any_model):
    model, plain = any_model
    _, blocks, _ = plain.run(PROMPT)
    z = plain.logits(blocks[:, -1])  # [layers, vocab]
    a, f = plain.token(PROMPT, " Paris"), plain.token(PROMPT, " Rome")
    check_logit_diff(z[:, a] - z[:, f], model, PROMPT, " Paris", " Rome")
    _fails(
        check_logit_diff,
        z[:, f] - z[:, a],
        model,
        PROMPT,
        " Paris",
        " Rome",
        says="foil minus answer",
    )
    p = z.softmax(-1)
    _fails(
        check_logit_diff,
        p[:, a] - p[:, f],
        model,
        PROMPT,
        " Paris",
        " Rome",
        says="you subtracted probabilities, not logits",
    )
    _fails(
        check_logit_diff,
        torch.zeros(z.shape[0]),
        model,
        PROMPT,
        " Paris",
        " Rome",
        says="diffs is wrong",
    )
    with pytest.raises(ValueError, match="start with the same token"):
        check_logit_diff(z[:, a], model, PROMPT, " Paris", " Paris")


def _group(tokenizer, word):
    """A word's group by its definition, written here: every id whose decoded text is a
    non-blank prefix of the word or of its spaced form."""
    forms = (word.strip(), " " + word.strip())
    found = set()
    for index in range(len(tokenizer)):
        text = tokenizer.decode([index])
        if text.strip() and any(form[: len(text)] == text for form in forms):
            found.add(index)
    return sorted(found)


@pytest.mark.parametrize("arch", MODELS)
def test_group_prob_right_and_wrong(arch, request):
    model, plain = request.getfixturevalue(arch)
    _, blocks, _ = plain.run(PROMPT)
    p = plain.logits(blocks[:, -1]).softmax(-1)  # [layers, vocab]
    ids = _group(plain.tokenizer, "Paris")
    assert len(ids) >= 3
    check_group_prob(p[:, ids].sum(-1), model, PROMPT, "Paris")
    check_group_prob(p[:, ids].sum(-1), model, PROMPT, " Paris")
    first = plain.token(PROMPT, " Paris")
    twice = p[:, ids].sum(-1) + p[:, first]
    _fails(check_group_prob, twice, model, PROMPT, "Paris", says="a token was counted twice")
    if arch != "demo":  # the demo model gives the other prefixes < 1e-4: the two agree there
        _fails(check_group_prob, p[:, first], model, PROMPT, "Paris", says="the first token only")
    _fails(check_group_prob, torch.rand(p.shape[0]), model, PROMPT, "Paris", says="p is wrong")


# ---------------------------------------------------------------------------------------------
# Direct logit attribution


def _dla(plain, prompt, text, frozen=True):
    """Each component's share of the logit at the last position, and the bias term: the
    final norm's scale from the whole residual (frozen), or from each component alone."""
    ref = plain.ref
    emb, blocks, _ = plain.run(prompt)
    terms = []  # embed, then each block's attention and MLP output at the last position
    seen = {"attn": [], "mlp": []}
    hooks = []
    for block in ref.blocks:
        attn = getattr(block, "self_attn", None) or block.attn
        hooks.append(
            attn.register_forward_hook(
                lambda _m, _i, o: seen["attn"].append(o[0] if isinstance(o, tuple) else o)
            )
        )
        hooks.append(
            block.mlp.register_forward_hook(
                lambda _m, _i, o: seen["mlp"].append(o[0] if isinstance(o, tuple) else o)
            )
        )
    with torch.no_grad():
        try:
            ref.model(**plain.ids(prompt))
        finally:
            for hook in hooks:
                hook.remove()
    terms = [emb[-1]] + [
        t[0, -1] for pair in zip(seen["attn"], seen["mlp"], strict=True) for t in pair
    ]
    terms = torch.stack(terms)
    assert torch.allclose(terms.sum(0), blocks[-1, -1], atol=1e-4)  # they add up to the residual
    norm = ref.norm
    centred = isinstance(norm, torch.nn.LayerNorm)
    eps = norm.eps if centred else norm.variance_epsilon
    gain = norm.weight.detach()
    bias = norm.bias.detach() if getattr(norm, "bias", None) is not None else torch.zeros_like(gain)
    w = plain.head.weight[plain.token(prompt, text)].detach()

    def centre(x):
        return x - x.mean(-1, keepdim=True) if centred else x

    h = blocks[-1, -1]
    scales = (
        torch.rsqrt(centre(terms).pow(2).mean(-1) + eps)
        if not frozen
        else torch.rsqrt(centre(h).pow(2).mean() + eps).expand(len(terms))
    )
    parts = (scales[:, None] * centre(terms) * gain) @ w
    logit = plain.logits(h, transform=False)[plain.token(prompt, text)]
    return torch.cat([parts, (bias @ w).reshape(1)]).detach(), float(logit)


@pytest.mark.parametrize("arch", ["demo", "gpt2_biased"])
def test_dla_right_and_wrong(arch, request):
    model, plain = request.getfixturevalue(arch)
    right, logit = _dla(plain, PROMPT, " Paris")
    assert abs(float(right.sum()) - logit) < 1e-3  # the shares sum to the logit
    check_dla(right, model, PROMPT, " Paris")
    unfrozen, _ = _dla(plain, PROMPT, " Paris", frozen=False)
    _fails(check_dla, unfrozen, model, PROMPT, " Paris", says="scale was not frozen")
    _fails(check_dla, right[:-1], model, PROMPT, " Paris", says="the bias term is missing")
    if arch == "gpt2_biased":
        assert abs(float(right[-1])) > 0.01
        no_bias = right.clone()
        no_bias[-1] = 0.0
        _fails(check_dla, no_bias, model, PROMPT, " Paris", says="the bias term is missing (0)")
    shuffled = right.clone()
    shuffled[[1, 2]] = right[[2, 1]]
    for fake in (torch.rand_like(right), torch.full_like(right, logit / len(right)), shuffled):
        _fails(check_dla, fake, model, PROMPT, " Paris", says="check_dla: ")


# ---------------------------------------------------------------------------------------------
# One patched cell


@pytest.mark.parametrize("arch", MODELS)
def test_patch_right_and_wrong(arch, request):
    """The demo model moves the country to the last token by block 1 (a patch there does all
    or nothing): its wrong answers coincide with right ones, so the named mistakes are tried
    on the tiny random models, whose blocks mix every position."""
    model, plain = request.getfixturevalue(arch)
    clean, corrupt = PROMPT, OTHER
    layer, position = 1, 3
    _, clean_blocks, clean_out = plain.run(clean)
    _, corrupt_blocks, corrupt_out = plain.run(corrupt)
    assert clean_blocks.shape == corrupt_blocks.shape

    def into(source_blocks, where):
        def swap(h):
            h = h.clone()
            h[where] = source_blocks[layer, where]
            return h

        return swap

    right = plain.run(clean, patch=(layer, into(corrupt_blocks, position)))[2]
    check_patch(right, model, clean, corrupt, layer, position)
    check_patch(right, model, clean, corrupt, layer, position - len(right))  # from the end
    for fake in (torch.rand_like(right).softmax(-1), corrupt_out.roll(1, 0)):
        _fails(check_patch, fake, model, clean, corrupt, layer, position, says="probs is wrong")
    if arch == "demo":
        return
    wrong_way = plain.run(corrupt, patch=(layer, into(clean_blocks, position)))[2]
    every = plain.run(clean, patch=(layer, lambda h: corrupt_blocks[layer].clone()))[2]
    cases = {
        "the wrong direction": wrong_way,
        "you patched every position": every,
        "the patch did nothing": clean_out,
    }
    for says, probs in cases.items():
        _fails(check_patch, probs, model, clean, corrupt, layer, position, says=says)


# ---------------------------------------------------------------------------------------------
# The exercise notebooks


def _builder():
    spec = importlib.util.spec_from_file_location("exercise_build", EXERCISES / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOTEBOOKS = [
    "01_logit_lens_by_hand",
    "02_lenses_groups_logit_diff",
    "03_components_and_patching",
]


def test_the_exercise_notebooks_are_built_from_their_sources():
    """One source each; the committed student and solution versions are what it makes
    (``python notebooks/exercises/build.py`` rebuilds them)."""
    build = _builder()
    assert [path.stem for path in build.sources()] == NOTEBOOKS
    assert build.stale() == [], "run python notebooks/exercises/build.py"
    for name in NOTEBOOKS:
        student = nbformat.read(EXERCISES / "student" / f"{name}.ipynb", as_version=4)
        solution = nbformat.read(EXERCISES / "solutions" / f"{name}.ipynb", as_version=4)
        student_code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
        solution_code = "\n".join(c.source for c in solution.cells if c.cell_type == "code")
        blanks = student_code.count("# YOUR CODE HERE")
        assert blanks >= 2 and blanks == student_code.count("raise NotImplementedError()")
        assert "BEGIN SOLUTION" not in student_code
        assert solution_code.count("### BEGIN SOLUTION") == blanks
        assert "# YOUR CODE HERE" not in solution_code
        # nbgrader: each answer cell is a solution cell, each check cell a graded test cell.
        graded = [c for c in student.cells if c.metadata["nbgrader"]["grade"]]
        assert graded and all("check_" in c.source for c in graded)
        first = next(c for c in student.cells if c.cell_type == "code")
        assert "%pip install -q murano-widgets" in first.source  # Colab's install line


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solution_notebooks_run(name):
    """The solution version runs top to bottom in a fresh kernel on the demo model, and every
    check in it passes (the test the Colab job runs too)."""
    from nbclient import NotebookClient

    notebook = nbformat.read(EXERCISES / "solutions" / f"{name}.ipynb", as_version=4)
    NotebookClient(notebook, timeout=180, kernel_name="python3").execute()
    outputs = [
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    ]
    printed = "".join(outputs)
    checks = sum(cell.metadata["nbgrader"]["grade"] for cell in notebook.cells)
    assert printed.count("✓ check_") == checks, printed
    assert "Running toy-world" in printed  # it says which model runs


_PATCH = """
saved = {}
run(corrupt, keep(saved))
source = saved["h"][0, position]

def replace(module, args, output):
    hidden = output[0] if isinstance(output, tuple) else output
    hidden = hidden.clone()
    hidden[0, position] = source
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

logits = run(clean, replace)
"""

# The wrong answers a student writes, by notebook and answer number, and the sentence each one
# must get. Dedented; filled in at the answer's place in the student version.
WRONG = {
    "01_logit_lens_by_hand": [
        (
            0,
            "return parts.logit_transform(parts.unembedding(h)).softmax(dim=-1)",
            "you skipped the final norm",
        ),
        (
            0,
            "return parts.logit_transform(parts.unembedding(parts.final_norm(h))).softmax(dim=0)",
            "the softmax ran over the positions",
        ),
        (
            0,
            "return parts.logit_transform(parts.unembedding(parts.final_norm(h)))",
            "these are logits, not probabilities",
        ),
        (
            0,
            """
            inputs = model.tokenizer(prompt, return_tensors="pt").to(parts.device)
            states = parts.model(**inputs, output_hidden_states=True).hidden_states
            h = states[layer][0]  # entry 0 is the embeddings
            return parts.logit_transform(parts.unembedding(parts.final_norm(h))).softmax(dim=-1)
            """,
            "off by one layer: you read block 2's output",
        ),
        (
            1,
            "values, tokens = probs.max(dim=1)\nreturn tokens, values",
            "the maximum over the positions",
        ),
        (
            1,
            "values, tokens = probs.max(dim=-1)\nreturn tokens, probs[-1].max(dim=-1).values.expand_as(values)",
            "from the wrong layer",
        ),
        (2, "return (final * (final.log() - probs.log())).sum(dim=-1)", "these are nats, not bits"),
        (
            2,
            "return (probs * (probs.log() - final.log())).sum(dim=-1) / math.log(2)",
            "the wrong way round",
        ),
    ],
    "02_lenses_groups_logit_diff": [
        (0, "return logits[:, f] - logits[:, a]", "foil minus answer"),
        (
            0,
            "p = logits.softmax(dim=-1)\nreturn p[:, a] - p[:, f]",
            "you subtracted probabilities, not logits",
        ),
        (
            1,
            """
            group = [i for i, t in enumerate(texts) if t.strip() and any(f.startswith(t) for f in forms)]
            group.append(first_token(model, prompt, " " + word.strip()))
            return probs[:, group].sum(dim=-1)
            """,
            "a token was counted twice",
        ),
        # The first token alone is not tried here: on the demo model the group's other tokens
        # (" P", "P") have less than 1e-4 at every layer, so it is right to that tolerance (the
        # check names it on the tiny models: test_group_prob_right_and_wrong).
    ],
    "03_components_and_patching": [
        (
            0,
            """
            scale = torch.rsqrt(P(terms).pow(2).mean(dim=-1, keepdim=True) + eps)
            return torch.cat([((scale * P(terms) * norm.weight) @ u).cpu(), torch.zeros(1)])
            """,
            "the final norm's scale was not frozen",
        ),
        (
            0,
            "s = torch.rsqrt(P(h).pow(2).mean() + eps)\nreturn ((s * P(terms) * norm.weight) @ u).cpu()",
            "the bias term is missing",
        ),
        (
            1,
            _PATCH.replace("run(corrupt", "run(CLEAN_")
            .replace("run(clean", "run(corrupt")
            .replace("CLEAN_", "clean"),
            "the wrong direction",
        ),
        (
            1,
            _PATCH.replace("hidden[0, position] = source", "hidden[0] = saved['h'][0]"),
            "you patched every position",
        ),
        (
            1,
            _PATCH.replace("    return (hidden", "    # return (hidden"),
            "the patch did nothing",
        ),
    ],
}


def _filled(source, answer, code):
    """The student version's code cells with every answer filled in with its solution, but
    answer ``answer``, filled with ``code``; magics (the install line) left out."""
    import jupytext  # the docs extra's (mkdocs-jupyter's); build.py reads the sources with it

    build = _builder()
    cells = [
        c.source for c in jupytext.read(source, fmt="py:percent").cells if c.cell_type == "code"
    ]
    out, number = [], 0
    for cell in cells:
        fill = {number + k: "\n".join(lines) for k, (_, lines) in enumerate(build.answers(cell))}
        fill = {k: textwrap.dedent(v) for k, v in fill.items()}
        if answer in fill:
            fill[answer] = textwrap.dedent(code)
        text = build.blank(cell, fill, start=number)
        number += len(build.answers(cell))
        text = re.sub(r"^(\s*)%.*$", r"\1pass", text, flags=re.MULTILINE)
        out.append(text)
    return out


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_student_notebooks_name_each_wrong_answer(name, demo, monkeypatch, capsys):
    """The student version with the solutions filled in runs to the end; with one known-wrong
    answer in place of its solution it stops at that answer's check with the intended hint.
    The cells before the wrong answer's run once (with the solutions), in one namespace kept
    before each cell; each wrong answer runs from its cell on, in a copy of it."""
    import murano_widgets

    monkeypatch.setattr(murano_widgets, "load_demo_model", lambda **_: demo[0])
    source = EXERCISES / "src" / f"{name}.py"
    solved = _filled(source, -1, "")
    before, namespace = [], {"__name__": "__main__"}
    for index, code in enumerate(solved):  # every solution: no check fails
        before.append(dict(namespace))
        exec(compile(code, f"<{name} cell {index}>", "exec"), namespace)
    assert capsys.readouterr().out.count("✓ check_") >= 2
    for answer, code, says in WRONG[name]:
        cells = _filled(source, answer, code)
        first = next(i for i, (a, b) in enumerate(zip(cells, solved, strict=True)) if a != b)
        namespace = dict(before[first])
        with pytest.raises(AssertionError) as info:
            for index in range(first, len(cells)):
                exec(compile(cells[index], f"<{name} cell {index}>", "exec"), namespace)
        message = str(info.value)
        assert message.startswith("check_") and says in message, (code, message)
