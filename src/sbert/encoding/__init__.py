"""The encode engine: token ids in, ordered float32 vectors out, whatever backend runs the model.

Token ids and batching live in the leaf `sbert.vectors`; streaming to shards in `sbert.scale`.

- `engine`: one call from token ids to an (n, dim) array through a backend;
- `long_text`: the chunk policy for inputs beyond max_seq_length;
- `multi_device`: one worker process per device, one ordered output.
"""
