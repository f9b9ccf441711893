"""Size limits that keep every parser near linear in its input, with bounded memory.

- ``MAX_PARSE_CHARS``: a text longer than this is not parsed at all; every parser answers
  ``ErrorKind.INPUT_TOO_LARGE`` (no call). 1 Mi characters is about 250k tokens, far beyond any model's
  output limit, so a real turn never meets it; a corrupt or hostile output stops here instead of costing
  minutes. (react-find deviates from upstream only there: upstream would slice such a text.)
- The JSON ladder's two costly rungs run only on texts up to their own limit (ladder.py):
  ``json_repair`` (pure Python, ~20 µs per character on bad input) and ``ast.literal_eval`` (~240 bytes
  of memory per character). Above it a text goes straight to the linear key-value rung.

``benchmarks/bench_parsers_adversarial.py`` prints time and peak memory per parser on inputs that once
grew super-linearly, at 32k to 1M characters.
"""

MAX_PARSE_CHARS = 1 << 20  # 1,048,576 characters
REPAIR_MAX_CHARS = 200_000
PYTHON_LITERAL_MAX_CHARS = 200_000
KEY_MAX_CHARS = 256  # a key of the key-value rung; bounds the regex's work per quote character
