"""The compound AI systems, each one autotuner Program (`program.SystemProgram`)
built from decorated Python functions and knobbed components, and each one
`registry.System` under its name (`registry.SYSTEMS`): `rag_bm25`, `rag_dense`
(the RAG program of `rag_program.py`; `common.py` holds what they share),
`tools_agent` and `tools_agent_llm` (measured side by side by `tools_measure`),
`agent_llm`; `tuning.tune_system` tunes any of them."""
