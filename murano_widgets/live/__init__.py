"""The live lens: a widget that asks the kernel for more (a prompt typed in, a token tracked, a
cell patched) and shows the answer in place.

``combine.py`` joins and cuts results along the prompt axis exactly as one step call on those
prompts would lay them out, so that a new prompt runs alone and a removed one runs nothing.
"""

from murano_widgets.live.combine import concat_results, padding_of, select_prompts

__all__ = ["concat_results", "padding_of", "select_prompts"]
