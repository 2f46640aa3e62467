"""How an answer is made and checked, above the LLM and embedder adapters.

- ``units``: the answer units of a passage, read from its structure (sentences joined across line
  breaks, table rows with their header, list items with their lead-in, definitions, commands), as plain text;
- ``questions``: what a question asks for (a quantity, a date, a name, a command ...);
- ``values``: numbers with sign, unit and range, dates;
- ``evidence``: lexical evidence (content terms, key terms, rarity weights);
- ``features``: every unit of the retrieved passages described for the answer model;
- ``model``: the answer model (weights in ``answer_model.json``, fitted by ``carrag/bench/answer_fitting.py``):
  which unit answers, and whether any does ("the documents don't say");
- ``extractive``: the answer quoting the most probable units, each with its citation;
- ``context``: what the LLM sees (each passage, or its most probable units, cleaned, fitted to the budget);
- ``scaffolding``: the prompt layout a small model echoes ("Question: …"), removed before the check;
- ``grounding``: the check of a generated answer (support per sentence, values compared, citations fixed);
- ``marking``: unsupported sentences made visible in plain text (terminal marks, the /v1 note);
- ``loops``: the repetition-loop detector for streamed generation;
- ``conversation``: the retrieval query of a question asked in a conversation;
- ``modes``: ANSWER_MODE (generate | extract | auto) and its per-stack default.
"""
