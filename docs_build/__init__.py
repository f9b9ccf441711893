"""The documentation site's build (`make docs`): the MkDocs hooks (hooks.py) and what they generate from the code
itself, never copied by hand: the `tba` reference from the argparse parsers (cli_reference.py), the make reference
from `make help` (make_reference.py), a page per module and the architecture page's links into them
(module_pages.py, design_map.py); the README's screenshot (screenshot.py) and the runnable examples (runnable.py)."""
