"""ApproxMLIR's LLM + tools agent (appendix B.8) with Gemma 3 270M: a triage agent picks
the tool a question needs (or none), the tool runs (one of the five kernels, with its
own knobs), a QA agent answers from the tool's output.

    def agent_llm(question):
        tool = tool_named(triage(TRIAGE + question, GUIDE).text)   # component.generate
        output = pagerank(question) if tool == "pagerank" else ... else ""   # component.tool_run
        if output == "":
            return qa(question, []).text                   # component.generate: no tool
        return condense(question, output)                  # decided per question:

    @Knob(decision_tree=ladder on output_words(output), func_substitute)
    def condense(question, output):                        # variant 1: QA reads the output's one
        return qa(question, [output]).text                 # sentence most like the question

The two models are one: Gemma 3 270M with the agent's adapters
(examples/models/gemma3_agent_lora.npz, trained by examples/train_gemma_agent.py on the
agent's "train" part with each op's own prompt), answering "which tool does this question
use" from a guide of one line per tool (`GUIDE`), and the question from the tool's output.
It decodes its exact configuration through this machine's exact path (`policy.exact_path`:
the engine where it pays). Each stage earns its place: the paper's agent also has the LLM
summarise the tool's output before QA reads it; with Gemma summarising (the same adapters,
`SUMMARY`) the agent answered 19 of 36 tuning questions against 26 with QA reading the
output itself, in 2.6x the time, so the exact program has no summary and the cheaper
"summary" is extractive (`condense`, `qa.sentences`). The kernels run as JIT-compiled
kernels (agent/tools.py): one tool call takes milliseconds, each LLM call under a second
on a CPU. QoS: a gold answer contained in the answer (questions: agent/data.py).

Knobs (all exact at 0; `approx-opt --list-knobs` on `program.ir()` lists them):
`triage.max_new_tokens`, `qa.max_new_tokens`, `qa.sentences` (QA reads the output's
sentences most like the question), `<op>.layers` (early exit, where the model has trained
exits: Gemma's adapters have none), `triage.precision`, `qa.precision` (the values the model
answers RAG questions with faster than float32 on this machine and as float32 does:
`rag.program.llm_precisions`, one probe for both ops, its own: the RAG answer model's
decision would load that model and its engine beside it in every process, 2 GB; their
quality on the agent's own questions is the tuner's to judge), `condense` (per question in
dynamic mode: variant 1, QA reads the output's one sentence most like the question, where
the output's length in words falls on that side of the tuned threshold: a one-sentence
kernel result loses nothing where a retrieved paragraph may), and `<kernel>.tool` for each
of the five kernels (a ladder of the kernel's own knob configurations,
agent.tools.level_config)."""

from __future__ import annotations

import functools

from autotuner.strategy import NEGLIGIBLE
from examples.systems.agent.tools import TOOLS, tools
from examples.systems.common import MODELS, gemma_weights, one_thread, reuse_answers
from examples.systems.program import SystemProgram, program_attribute
from examples.systems.rag.program import llm_precisions
from frontends import DecisionTree, Knob
from frontends.components import run_settings
from frontends.components.declare import Generate, RunTool, Tune
from frontends.components.llm.policy import exact_path

TRIAGE = "Which tool does this question use: "  # the triage's question: this, then the question
GUIDE = ["Questions about pages of a web graph use the tool pagerank.",  # the triage's passages
         "Questions about clusters of a point set use the tool kmeans.",
         "Questions about particles of a particle system use the tool lavamd.",
         "Questions that start with Search the documents use the tool bm25.",
         "Questions that start with Look up in the knowledge base use the tool kb.",
         "Any other question uses the tool none."]
SUMMARY = ("Question: {question}\n\nTool output: {output}\n\n"  # the summary's prompt (trained; not in the
           "Copy the sentence of the tool output that answers the question.")  # exact program: it lost answers)
TRIAGE_TOKENS, QA_TOKENS = 6, 16
MAX_WORDS = 200  # the condense ladder's state: the tool output's length in words, at most this
ADAPTER = MODELS / "gemma3_agent_lora.npz"  # examples/train_gemma_agent.py: triage, summary and QA


def output_words(output: str) -> int:
    """The condense decision's state: the tool output's length in words (capped)."""
    return min(len(output.split()), MAX_WORDS)


def model_name() -> str:
    """What answers (results.json records it under `model`): says the model's exact path's engine."""
    return (f"{gemma_weights()}: triage and QA with LoRA examples/models/{ADAPTER.name}; "
            "tools: the five JIT-compiled kernels")


def tool_named(text: str) -> str:
    """The first tool the triage's reply names ("none" when it names none)."""
    words = text.lower().replace(".", " ").replace(",", " ").split()
    return next((w for w in words if w in TOOLS), "none")


