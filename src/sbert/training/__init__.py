"""Fine-tuning: stages of objectives, AdamW with warm-up, dev evaluation, checkpoints, resume, DDP."""

from sbert.training.api import train
from sbert.training.config import Objective, Stage, TrainConfig, load_config
from sbert.training.step import TrainingError
from sbert.training.trainer import Trainer, TrainResult

__all__ = ["Objective", "Stage", "TrainConfig", "TrainResult", "Trainer", "TrainingError", "load_config", "train"]
