"""Scale-out above the model kinds: corpora larger than memory streamed to resumable shards (`streaming`).

Ray Data encoding lives in `sbert.distributed`; one worker per device in `sbert.encoding.multi_device`.
"""
