"""The paper's numbers (Reimers & Gurevych, EMNLP 2019), printed beside ours in `sbert reproduce`.

Transcribed from the paper's tables; every model there starts from BERT/RoBERTa-base or -large.
"""

from __future__ import annotations

STS_COLUMNS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
TRANSFER_COLUMNS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")

# Table 1: Spearman x100 of cosine, no training on STS data.
TABLE1: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (55.14, 70.66, 59.73, 68.25, 63.66, 58.02, 53.76),
    "Avg. BERT embeddings": (38.78, 57.98, 57.98, 63.15, 61.06, 46.35, 58.40),
    "BERT CLS-vector": (20.16, 30.01, 20.09, 36.88, 38.08, 16.50, 42.63),
    "InferSent - GloVe": (52.86, 66.75, 62.15, 72.77, 66.87, 68.03, 65.65),
    "Universal Sentence Encoder": (64.49, 67.80, 64.61, 76.83, 73.18, 74.92, 76.69),
    "SBERT-NLI-base": (70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91),
    "SBERT-NLI-large": (72.27, 78.46, 74.90, 80.99, 76.25, 79.23, 73.75),
}

# Table 2: STS benchmark test Spearman x100 after supervised training, mean ± std over 10 seeds.
TABLE2: dict[str, tuple[float, float]] = {
    "BERT-STSb-base (cross-encoder)": (84.30, 0.76),
    "SBERT-STSb-base": (84.67, 0.19),
    "BERT-NLI-STSb-base (cross-encoder)": (88.33, 0.19),
    "SBERT-NLI-STSb-base": (85.35, 0.17),
}

# Table 5: SentEval transfer accuracy x100 (logistic regression on frozen embeddings).
TABLE5: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (77.25, 78.30, 91.17, 87.85, 80.18, 83.0, 72.87),
    "Avg. BERT embeddings": (78.66, 86.25, 94.37, 88.66, 84.40, 92.8, 69.45),
    "BERT CLS-vector": (78.68, 84.85, 94.21, 88.23, 84.13, 91.4, 71.13),
    "InferSent - GloVe": (81.57, 86.54, 92.50, 90.38, 84.18, 88.2, 75.77),
    "Universal Sentence Encoder": (80.09, 85.19, 93.98, 86.70, 86.38, 93.2, 70.14),
    "SBERT-NLI-base": (83.64, 89.43, 94.39, 89.86, 88.96, 89.6, 76.00),
    "SBERT-NLI-large": (84.88, 90.07, 94.52, 90.33, 90.66, 87.4, 75.94),
}

# Table 7: sentences per second (CPU: i7-5820K, 6 cores; GPU: V100), STS benchmark sentences.
TABLE7: dict[str, tuple[float | None, float | None]] = {
    "Avg. GloVe embeddings": (6469, None),
    "InferSent": (137, 1876),
    "Universal Sentence Encoder": (67, 1318),
    "SBERT-base": (44, 1378),
    "SBERT-base - smart batching": (83, 2042),
}
