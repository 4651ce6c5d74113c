"""Adapters between compactkit items and the providers' wire formats."""

from compactkit.formats.chat import ChatProblem, chat_to_items, items_to_chat, validate_chat

__all__ = ["ChatProblem", "chat_to_items", "items_to_chat", "validate_chat"]
