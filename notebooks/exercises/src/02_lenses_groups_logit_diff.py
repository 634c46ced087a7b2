# %% [markdown]
# # Exercise 2: lenses, token groups and the logit difference
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/murano-interp/murano_widgets/blob/main/notebooks/exercises/student/02_lenses_groups_logit_diff.ipynb)
#
# In exercise 1 you computed the logit lens by hand. The package computes it for you, on any
# model, with `run_logit_lens`. Two questions come up at once when you read a lens:
#
# 1. **Does the model prefer the right answer over a wrong one?** The *logit difference*
#    logit(answer) − logit(foil), per layer (about 10 minutes).
# 2. **How likely is a word, not a token?** A word can start with several tokens (" Paris",
#    " Par", " P", ...): its *token group*'s probability is the sum over all of them
#    (about 15 minutes).
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
import functools

import torch

from murano_widgets import MuranoModel, load_demo_model, run_logit_lens  # noqa: F401
from murano_widgets.exercises import check_group_prob, check_logit_diff, model_parts

model = load_demo_model()
parts = model_parts(model)
print(f"Running {model.name.split('/')[-1]} ({model.n_layers} layers) on {parts.device}")

PROMPT = "The capital of France is"

# %% [markdown]
# ## The package's lens
#
# `run_logit_lens` runs the model once and reads every layer's lens. Its `predicted_words`
# are the top-1 tokens you computed in exercise 1.

# %%
result = run_logit_lens(model, PROMPT)
for layer in range(model.n_layers):
    word = result.predicted_words[layer][0][-1]
    print(f"layer {layer}: {word!r} ({result.max_probs[layer, 0, -1]:.2f})")

# %% [markdown]
# ### On a real model, on NDIF
#
# [NDIF](https://ndif.us) runs large models for you: the trace runs there and only the lens
# comes back. **Change `REMOTE = False` to `REMOTE = True`** to run this cell on Llama 3.1 8B.
# It needs an NDIF API key (`export NDIF_API_KEY=...`, from https://login.ndif.us) and
# nnsight 0.8 (`pip install "nnsight==0.8.1" "transformers>=5,<5.23"`: see the documentation's
# "Remote models" guide). The checks below stay on the local model: they need its weights.

# %%
REMOTE = False
if REMOTE:
    big = MuranoModel("meta-llama/Llama-3.1-8B", backend="nnsight")  # config and tokenizer only
    remote_result = run_logit_lens(big, PROMPT, remote=True)
    print([row[0][-1] for row in remote_result.predicted_words])

# %% [markdown]
# Two helpers: every block's output (as in exercise 1), and the first token a text adds after
# the prompt (" Paris" is one token here; a longer word may be several).

# %%
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


def first_token(model, prompt, text):
    """The id of the first token `text` adds after `prompt`."""
    n = len(model.tokenizer(prompt)["input_ids"])
    return model.tokenizer(prompt + text)["input_ids"][n]


@torch.no_grad()
def last_position_logits(model, prompt):
    """Every layer's lens logits at the prompt's last position: [n_layers, vocab]."""
    parts = model_parts(model)
    h = block_outputs(model, prompt)[:, -1]
    return parts.logit_transform(parts.unembedding(parts.final_norm(h)))


# %% [markdown]
# ## 1. The logit difference
#
# Write `logit_diff(model, prompt, answer, foil)`: at the last position, per layer, the lens
# logit of the answer's first token minus the foil's. It returns `[n_layers]`. Positive means
# the layer prefers the answer.

# %%
def logit_diff(model, prompt, answer, foil):
    logits = last_position_logits(model, prompt)
    a, f = first_token(model, prompt, answer), first_token(model, prompt, foil)
    ### BEGIN SOLUTION
    return logits[:, a] - logits[:, f]
    ### END SOLUTION


# %%
check_logit_diff(logit_diff, model, PROMPT, " Paris", " Rome")
print(logit_diff(model, PROMPT, " Paris", " Rome"))

# %% [markdown]
# ## 2. A token group's probability
#
# A word's **group** is every token whose text is a prefix of the word, with or without its
# leading space (" Paris", " P", "Paris", "P", ...; a token of white space alone does not
# count): every way the model could start writing it. Write `group_prob(model, prompt, word)`:
# at the last position, per layer, the sum of the lens probabilities of the group's tokens,
# each counted once. It returns `[n_layers]`.

# %%
def group_prob(model, prompt, word):
    probs = last_position_logits(model, prompt).softmax(dim=-1)
    texts = [model.tokenizer.decode([i]) for i in range(len(model.tokenizer))]
    forms = [word.strip(), " " + word.strip()]
    ### BEGIN SOLUTION
    group = {
        i
        for i, text in enumerate(texts)
        if text.strip() and any(form.startswith(text) for form in forms)
    }
    return probs[:, sorted(group)].sum(dim=-1)
    ### END SOLUTION


# %%
check_group_prob(group_prob, model, PROMPT, "Paris")
print(group_prob(model, PROMPT, "Paris"))

# %% [markdown]
# Next: exercise 3, which component wrote the answer, and what a patch changes.
