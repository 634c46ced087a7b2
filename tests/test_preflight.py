"""The memory preflight: a request that cannot fit is refused before any work, naming its cause.

The limits are faked (the free-memory query is replaced), never reached: nothing here allocates
more than a tiny model needs.
"""

from __future__ import annotations

import pytest
import torch

from murano_widgets import LogitLens, PromptBatch, Results, _memory
from murano_widgets._memory import (
    MemoryBudgetError,
    Need,
    free_memory,
    parse_bytes,
    preflight,
    set_memory_budget,
)

PROMPTS = ["The Eiffel Tower is in the city of", "one two three"]


@pytest.fixture(autouse=True)
def no_budget(monkeypatch):
    monkeypatch.delenv("MURANO_MEMORY_BUDGET", raising=False)
    set_memory_budget(None)
    yield
    set_memory_budget(None)


@pytest.fixture
def forward_calls(load_tiny):
    """The tiny GPT-2, and a list that grows each time its Hugging Face module runs forward."""
    model = load_tiny("gpt2")
    calls: list[int] = []
    hook = model._hf_model.register_forward_pre_hook(lambda *_: calls.append(1))
    yield model, calls
    hook.remove()


def fake_free(monkeypatch, nbytes: int) -> None:
    monkeypatch.setattr(_memory, "free_memory", lambda device="cpu": (nbytes, "faked free"))


def run(model, **options):
    results = Results(prompts=PromptBatch(list(PROMPTS)))
    return LogitLens(model, **options)(results)["logit_lens"]


def test_store_full_probs_beyond_free_memory_is_refused_before_the_model_runs(
    forward_calls, monkeypatch
):
    model, calls = forward_calls
    full = run(model, store_full_probs=True)  # fits: it runs
    assert calls
    size = full.all_probs.numel() * full.all_probs.element_size()
    calls.clear()
    # Free memory just below what all_probs holds: refused, and the model never ran.
    fake_free(monkeypatch, size - 1)
    with pytest.raises(MemoryBudgetError) as refused:
        run(model, store_full_probs=True)
    assert not calls
    message = str(refused.value)
    assert "store_full_probs=True" in message
    assert "faked free" in message
    assert "store_full_probs=False" in message  # what to do instead
    assert f"vocabulary {model.vocab_size}" in message
    # The same request without the full distributions fits.
    run(model)
    assert calls


def test_the_estimate_of_full_probs_is_what_the_result_holds(forward_calls, monkeypatch):
    model, _ = forward_calls
    full = run(model, store_full_probs=True)
    size = full.all_probs.numel() * full.all_probs.element_size()
    seen = []
    monkeypatch.setattr(_memory, "free_memory", lambda device="cpu": seen.append(device))
    original = _memory.preflight

    def spy(what, needs):
        seen.append({need.option: need.nbytes for need in needs})
        return original(what, needs)

    monkeypatch.setattr("murano_widgets.step.assemble.preflight", spy)
    run(model, store_full_probs=True)
    assert seen[0]["store_full_probs=True"] == size


def test_a_budget_the_user_sets_refuses_what_the_machine_would_allow(forward_calls, monkeypatch):
    model, calls = forward_calls
    set_memory_budget("1 KiB")
    with pytest.raises(MemoryBudgetError, match="memory budget"):
        run(model)
    assert not calls
    set_memory_budget(None)
    monkeypatch.setenv("MURANO_MEMORY_BUDGET", "2kb")
    with pytest.raises(MemoryBudgetError, match=r"2\.0 KiB the memory budget"):
        run(model)
    monkeypatch.setenv("MURANO_MEMORY_BUDGET", "64 GiB")
    run(model)
    assert calls


def test_gpu_parts_are_checked_against_the_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (1000, 80 * 2**30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: 500)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: 200)
    assert free_memory("cuda:0") == (1300, "free on cuda:0 (torch.cuda.mem_get_info)")
    fits = Need("max_chunk_bytes=1000", 1300, device="cuda:0")
    preflight("a request", [fits])
    over = Need("max_chunk_bytes=2000", 1301, "three buffers", "Lower it.", device="cuda:0")
    with pytest.raises(MemoryBudgetError) as refused:
        preflight("a request", [over, Need("cpu part", 10)])
    assert "on cuda:0" in str(refused.value)
    assert "max_chunk_bytes=2000" in str(refused.value)
    assert "Lower it." in str(refused.value)


def test_the_largest_part_is_named(monkeypatch):
    fake_free(monkeypatch, 100)
    with pytest.raises(MemoryBudgetError) as refused:
        preflight("x", [Need("small", 40), Need("big=True", 80, "counted so", "Do less.")])
    message = str(refused.value)
    assert "big=True alone takes 80 B of the 120 B in all (counted so)" in message
    assert "Do less." in message


def test_free_memory_reads_this_machine():
    free, source = free_memory()
    assert 0 < free < 2**50
    assert source
    assert free_memory("mps") is None  # no portable query: only a budget applies there


@pytest.mark.parametrize(
    ("given", "expected"),
    [(0, 0), (512, 512), ("512", 512), ("2 KiB", 2048), ("1.5GB", 3 * 2**29), ("1 t", 2**40)],
)
def test_parse_bytes(given, expected):
    assert parse_bytes(given) == expected


@pytest.mark.parametrize("given", [-1, "lots", "2 XB", True, 1.5])
def test_parse_bytes_refuses_what_is_not_a_size(given):
    with pytest.raises(ValueError, match="budget"):
        set_memory_budget(given)


def test_a_data_set_too_large_to_hold_is_refused_before_the_model_runs(forward_calls, monkeypatch):
    from murano_widgets import lens_dataset

    model, calls = forward_calls
    prompts = PROMPTS * 50
    fake_free(monkeypatch, 10_000)
    with pytest.raises(MemoryBudgetError, match=r"lens_dataset on 100 prompts .* 100 prompts"):
        lens_dataset(model, prompts, [" Paris"] * len(prompts), progress=False)
    assert not calls


def test_payload_and_export_beyond_free_memory_are_refused(forward_calls, monkeypatch):
    from murano_widgets.export import base64_sections
    from murano_widgets.payload.lens import LensPayload

    model, _ = forward_calls
    result = run(model)
    payload = LensPayload.from_result(result)  # fits
    sections = payload.all_sections()
    fake_free(monkeypatch, 1000)
    with pytest.raises(MemoryBudgetError, match="the widget's payload"):
        LensPayload.from_result(result)
    with pytest.raises(MemoryBudgetError, match=r"the HTML export .*base64 text"):
        base64_sections(sections)


def test_compare_of_full_distributions_beyond_free_memory_is_refused(forward_calls, monkeypatch):
    from murano_widgets import compare

    model, _ = forward_calls
    a = run(model, store_full_probs=True)
    b = run(model, store_full_probs=True)
    assert compare(a, b).kl_a_to_b is not None  # fits
    fake_free(monkeypatch, 1000)
    with pytest.raises(MemoryBudgetError, match=r"compare's KL .*all_probs.*compare_lenses"):
        compare(a, b)
