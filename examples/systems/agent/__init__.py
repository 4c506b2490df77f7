"""ApproxMLIR's LLM + tools agent with Gemma 3 270M (`llm.py`): triage, the five kernels
as tools (`tools.py`) and QA, on its questions (`data.py`)."""
