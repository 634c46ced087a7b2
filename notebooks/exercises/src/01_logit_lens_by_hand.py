# %% [markdown]
# # Exercise 1: the logit lens by hand
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/murano-interp/murano_widgets/blob/main/notebooks/exercises/student/01_logit_lens_by_hand.ipynb)
#
# A language model's blocks each add something to a running vector per token, the *residual
# stream*. After the last block, the model applies a **final norm**, multiplies by the
# **unembedding** (`lm_head`) to get one **logit** per vocabulary token, and a softmax turns the
# logits into probabilities. The **logit lens** does the same to the residual stream after
# *any* block: what would the model predict if it stopped there?
#
# You will write it yourself, in plain PyTorch, in three steps:
#
# 1. one layer's lens distribution (about 10 minutes);
# 2. the top-1 token and its probability at every layer (about 10 minutes);
# 3. how far each layer is from the model's own output, as KL divergence in bits (about 10 minutes).
#
# Each step ends with a **check** that compares your numbers with the package's and, if they
# are wrong in a known way, tells you which mistake you made. Write your code where it says
# `# YOUR CODE HERE` (delete the `raise NotImplementedError()` line).
#
# It runs offline on the package's small demo model, in seconds, with or without a GPU.

# %%
# Setup: installs the package where it is missing (Colab); elsewhere this does nothing.
import importlib.util

if importlib.util.find_spec("murano_widgets") is None:
    %pip install -q murano-widgets  # from GitHub: %pip install -q "murano-widgets @ git+https://github.com/murano-interp/murano_widgets"

# %% [markdown]
# ## The model
#
# `load_demo_model()` loads the package's demo model: a 6-layer Llama-style model trained on a
# small "toy world" (capitals, days, counting...). It needs no download and uses the GPU when
# there is one. **To use a real model, change this one line**, e.g. to
# `model = MuranoModel("gpt2")` (downloaded from the Hugging Face hub; every check works on it).

# %%
import functools
import math

import torch

from murano_widgets import MuranoModel, load_demo_model  # noqa: F401
from murano_widgets.exercises import check_kl_bits, check_layer_probs, check_top1, model_parts

model = load_demo_model()
parts = model_parts(model)
print(f"Running {model.name.split('/')[-1]} ({model.n_layers} layers) on {parts.device}")

# %% [markdown]
# `model_parts(model)` gives the pieces as plain PyTorch modules: `parts.model` (the Hugging
# Face model), `parts.blocks` (the decoder blocks), `parts.final_norm`, `parts.unembedding`
# (`lm_head`) and `parts.logit_transform` (what the model does to its logits before the
# softmax: nothing for most models, a soft-cap for Gemma 2).
#
# This helper reads every block's output with **forward hooks**: layer `i` of the lens is
# block `i`'s output.

# %%
PROMPT = "The capital of France is"


@functools.cache  # one forward pass per model and prompt
@torch.no_grad()
def block_outputs(model, prompt):
    """Every block's output for one prompt: [n_layers, seq, d_model]."""
    parts = model_parts(model)
    inputs = model.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
    saved = []

    def keep(module, args, output):
        saved.append(output[0] if isinstance(output, tuple) else output)

    hooks = [block.register_forward_hook(keep) for block in parts.blocks]
    try:
        parts.model(**inputs.to(parts.device))
    finally:
        for hook in hooks:
            hook.remove()
    return torch.stack([h[0] for h in saved])


hidden = block_outputs(model, PROMPT)
print(hidden.shape, "=", "[n_layers, seq, d_model]")

# %% [markdown]
# ## 1. One layer's lens
#
# Write `layer_probs(model, prompt, layer)`: the lens distribution at every position of the
# prompt, from block `layer`'s output. Apply, in order: the final norm, the unembedding, the
# model's logit transform, and a softmax over the vocabulary. It returns `[seq, vocab]`.

# %%
@torch.no_grad()
def layer_probs(model, prompt, layer):
    parts = model_parts(model)
    h = block_outputs(model, prompt)[layer]  # [seq, d_model]
    ### BEGIN SOLUTION
    logits = parts.unembedding(parts.final_norm(h))
    logits = parts.logit_transform(logits)
    return logits.softmax(dim=-1)
    ### END SOLUTION


# %%
check_layer_probs(layer_probs, model, PROMPT, layer=3)

# %% [markdown]
# ## 2. The top-1 token at every layer
#
# Write `top1(model, prompt)`: for every layer and position, the most likely token (its id)
# and its probability. Both are `[n_layers, seq]`.

# %%
@torch.no_grad()
def top1(model, prompt):
    probs = torch.stack([layer_probs(model, prompt, layer) for layer in range(model.n_layers)])
    ### BEGIN SOLUTION
    values, tokens = probs.max(dim=-1)
    return tokens, values
    ### END SOLUTION


# %%
tokens, probs = top1(model, PROMPT)
check_top1(tokens, probs, model, PROMPT)
for layer in range(model.n_layers):
    word = model.tokenizer.decode(tokens[layer, -1])
    print(f"layer {layer}: {word!r} ({probs[layer, -1]:.2f})")

# %% [markdown]
# ## 3. How far is each layer from the output? KL in bits
#
# The last layer's lens is the model's own output distribution. Write `kl_bits(model, prompt)`:
# for every layer and position, KL(final ‖ layer) = Σ p_final · (log p_final − log p_layer),
# **in bits** (log base 2). It returns `[n_layers, seq]`.

# %%
@torch.no_grad()
def kl_bits(model, prompt):
    probs = torch.stack([layer_probs(model, prompt, layer) for layer in range(model.n_layers)])
    final = probs[-1]
    ### BEGIN SOLUTION
    kl_nats = (final * (final.log() - probs.log())).sum(dim=-1)
    return kl_nats / math.log(2)
    ### END SOLUTION


# %%
check_kl_bits(kl_bits, model, PROMPT)
print(kl_bits(model, PROMPT)[:, -1])

# %% [markdown]
# The KL falls to 0 at the last layer: the lens there *is* the model's output. Next:
# exercise 2, the package's lenses, token groups and the logit difference.