@functools.lru_cache(maxsize=1)
def agent_model():
    """Gemma 3 270M with the agent's adapters: the triage and QA agent, on the
    run's exact path (`exact_path`)."""
    from frontends.components.llm.gemma import Gemma3

    one_thread()
    return exact_path(Gemma3.load(ADAPTER, name="gemma3_agent", device=run_settings.current().device))


def agent_program(triage_model, qa_model, precisions=()):
    """The decorated agent of the module docstring: `triage_model` triages, `qa_model`
    answers (one model may be both); `precisions`: the values of each one's precision knob;
    a layers knob on each where its model has trained exits."""
    from frontends.components.llm.context_cuts import select_sentences

    precision = [Tune.precision(*precisions)] if precisions else []

    def layers(model):
        return [Tune.param("layers", *sorted(model.exits, reverse=True))] if model.exits else []

    triage = Generate("triage", triage_model, max_new_tokens=TRIAGE_TOKENS,
                      tune=[Tune.param("max_new_tokens", 3), *precision, *layers(triage_model)])
    qa = Generate("qa", qa_model, max_new_tokens=QA_TOKENS,
                  tune=[Tune.param("max_new_tokens", 8, 4), *precision, *layers(qa_model),
                        Tune.param("sentences", 2, 1)])
    kernels = {name: RunTool(name, exact, tune=[Tune.substitute("tool", *levels)])
               for name, (exact, *levels) in tools().items()}
    pagerank, kmeans, lavamd, bm25, kb = (kernels[n] for n in ("pagerank", "kmeans", "lavamd", "bm25", "kb"))

    def read_sentence(question, output):
        return qa(question, select_sentences(question, [output], 1)).text

    @Knob(decision_tree=DecisionTree(output_words, [1], [MAX_WORDS // 4], [0, 0], "func_substitute",
                                     approx_kernels={1: read_sentence}, thresholds_lower=[0],
                                     thresholds_upper=[MAX_WORDS]))
    def condense(question, output):
        """Answer from the tool's output."""
        return qa(question, [output]).text

    @Knob()
    def agent_llm(question):
        """Triage, the tool, the answer."""
        tool = tool_named(triage(TRIAGE + question, GUIDE).text)
        output = ""
        if tool == "pagerank":
            output = pagerank(question)
        elif tool == "kmeans":
            output = kmeans(question)
        elif tool == "lavamd":
            output = lavamd(question)
        elif tool == "bm25":
            output = bm25(question)
        elif tool == "kb":
            output = kb(question)
        if output == "":
            return qa(question, []).text
        return condense(question, output)

    return agent_llm, (triage, qa)


class AgentSystem(SystemProgram):
    """The agent as the autotuner's Program (`SystemProgram`), with its hints to the
    tuner: the negligible knobs and the condense decision's states."""

    def __init__(self, program, model: str | None = None, reuse=()):
        super().__init__("agent_llm", program, model or model_name(), reuse)

    def negligible_knobs(self, questions, share: float = NEGLIGIBLE) -> dict[str, float]:
        """The knobs of components under `share` of the time (`autotuner.strategy`),
        profiled on `questions` (the tuner's profile of them, just measured, is reused).
        A tool those questions never called (the triage routes each question, and a
        sample may miss a tool) is timed alone on a tuning question of its kind
        (`agent.data.items`; after one untimed call, which compiles it), as one call
        among the sample's: the whole program on those questions would cost their LLM
        calls (seconds each) to time a kernel that takes milliseconds."""
        import time

        from autotuner.strategy import negligible_of
        from examples.systems.agent.data import KINDS, exact, items

        seconds = {k: v["seconds"] for k, v in self.exact_profile(questions).items()}
        for it in items("tune", len(KINDS)):
            if it.tool in TOOLS and it.tool not in seconds:
                exact(it.tool, it.question)
                t0 = time.perf_counter()
                exact(it.tool, it.question)
                seconds[it.tool] = time.perf_counter() - t0
        total = sum(seconds.values())
        return negligible_of(self, {k: v / total if total > 0 else 0.0 for k, v in seconds.items()}, share)

    def states(self, questions) -> list[int]:
        """The condense decision's state (`output_words`) of each question that reaches
        it (the exact triage names a tool that says something): where the dynamic
        search's first thresholds go (their quantiles)."""
        from examples.systems.agent.data import exact

        triage, out = agent_model(), []
        for q in questions:
            tool = tool_named(triage.answer(TRIAGE + q, GUIDE, TRIAGE_TOKENS).text)
            output = exact(tool, q) if tool in TOOLS else ""
            if output:
                out.append(output_words(output))
        return out


def system() -> AgentSystem:
    """The agent system `agent_llm` (what `approx-tune run examples.systems.agent.llm:program` tunes)."""
    model = agent_model()
    program, _ = agent_program(model, model, precisions=llm_precisions(model))
    return AgentSystem(program, reuse=(model,) if reuse_answers(True) else ())


__getattr__ = program_attribute(__name__, system)
