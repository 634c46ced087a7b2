# %% [markdown]
# # Exercise 3: which component wrote it, and what a patch changes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/murano-interp/murano_widgets/blob/main/notebooks/exercises/student/03_components_and_patching.ipynb)
#
# The residual stream at the last block is a **sum**: the embedding plus what every attention
# and every MLP added. Two ways to ask which part matters:
#
# 1. **Direct logit attribution (DLA)**: split the answer's logit into one share per component.
#    The final norm is not linear, but with its scale *frozen* (taken from the whole residual)
#    it is, and the shares plus a bias term sum to the logit exactly (about 20 minutes).
# 2. **Activation patching**: run one prompt, but overwrite one block's output at one position
#    with another prompt's, and see what the model says now (about 20 minutes).
#
# Write your code where it says `# YOUR CODE HERE`; each check names your mistake if it knows it.

# %%
# Setup: installs the package where it is missing (Colab); elsewhere this does nothing.
import importlib.util

if importlib.util.find_spec("murano_widgets") is None:
    %pip install -q murano-widgets  # from GitHub: %pip install -q "murano-widgets @ git+https://github.com/murano-interp/murano_widgets"

# %% [markdown]
# ## The model
#
# The demo model runs offline in seconds, on the GPU when there is one. **To use a real model,
# change this one line**, e.g. to `model = MuranoModel("gpt2")`.

# %%
import torch

from murano_widgets import MuranoModel, component_outputs, load_demo_model  # noqa: F401
from murano_widgets.exercises import check_dla, check_patch, model_parts

model = load_demo_model()
parts = model_parts(model)
print(f"Running {model.name.split('/')[-1]} ({model.n_layers} layers) on {parts.device}")

PROMPT = "The capital of France is"


def first_token(model, prompt, text):
    """The id of the first token `text` adds after `prompt`."""
    n = len(model.tokenizer(prompt)["input_ids"])
    return model.tokenizer(prompt + text)["input_ids"][n]


# %% [markdown]
# ## 1. Direct logit attribution
#
# `component_outputs(model, [prompt])` gives the residual stream's terms: `labels`
# (`"embed"`, `"L0.attn"`, `"L0.mlp"`, ...) and `vectors` `[1, seq, n_components, d_model]`.
# They add up to the last block's output.
#
# The final norm is `N(h) = g ⊙ P(h) · s(h) + b`, with `s(h) = 1 / sqrt(mean(P(h)²) + eps)`,
# `P` the centring of a LayerNorm (nothing for an RMSNorm, as here), `g` its weight and `b` its
# bias (if any). **Freeze** `s` at the value it takes on the whole residual `h`: then component
# `x` contributes `s · (g ⊙ P(x)) · U[token]`, with `U[token]` the token's row of the
# unembedding. What no component wrote, `b · U[token]` plus the unembedding's own bias, is the
# bias term. Write `dla(model, prompt, token)`: at the last position, the components'
# contributions then the bias term, `[n_components + 1]`.

# %%
@torch.no_grad()
def dla(model, prompt, token):
    parts = model_parts(model)
    terms = component_outputs(model, [prompt]).vectors[0, -1].to(parts.device)  # [C, d]
    h = terms.sum(dim=0)  # the residual stream after the last block
    norm, head = parts.final_norm, parts.unembedding
    u = head.weight[first_token(model, prompt, token)]  # U[token], [d]
    centre = isinstance(norm, torch.nn.LayerNorm)
    eps = norm.eps if centre else norm.variance_epsilon

    def P(x):
        return x - x.mean(dim=-1, keepdim=True) if centre else x

    ### BEGIN SOLUTION
    s = torch.rsqrt(P(h).pow(2).mean() + eps)
    shares = (s * P(terms) * norm.weight) @ u
    bias = torch.zeros(())
    if getattr(norm, "bias", None) is not None:
        bias = bias + norm.bias @ u
    if head.bias is not None:
        bias = bias + head.bias[first_token(model, prompt, token)]
    return torch.cat([shares.cpu(), bias.reshape(1).cpu()])
    ### END SOLUTION


# %%
check_dla(dla, model, PROMPT, " Paris")
labels = component_outputs(model, [PROMPT]).labels + ["bias"]
shares = dla(model, PROMPT, " Paris")
for label, share in sorted(zip(labels, shares.tolist()), key=lambda pair: -abs(pair[1]))[:5]:
    print(f"{label:>8}: {share:+.2f}")
print(f"     sum: {shares.sum():+.2f}  (the logit of ' Paris')")

# %% [markdown]
# ## 2. Activation patching
#
# Run the **clean** prompt, but replace block `layer`'s output at `position` with the
# **corrupt** prompt's (same layer, same position). Two helpers are given: `run(prompt, hook)`
# runs the model with a forward hook on block `layer` and returns its logits, and `keep(saved)`
# is a hook that stores the block's output in `saved["h"]` (`[1, seq, d_model]`). A forward
# hook receives `(module, args, output)`; what it returns replaces the block's output. Write
# `patch(model, clean, corrupt, layer, position)`: keep the corrupt prompt's block output,
# then run the clean prompt with a hook that writes it in at `position`, and leave the patched
# run's logits in `logits`; the function returns its output distribution at every position,
# `[seq, vocab]`.

# %%
CLEAN, CORRUPT = "The capital of France is", "The language of Spain is"


@torch.no_grad()
def patch(model, clean, corrupt, layer, position):
    parts = model_parts(model)

    def run(prompt, hook):
        inputs = model.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        handle = parts.blocks[layer].register_forward_hook(hook)
        try:
            return parts.model(**inputs.to(parts.device)).logits[0]
        finally:
            handle.remove()

    def keep(saved):
        def hook(module, args, output):
            saved["h"] = output[0] if isinstance(output, tuple) else output

        return hook

    ### BEGIN SOLUTION
    saved = {}
    run(corrupt, keep(saved))
    source = saved["h"][0, position]

    def replace(module, args, output):
        hidden = output[0] if isinstance(output, tuple) else output
        hidden = hidden.clone()
        hidden[0, position] = source
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    logits = run(clean, replace)
    ### END SOLUTION
    return logits.softmax(dim=-1)


# %%
check_patch(patch, model, CLEAN, CORRUPT, layer=0, position=3)
for layer in range(3):  # the first three blocks tell the story
    for position in (3, 4):
        top = patch(model, CLEAN, CORRUPT, layer, position)[-1].argmax()
        print(f"layer {layer}, position {position}: {model.tokenizer.decode(top)!r}")

# %% [markdown]
# Read the table. In block 0, patching " Spain" over " France" (position 3) makes the model
# answer " Madrid", the capital of Spain: the country still sits at its own token. Patching the
# last token (" is", position 4) brings in the corrupt prompt's *question* instead: the language
# of France, " French". From block 1 on, position 3 changes nothing: the country has moved on
# to the last token, and patching that one brings the whole corrupt prompt (" Spanish").
#
# `patch_lens(model, CLEAN, layer=..., position=..., source=CORRUPT)` does the same patch in the
# package, with the lens of every layer before and after, and `show_lens_diff` draws it.
