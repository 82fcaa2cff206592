"""Adapter for any local causal LM whose tokenizer carries a chat template.

The observation is one user message (the environment legend, the board and the request for an
``<action>...</action>`` tag); the prompt is the chat template applied with a generation prompt.
An unparseable reply is the action ``invalid``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from crbc.policy.base import Policy
from crbc.policy.load_lock import LOAD_LOCK
from crbc.policy.prompting import chat_response, chat_user_message, parse_chat

__all__ = ["ChatPolicy", "DEFAULT_CHAT_MAX_NEW_TOKENS", "has_chat_template", "load_chat"]

DEFAULT_CHAT_MAX_NEW_TOKENS = 24


class ChatPolicy(Policy):
    """Policy over a chat-template causal LM (e.g. a Qwen2.5-Instruct folder on disk)."""

    def __init__(self, model, tokenizer, name: str,
                 max_new_tokens: int = DEFAULT_CHAT_MAX_NEW_TOKENS):
        super().__init__(model, tokenizer, name)
        self.max_new_tokens = max_new_tokens
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    def observation(self, env) -> str:
        return chat_user_message(env.render(), env.legend())

    def prompt(self, observation: str) -> str:
        messages = [{"role": "user", "content": observation}]
        return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=True)

    def parse(self, token_ids: Sequence[int]) -> tuple[str, str]:
        """The raw text keeps the stop token, so that ``response_logprobs`` scores it too."""
        text = self.tokenizer.decode(list(token_ids), skip_special_tokens=False)
        return parse_chat(text), text

    def canonical_response(self, action: str) -> str:
        return chat_response(action) + (self.tokenizer.eos_token or "")


def has_chat_template(tokenizer) -> bool:
    """True when the tokenizer defines a chat template."""
    return bool(getattr(tokenizer, "chat_template", None))


def load_chat(path: str | Path, name: str | None = None, device: str = "cpu",
              max_new_tokens: int = DEFAULT_CHAT_MAX_NEW_TOKENS, tokenizer=None) -> ChatPolicy:
    """Load a chat-template causal LM folder offline."""
    if tokenizer is None:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not has_chat_template(tokenizer):
        raise ValueError(f"{path}: the tokenizer has no chat template")
    hf_logging.disable_progress_bar()
    with LOAD_LOCK:  # transformers' meta-device construction is not thread-safe
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device).eval()
    return ChatPolicy(model, tokenizer, str(path) if name is None else name, max_new_tokens)
