"""Registry names the CLI shows in its help, kept here so that `sbert --help` imports no torch.

`sbert.losses.LOSSES`, `sbert.backends.BACKENDS` and `sbert.modules.POOLERS` are keyed by these
names, in this order, and `sbert.device` accepts these precisions (tests/test_cli.py checks that the
registries agree).
"""

OBJECTIVES = ("classification", "regression", "triplet", "mnrl", "cached-mnrl", "cosent", "infomax", "splade",
              "colbert", "cached-colbert", "colbert-distill")  # fmt: skip
BACKEND_NAMES = ("torch", "torch-int8", "onnx", "onnx-int8", "openvino", "openvino-int8")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# `--pooling`: every Pooling mode (sbert.modules.pooling.POOLING_FUNCTIONS), then the two other heads.
POOLER_NAMES = ("mean", "max", "cls", "mean_sqrt_len_tokens", "weightedmean", "lasttoken", "cnn", "ngram-cnn")
# `--dense OUT[:ACTIVATION]`: the activations by the short names the CLI takes.
DENSE_ACTIVATIONS = ("identity", "tanh", "relu", "gelu", "sigmoid")
# `sbert encode-sparse --format`: the search engines whose ingest shape sbert.sparse.export writes.
SPARSE_EXPORT_FORMATS = ("qdrant", "opensearch", "elasticsearch")
# What a SparseEncoder runs on (sbert.sparse.model.BACKENDS): torch, or SPLADE's one graph on a runtime.
SPARSE_BACKEND_NAMES = ("torch", "onnx", "onnx-int8", "openvino", "openvino-int8")
