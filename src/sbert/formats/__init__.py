"""The on-disk layouts, below every model kind; each file of a layout is parsed in one function here.

Model names and folders (aliases, model_dirs), the sentence-transformers files (layout: modules.json,
router_config.json, atomic writes) and the model's settings (model_config: config_sentence_transformers.json).
"""
