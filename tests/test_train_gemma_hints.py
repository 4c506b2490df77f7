"""The spans the hinted Gemma adapters train on (`examples/train_gemma.py hints`): each
training question is answered by the cross-fitted reader that left its article out
(`examples/train_reader.py --folds`), as the committed reader never read the articles the
systems ask about."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace

from examples import squad
from examples.systems.common import MODELS, readers
from examples.train_gemma import CONTEXTS, hints
from examples.train_reader import fold_articles


def test_the_folds_leave_out_disjoint_articles_that_cover_the_training_ones():
    left_out = [set(fold_articles(k, 2)) for k in range(2)]
    assert not left_out[0] & left_out[1]
    assert left_out[0] | left_out[1] == set(squad.article_split()["train"])


def test_each_span_comes_from_the_reader_that_left_the_questions_article_out(tmp_path):
    folds = tmp_path / "folds"
    folds.mkdir()
    shutil.copyfile(MODELS / "reader_l6.npz", folds / "reader_l6_fold0.npz")  # two different readers stand in
    shutil.copyfile(MODELS / "reader_l3.npz", folds / "reader_l6_fold1.npz")  # for the two folds
    picked = []
    for k in range(2):
        article = fold_articles(k, 2)[0]
        picked += [(k, q) for q in squad.questions_of("train") if q.article == article][:2]
    contexts = [{"qid": q.qid, "article": q.article, "question": q.question, "passages": [q.paragraph]}
                for _, q in picked]
    (tmp_path / CONTEXTS).write_text(json.dumps(contexts))
    hints(Namespace(readers=folds, model_dir=None, data=tmp_path / "train_data.npz", out=tmp_path / "h.json",
                    device="cpu"))
    spans = json.loads((tmp_path / "h.json").read_text())["spans"]
    fast, pro = readers()
    for k, q in picked:
        reader = pro if k == 0 else fast
        assert spans[q.qid] == reader.answer(q.question, [squad.paragraphs()[q.paragraph]]).text
