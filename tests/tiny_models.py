"""Tiny language models of several architectures, built offline from configs.

Each is saved with ``save_pretrained`` to a folder and loaded back through the public path users
take (``MuranoModel(folder)``). Weights are random but seeded; the tokenizer is a byte-level BPE
trained here by the ``tokenizers`` library, so nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    CohereConfig,
    Gemma2Config,
    GemmaConfig,
    GPT2Config,
    GPTNeoXConfig,
    GraniteConfig,
    LlamaConfig,
    MistralConfig,
    OPTConfig,
    Phi3Config,
    PhiConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen3Config,
)

CORPUS = [
    "The Eiffel Tower is in the city of Paris.",
    "one two three four five six seven eight nine ten",
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "The capital of France is Paris and the capital of Italy is Rome.",
    "Alice met Bob. Alice gave Bob a book. Bob thanked Alice.",
    "<script>alert(1)</script> &amp; \"quotes\" 'single' \n newline\ttab",
    "Zürich café naïve — “curly” ‏rtl mark 日本語 emoji 🙂",
] * 4

N_LAYERS = 3
D_MODEL = 32
VOCAB = 320


# A small chat template for the tiny tokenizer: a header per message (a special token, the role,
# a newline), the content, a newline; then, for generation, the assistant's header.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)


def build_tokenizer(pad: bool = False) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``CORPUS`` (leading spaces are part of tokens)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    if pad:
        fast.pad_token = "<|endoftext|>"
    return fast


def _config(arch: str, vocab: int, bos: int):
    common = {"vocab_size": vocab, "bos_token_id": bos, "eos_token_id": bos}
    small = {
        "hidden_size": D_MODEL,
        "intermediate_size": 64,
        "num_hidden_layers": N_LAYERS,
        "num_attention_heads": 4,
        "max_position_embeddings": 256,
        **common,
    }
    if arch == "gpt2":
        return GPT2Config(n_embd=D_MODEL, n_layer=N_LAYERS, n_head=4, n_positions=256, **common)
    if arch == "llama":
        return LlamaConfig(num_key_value_heads=2, **small)
    if arch == "mistral":
        return MistralConfig(num_key_value_heads=2, **small)
    if arch == "qwen2":
        return Qwen2Config(num_key_value_heads=2, **small)
    if arch == "qwen3":
        return Qwen3Config(num_key_value_heads=2, head_dim=8, **small)
    if arch == "gemma":
        return GemmaConfig(num_key_value_heads=1, head_dim=8, **small)
    if arch == "gemma2":
        return Gemma2Config(
            num_key_value_heads=2,
            head_dim=8,
            final_logit_softcapping=5.0,
            attn_logit_softcapping=50.0,
            **small,
        )
    if arch == "gpt_neox":
        return GPTNeoXConfig(**small)
    # Not in ARCHITECTURES: the nnsight backend's tests build these two (OPT's blocks sit under
    # model.decoder, where reference.py does not look).
    if arch == "opt":
        return OPTConfig(
            hidden_size=D_MODEL,
            ffn_dim=64,
            num_hidden_layers=N_LAYERS,
            num_attention_heads=4,
            max_position_embeddings=256,
            word_embed_proj_dim=D_MODEL,
            pad_token_id=bos,
            **common,
        )
    if arch == "phi3":
        return Phi3Config(
            num_key_value_heads=2,
            original_max_position_embeddings=256,
            pad_token_id=bos,
            **small,
        )
    # Models that transform lm_head's output (TRANSFORMING), and one nnterp cannot rename (Phi):
    # test_logit_transforms.py builds these.
    if arch == "cohere":
        return CohereConfig(num_key_value_heads=2, logit_scale=0.3, **small)
    if arch == "granite":
        return GraniteConfig(num_key_value_heads=2, logits_scaling=4.0, **small)
    if arch == "phi":
        return PhiConfig(**small)
    raise ValueError(f"unknown architecture {arch!r}")


ARCHITECTURES = ("gpt2", "llama", "qwen2", "qwen3", "gemma", "gemma2", "gpt_neox", "mistral")
# Each changes lm_head's output before its softmax: Cohere multiplies it by logit_scale, Granite
# divides it by logits_scaling.
TRANSFORMING = ("cohere", "granite")


def build_tiny_model(arch: str, folder: Path, seed: int = 0) -> Path:
    """Saves a tiny random model of ``arch`` with its tokenizer to ``folder`` and returns it."""
    tokenizer = build_tokenizer(pad=False)
    config = _config(arch, len(tokenizer), tokenizer.bos_token_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    # Random init at std 0.02 gives near-uniform predictions; a larger scale spreads them so
    # that top-k orders, entropies and KLs are distinct enough to compare meaningfully.
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.3)
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_unknown_architecture(folder: Path) -> Path:
    """A tiny Persimmon model: an architecture the nnsight backend has no layout for."""
    from transformers import PersimmonConfig

    tokenizer = build_tokenizer()
    config = PersimmonConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
