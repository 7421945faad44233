//! koas-llm: the LLM host service (work in progress).
