"""The compound AI systems, each one autotuner Program (`program.SystemProgram`)
built from decorated Python functions and knobbed components, and each one
`registry.System` under its name (`registry.SYSTEMS`). A system with more than one
module has its own package: `rag/` (`rag_bm25`, `rag_dense` and their LLM rows),
`tools/` (`tools`, `tools_llm`), `agent/` (`agent_llm`); `common.py` holds what
they share, and `runs.tune_system` tunes any of them with its `approx-tune run`
command (`System.command`)."""
