"""Extractive readers on the pretrained all-MiniLM-L6-v2 encoder (the 'pro' and
'fast' answer models of the QA systems)."""
