"""Fine-tuning: stages of objectives, AdamW with warm-up, dev evaluation, checkpoints, resume, DDP."""

from sbert.training.config import Objective, Stage, TrainConfig, load_config
from sbert.training.trainer import Trainer, TrainingError, TrainResult

__all__ = ["Objective", "Stage", "TrainConfig", "TrainResult", "Trainer", "TrainingError", "load_config"]
