"""How an answer is made and checked, above the LLM and embedder adapters.

- ``sentences``: split passages (and table rows) into sentences with character offsets;
- ``evidence``: lexical evidence (content terms, numbers, names, rarity weights);
- ``scoring``: score every sentence of the retrieved passages against the question (embedder + lexical);
- ``refusal``: "the documents don't say" when no passage is relevant enough;
- ``context``: what the model sees (the best sentences of each passage, cleaned, fitted to the budget);
- ``extractive``: the answer made of the best sentences, each with its citation;
- ``scaffolding``: the prompt layout a small model echoes ("Question: …"), removed before the check;
- ``grounding``: the check of a generated answer (support per sentence, citations fixed);
- ``marking``: unsupported sentences made visible in plain text (terminal marks, the /v1 note);
- ``loops``: the repetition-loop detector for streamed generation;
- ``conversation``: the retrieval query of a follow-up question;
- ``modes``: ANSWER_MODE (generate | extract | auto) and its per-stack default.
"""
