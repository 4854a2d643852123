"""sentence-transformers 6.2's `sentence_transformers.base` package path (its shared modules live in `.modules`)."""
