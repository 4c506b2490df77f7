"""The LLM + tools system over BFCL: the tool-calling agent with the MiniLM readers
(`agent.py`) and with SmolLM2 writing the calls (`agent_llm.py`), their components,
prompts, data and the side-by-side measurement (`measure.py`)."""
