"""What sbert deliberately leaves out of sentence-transformers' public surface (6.3), each name with its reason.

tests/test_st_surface.py fails on any public name of 6.3 that sbert lacks or takes otherwise and that is
not here, and on any name here that sbert has since gained (the list only shrinks). Names that 6.3's
trainer and training arguments inherit unchanged from transformers' Trainer and TrainingArguments are
left out by rule there (sbert's engine is the loop); the arguments' fields are compared by value.
docs/migrating.md groups these for users.
"""

ADAPTER = (
    "PEFT adapter folders on a cross-encoder or a sparse encoder: sbert loads them through sbert.adapters "
    "(`sbert train --lora`, adapter folders); the dense drop-in class has load_adapter / set_adapter"
)
HUB = "uploads to and downloads from a model hub: sbert loads local folders and installed packages"
NANO = "NanoBEIR evaluators download their datasets from a hub: sbert evaluates on local data (sbert eval)"
EVAL = "not yet: an evaluator sbert does not provide"
UTILINT = (
    "6.2's internal helpers (distributed gathers, logging set-up, package and version checks, token-batch "
    "padding, imports by name): not what scripts call"
)
SEQ = "nn.Sequential's list methods: sbert's models are a chain of modules, not a torch Sequential"
NOTYET = "not yet on sbert's class"
DEPRECATED = "deprecated in 6.2, which forwards it to a method its own Transformer module no longer has"
OWN_LOAD = (
    "sbert's own classmethod load(name_or_path, device, ...) under the name 6.2 deprecated (its static "
    "load(input_path)); a positional call loads the same folder"
)
MODULE_BASE = (
    "6.3's abstract base classes for custom modules: sbert's chains run sbert's own modules (sbert.modules.Module), "
    "and a modules.json naming a custom class is refused by name"
)
CLIP = (
    "sentence-transformers 5's CLIPModel module: sbert loads its saved folders (0_CLIPModel) as an image-text "
    "Transformer (sbert.modules.ImageTextTransformer); building one by name fetches it from a hub"
)
LOOP = (
    "6.2's own steps of transformers' training loop (dataset preparation, batch samplers, loss computation, "
    "model card callbacks): sbert's engine runs these its own way"
)

