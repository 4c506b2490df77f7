"""The two RAG systems over SQuAD: one decorated program (`program.py`) retrieving
with BM25 (`bm25.py`) or MiniLM embeddings (`dense.py`, its query encoder in
`query_encoder.py`), answered by the extractive readers or Gemma 3 270M."""
