"""The LLM + tools system over BFCL: the tool-calling agent with the MiniLM readers
(`agent.py`) and with Gemma 3 270M writing the calls (`agent_llm.py`), their components,
prompts, data and the side-by-side measurement (`measure.py`)."""
