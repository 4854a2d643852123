"""The encode engine: token ids in, ordered float32 vectors out, whatever backend runs the model.

- `tokens`: token ids from a Rust tokenizer, threaded for large inputs;
- `batching`: smart batching (sort by token length, cut by a padded or packed token budget);
- `engine`: one call from token ids to an (n, dim) array through a backend;
- `long_text`: the chunk policy for inputs beyond max_seq_length;
- `streaming`: ordered, resumable .npy shards for corpora larger than memory;
- `multi_device`: one worker process per device, one ordered output.
"""
