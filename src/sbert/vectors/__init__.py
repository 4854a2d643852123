"""Leaf helpers every layer may use, importing nothing of sbert's own.

- `tokens`: token ids from a Rust tokenizer, threaded for large inputs;
- `batching`: smart batching (sort by token length, cut by a padded or packed token budget).
- `positions`: position ids by a backbone's rule for packed rows;
- `chat_text`: texts rendered through a tokenizer's chat template (6.3's `message` modality).
"""
