"""SQuAD v1.1 dev: loading and the by-article split. (The answer metrics,
containment, token F1 and exact match, live in `autotuner.metrics`: one definition
for tuning, evaluation, the examples and the benchmarks.)

No SQuAD train file exists here, so the dev set is split BY ARTICLE (disjoint
articles for training the readers, for tuning and for evaluation). The split is
fixed here, in code: the 48 article titles sorted, permuted with seed 0; the first
28 train the readers, the next 4 give the tuning questions, the last 16 the
evaluation questions (systems sample tuning N and evaluation 5N questions)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from frontends.components.folders import data_dir

SPLIT_SEED = 0
N_TRAIN_ARTICLES, N_TUNE_ARTICLES = 28, 4


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]
    paragraph: int  # index into paragraphs()
    article: str


@lru_cache(maxsize=2)
def _load(path: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Question, ...]]:
    try:
        articles = json.loads(Path(path).read_text())["data"]
    except OSError as err:
        raise FileNotFoundError(f"{path}: {err.strerror} (set APPROX_DATA_DIR to the benchmark data folder)") from None
    paragraphs, owners, questions = [], [], []
    for article in articles:
        for para in article["paragraphs"]:
            idx = len(paragraphs)
            paragraphs.append(para["context"])
            owners.append(article["title"])
            for qa in para["qas"]:
                questions.append(Question(
                    qa["id"], qa["question"], tuple(a["text"] for a in qa["answers"]),
                    tuple(a["answer_start"] for a in qa["answers"]), idx, article["title"],
                ))
    return tuple(paragraphs), tuple(owners), tuple(questions)


def squad_path() -> Path:
    return data_dir() / "squad" / "dev-v1.1.json"


def paragraphs(path: Path | None = None) -> tuple[str, ...]:
    """All 2,067 paragraphs: the retrieval corpus."""
    return _load(str(path or squad_path()))[0]


def questions(path: Path | None = None) -> tuple[Question, ...]:
    return _load(str(path or squad_path()))[2]


def article_split(path: Path | None = None) -> dict[str, tuple[str, ...]]:
    titles = sorted({q.article for q in questions(path)})
    order = [titles[i] for i in np.random.RandomState(SPLIT_SEED).permutation(len(titles))]
    a, b = N_TRAIN_ARTICLES, N_TRAIN_ARTICLES + N_TUNE_ARTICLES
    return {"train": tuple(order[:a]), "tune": tuple(order[a:b]), "eval": tuple(order[b:])}


def questions_of(part: str, path: Path | None = None) -> list[Question]:
    chosen = set(article_split(path)[part])
    return [q for q in questions(path) if q.article in chosen]


def sample_questions(n_tune: int, seed: int = 0, eval_factor: int = 5, path: Path | None = None):
    """Disjoint tuning and evaluation questions (evaluation = 5x tuning), seeded."""
    rng = np.random.RandomState(seed)
    tune, evaluation = questions_of("tune", path), questions_of("eval", path)
    pick = lambda qs, n: [qs[i] for i in sorted(rng.choice(len(qs), size=min(n, len(qs)), replace=False))]  # noqa: E731
    return pick(tune, n_tune), pick(evaluation, n_tune * eval_factor)