ALLOWED: dict[str, str] = {
    "SentenceTransformerTrainer.add_dataset_name_column": LOOP,  # missing
    "SentenceTransformerTrainer.add_dataset_name_transform": LOOP,  # missing
    "SentenceTransformerTrainer.add_model_card_callback": LOOP,  # missing
    "SentenceTransformerTrainer.call_model_init": LOOP,  # missing
    "SentenceTransformerTrainer.collect_features": LOOP,  # missing
    "SentenceTransformerTrainer.compute_loss": LOOP,  # missing
    "SentenceTransformerTrainer.create_model_card": LOOP,  # missing
    "SentenceTransformerTrainer.data_collator_class": LOOP,  # missing
    "SentenceTransformerTrainer.evaluation_loop": LOOP,  # missing
    "SentenceTransformerTrainer.get_batch_sampler": LOOP,  # missing
    "SentenceTransformerTrainer.get_data_collator": LOOP,  # missing
    "SentenceTransformerTrainer.get_eval_dataloader": LOOP,  # missing
    "SentenceTransformerTrainer.get_multi_dataset_batch_sampler": LOOP,  # missing
    "SentenceTransformerTrainer.get_optimizer_cls_and_kwargs": LOOP,  # missing
    "SentenceTransformerTrainer.get_test_dataloader": LOOP,  # missing
    "SentenceTransformerTrainer.get_train_dataloader": LOOP,  # missing
    "SentenceTransformerTrainer.model_card_callback_class": LOOP,  # missing
    "SentenceTransformerTrainer.model_card_data_class": LOOP,  # missing
    "SentenceTransformerTrainer.override_model_in_loss": LOOP,  # missing
    "SentenceTransformerTrainer.prepare_loss": LOOP,  # missing
    "SentenceTransformerTrainer.preprocess_dataset": LOOP,  # missing
    "SentenceTransformerTrainer.should_dataset_name_column_be_added": LOOP,  # missing
    "SentenceTransformerTrainer.track_loss_components": LOOP,  # missing
    "SentenceTransformerTrainer.validate_column_names": LOOP,  # missing
    "CrossEncoder.append": SEQ,  # missing
    "CrossEncoder.default_huggingface_organization": HUB,  # missing
    "CrossEncoder.extend": SEQ,  # missing
    "CrossEncoder.insert": SEQ,  # missing
    "CrossEncoder.load_adapter": ADAPTER,  # missing
    "CrossEncoder.pop": SEQ,  # missing
    "CrossEncoder.push_to_hub": HUB,  # missing
    "CrossEncoder.save_to_hub": HUB,  # missing
    "CrossEncoder.set_adapter": ADAPTER,  # missing
    "CrossEncoder.set_keep_in_fp32_modules": NOTYET,  # missing
    "SentenceTransformer.default_huggingface_organization": HUB,  # missing
    "SentenceTransformer.get_sentence_features": DEPRECATED,  # missing
    "SentenceTransformer.load": OWN_LOAD,  # no parameter 'input_path'
    "SentenceTransformer.push_to_hub": HUB,  # missing
    "SentenceTransformer.save_to_hub": HUB,  # missing
    "SparseEncoder.append": SEQ,  # missing
    "SparseEncoder.default_huggingface_organization": HUB,  # missing
    "SparseEncoder.extend": SEQ,  # missing
    "SparseEncoder.insert": SEQ,  # missing
    "SparseEncoder.load_adapter": ADAPTER,  # missing
    "SparseEncoder.pop": SEQ,  # missing
    "SparseEncoder.push_to_hub": HUB,  # missing
    "SparseEncoder.save_to_hub": HUB,  # missing
    "SparseEncoder.set_adapter": ADAPTER,  # missing
    "sbert.DefaultBatchSampler": NOTYET,  # missing
    "sbert.MultiDatasetDefaultBatchSampler": NOTYET,  # missing
    "sbert.evaluation.NanoBEIREvaluator": EVAL,  # missing
    "sbert.export_dynamic_quantized_onnx_model": NOTYET,  # missing
    "sbert.export_optimized_onnx_model": NOTYET,  # missing
    "sbert.export_static_quantized_openvino_model": NOTYET,  # missing
    "sbert.util.ORIGINAL_TRANSFORMER_MODELS": UTILINT,  # missing
    "sbert.util.check_teacher_targets": UTILINT,  # missing
    "sbert.util.check_version_requirements": UTILINT,  # missing
    "sbert.util.http_get": HUB,  # missing
    "sbert.util.import_module_class": UTILINT,  # missing
    "sbert.util.install_logger": UTILINT,  # missing
    "sbert.util.is_sentence_transformer_model": HUB,  # missing
    "sbert.util.load_dir_path": HUB,  # missing
    "sbert.util.load_file_path": HUB,  # missing
    "sbert.util.repad_flattened_features": UTILINT,  # missing
    "sbert.util.save_to_hub_args_decorator": HUB,  # missing
    "sbert.cross_encoder.CrossEncoderDataCollator": LOOP,  # missing
    "sbert.cross_encoder.evaluation.CrossEncoderNanoBEIREvaluator": NANO,  # missing
    "sbert.sparse_encoder.SparseEncoderDataCollator": LOOP,  # missing
    "sbert.multi_vector_encoder.MultiVectorEncoderDataCollator": LOOP,  # missing
    "sbert.sparse_encoder.evaluation.SparseNanoBEIREvaluator": NANO,  # missing
    "sbert.multi_vector_encoder.evaluation.MultiVectorNanoBEIREvaluator": NANO,  # missing
    "sbert.models.CLIPModel": CLIP,  # missing
    "sbert.models.InputModule": MODULE_BASE,  # missing
    "sbert.models.Module": MODULE_BASE,  # missing
    "sbert.sentence_transformer.modules.CLIPModel": CLIP,  # missing
    "sbert.sentence_transformer.modules.InputModule": MODULE_BASE,  # missing
    "sbert.sentence_transformer.modules.Module": MODULE_BASE,  # missing
    "sbert.base.modules.InputModule": MODULE_BASE,  # missing
    "sbert.base.modules.Module": MODULE_BASE,  # missing
}
