"""Tune your own pipeline (README): a prompt-level query rewrite and an answer by a model behind
an OpenAI-compatible endpoint (APPROX_LLM_URL; start one locally with
`python -m frontends.components.llm.serve --model smol=smollm2 --port 8000`), BM25 over a few
documents, and a tool the program runs; each declares its knobs where it is defined."""

import os

from frontends import Bm25Retriever, Generate, Knob, OpenAIAnswerModel, Prompt, Retrieve, RunTool, Tune

DOCS = ["The Eiffel Tower is in Paris. It was finished in 1889.", "Mount Everest, in the Himalayas, is 8,849 m high.",
        "The Amazon is the largest rainforest on Earth.", "Ada Lovelace wrote the first computer program.",
        "The Danube flows through Vienna and Budapest.", "Marie Curie won Nobel Prizes in physics and chemistry."]
QA = [("Which city is the Eiffel Tower in?", "Paris"), ("How high is Mount Everest?", "8,849 m"),
      ("Who wrote the first computer program?", "Ada Lovelace"), ("Which river flows through Vienna?", "Danube"),
      ("When was the Eiffel Tower finished?", "1889"), ("What is the largest rainforest?", "Amazon")]

smol = OpenAIAnswerModel(os.environ.get("APPROX_LLM_URL", "http://127.0.0.1:8000/v1"), "smol", api="chat",
                         timeout=60, name="smol")


def first_sentence(text: str) -> str:
    """The first sentence of `text`: what the pipeline returns."""
    return text.split(". ")[0].strip()


rewrite = Prompt("rewrite", smol, template="Rewrite as a short search query: {question}", outputs=["query"],
                 max_new_tokens=16, tune=[Tune.skip(fallback=Tune.input("question"))])
search = Retrieve("search", Bm25Retriever(DOCS), top_k=2, tune=[Tune.param("top_k", 1)])
answer = Generate("answer", smol, max_new_tokens=12, tune=[Tune.param("max_new_tokens", 6)])
tidy = RunTool("tidy", first_sentence, tune=[Tune.memoize(64), Tune.skip(fallback=Tune.input("text"))])


@Knob()
def pipeline(question):
    query = rewrite(question).query                                   # component.generate (a prompt)
    hits = search(query)                                              # component.retrieve
    reply = answer(question, [DOCS[i] for i in hits.ids]).text        # component.generate
    return tidy(reply)                                                # component.tool_run


def make_inputs(n: int = len(QA)):
    """The first n questions (each its argument tuple) and their gold answers."""
    return [(q,) for q, _ in QA[:n]], [a for _, a in QA[:n]]
