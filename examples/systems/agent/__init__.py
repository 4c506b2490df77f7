"""ApproxMLIR's LLM + tools agent with SmolLM2 (`llm.py`): triage, the five kernels
as tools (`tools.py`), summary and QA, on its questions (`data.py`)."""
