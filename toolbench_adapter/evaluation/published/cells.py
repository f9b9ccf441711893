"""One printed cell of a published table: its markup taken off, then read as a number, a "not reported" mark,
or text.

Papers print cells as ``**64.1±0.8**``, ``_55.5±0.9_``, ``\\textbf{52.2}$\\pm$1.1``, ``52.2$_{\\pm 1.1}$``,
``60.7<sup>†</sup>``, ``[58.2](link)``; all of them read as the same number, and row names lose the same markup
(footnote marks such as ``†``, ``*``, ``^a`` included). ``/``, ``-``, ``–``, ``N/A`` mean "not reported".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from functools import lru_cache

NUMBER, EMPTY, TEXT = "number", "not reported", "text"
EMPTY_MARKS = {"", "/", "-", "–", "—", "--", "---", "n/a", "na", "n.a.", "none", "✗", "×"}

# LaTeX commands that wrap their argument (the argument stays) and that only style (removed with no argument)
_WRAPPERS = ("textbf", "textit", "textsl", "textup", "textrm", "textsf", "texttt", "textsc", "textnormal", "emph",
             "underline", "uline", "uuline", "mathbf", "mathrm", "mathit", "mathsf", "boldsymbol", "bm", "text",
             "mbox", "hbox", "makecell", "thead", "shortstack", "ensuremath", "num")
_STYLES = ("bfseries", "itshape", "mdseries", "normalfont", "scriptsize", "footnotesize", "small", "tiny",
           "normalsize", "large", "Large", "centering", "raggedright", "raggedleft", "bf", "it", "rm", "sf", "tt",
           "em", "hfill", "quad", "qquad", "displaystyle", "textstyle")
_MARK_COMMANDS = ("dagger", "ddagger", "dag", "ddag", "S", "P", "star", "ast", "ssymbol", "checkmark")
_FOOTNOTE_CHARS = "†‡§¶*⁎∗★☆♠♣♥♦◇◆○●"
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ⁺⁻"
_ENTITIES = {"&plusmn;": "±", "&pm;": "±", "&ndash;": "–", "&mdash;": "—", "&nbsp;": " ", "&dagger;": "†",
             "&Dagger;": "‡", "&amp;": "&", "&lt;": "<", "&gt;": ">", "&minus;": "-", "&#177;": "±"}
NUMBER_RE = re.compile(r"^(-?\d+(?:\.(\d+))?)(?:±(\d+(?:\.\d+)?))?$")
# "12/20 (60.0%)" (the % already taken off): the solved count of the total, then the rate, which is the cell
FRACTION_RE = re.compile(r"^\d+ ?\/ ?\d+ ?\((\d+(?:\.(\d+))?)(?:±(\d+(?:\.\d+)?))?\)$")


@dataclass(frozen=True, slots=True)  # one per distinct printed cell (read is cached): shared, never changed
class PublishedCell:
    text: str  # as printed, markup taken off
    mean: float
    std: float | None
    decimals: int

    @property
    def unit(self) -> float:
        """One unit of the last printed digit."""
        return 10.0 ** -self.decimals


def _unwrap_latex(text: str) -> str:
    arg = r"\{([^{}]*)\}"
    for _ in range(12):  # nested wrappers: \textbf{\underline{52.2}}
        before = text
        text = re.sub(r"\\multicolumn\{\d+\}\{[^{}]*\}" + arg, r"\1", text)
        text = re.sub(r"\\multirow\[?[^{\]]*\]?\{[^{}]*\}\[?[^{\]]*\]?\{[^{}]*\}" + arg, r"\1", text)
        text = re.sub(r"\\(?:textcolor|colorbox)\{[^{}]*\}" + arg, r"\1", text)
        text = re.sub(r"\\(?:cellcolor|rowcolor|color)(?:\[[^\]]*\])?\{[^{}]*\}", "", text)
        text = re.sub(r"\\(?:textsuperscript|footnote|footnotemark|tnote|tablefootnote)" + arg, "", text)
        text = re.sub(r"\\(?:{})\*?(?:\[[^\]]*\])?".format("|".join(_WRAPPERS)) + arg, r"\1", text)
        text = re.sub(r"\^\{[^{}]*\}", "", text)  # superscripts are footnote marks in a table
        text = re.sub(r"_\{([^{}]*)\}", r"\1", text)  # subscripts hold the std: 52.2_{\pm 1.1}
        if text == before:  # only then bare groups ({\bf 52.2}): a command's own arguments are read first
            text = re.sub(r"(?<![\\a-zA-Z}])\{([^{}]*)\}", r"\1", text)
        if text == before:  # then any other command keeps its last argument (\foo{52.2})
            text = re.sub(r"\\[a-zA-Z]+\*?(?:\{[^{}]*\})*" + arg, r"\1", text)
        if text == before:
            return text
    return text


def _latex(text: str) -> str:
    if "\\" not in text and "$" not in text and "{" not in text:
        return text
    text = re.sub(r"\\(?:pm|textpm|mp)(?![a-zA-Z])", "±", text)
    text = re.sub(r"\\(?:textendash|textemdash)(?![a-zA-Z])", "–", text)
    text = text.replace("\\%", "%").replace("\\&", "&").replace("\\_", "_").replace("\\#", "#")
    text = _unwrap_latex(text)
    text = re.sub(r"\\(?:{})(?![a-zA-Z])".format("|".join(_MARK_COMMANDS)), "†", text)
    text = re.sub(r"\\(?:{})(?![a-zA-Z])".format("|".join(_STYLES)), " ", text)
    text = re.sub(r"\\[,;:!> ]|~", " ", text)
    text = re.sub(r"\\[a-zA-Z]+\*?", " ", text)  # any command left (\hline met mid-row, \ding...)
    return text.replace("$", "").replace("{", "").replace("}", "")


def _html(text: str) -> str:
    if "<" not in text and "&" not in text:
        return text
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    text = re.sub(r"<sup>.*?</sup>", "", text, flags=re.I | re.S)
    return re.sub(r"</?[a-zA-Z][^>]*>", "", text)


_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]]*\]")
_EMPHASIS = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"\[([^\[\]]*)\]\([^()]*\)", r"\1"),  # links keep their text
    (r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2"),
    (r"~~(?=\S)(.+?)(?<=\S)~~", r"\1"),
    (r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1"),
    (r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])", r"\1"),
    (r"^\s*(\*\*|__|\*|_|~~)\s*(.+?)\s*\1\s*$", r"\2"),  # the whole cell, spaces inside
)]


def _markdown(text: str) -> str:
    if "![" in text:
        text = _IMAGE.sub("", text)  # images
    if "[^" in text:
        text = _FOOTNOTE_REF.sub("", text)  # footnote references [^1]
    text = text.replace("`", "")  # code spans: a table cell holds no backtick of its own
    if not any(char in text for char in "[*_~"):  # nothing below could match (a row name such as "GPT-4 (DFS)")
        return text
    for _ in range(6):  # ***x***, **_x_**, [**x**](link)
        before = text
        for pattern, replacement in _EMPHASIS:
            text = pattern.sub(replacement, text)
        if text == before:
            break
    return text


_CARET_MARK = re.compile(r"\^\(?[A-Za-z0-9†‡*]{1,3}\)?(?![A-Za-z0-9.])")  # ^a, ^1, ^†
_MARK_CHARS = re.compile(f"[{re.escape(_FOOTNOTE_CHARS)}{_SUPERSCRIPTS}]")
_MARK_BEFORE_EMPHASIS = re.compile(f"\\^?[{_FOOTNOTE_CHARS.replace('*', '')}{_SUPERSCRIPTS}]")  # _x_¹
_DELTAS = [re.compile(r"\s*\(\s*[+\-↑↓▲▼]\s*\d+(?:\.\d+)?\s*%?\s*\)$"), re.compile(r"\s*[↑↓▲▼]\s*\d*(?:\.\d+)?\s*%?$")]
_PM_IN_PARENTHESES = re.compile(r"\s*\(\s*±\s*(\d+(?:\.\d+)?)\s*\)")  # 52.2 (±1.1)


# a cell with none of these holds no markup, mark or delta: only its spaces change (most cells of a big table)
_MARKUP_CHARS = re.compile("[" + re.escape("\\${}<&[]!`*_~^()+\u2212\u00a0↑↓▲▼" + _FOOTNOTE_CHARS + _SUPERSCRIPTS)
                           + "]")
_SPACES = re.compile(r"\s+")
_AROUND_PM = re.compile(r"\s*±\s*")


def _footnote_marks(text: str) -> str:
    if "^" in text:
        text = _CARET_MARK.sub("", text)
    return _MARK_CHARS.sub("", text)


def clean(text: str, *, keep_percent: bool = False) -> str:
    """The cell's text without markup, footnote marks, % signs (``keep_percent``: kept, for a heading shown as
    printed) or deltas, spaces around ± closed up."""
    if not _MARKUP_CHARS.search(text):  # the same result as below, without its two dozen substitutions
        text = _AROUND_PM.sub("±", _SPACES.sub(" ", text).strip())
        return (text if keep_percent else text.replace("%", "")).strip()
    text = _html(_latex(text))
    text = _MARK_BEFORE_EMPHASIS.sub("", text)  # before emphasis: _x_¹
    text = _markdown(text)
    text = _footnote_marks(text)
    text = text.replace("−", "-").replace("\u00a0", " ").replace("+-", "±").replace("+/-", "±")
    text = _SPACES.sub(" ", text).strip()
    # a printed change beside the figure: "64.1 (+5.2)", "64.1 ↑5.2", "(↓0.4)"
    for delta in _DELTAS:
        text = delta.sub("", text)
    text = _PM_IN_PARENTHESES.sub(r"±\1", text)
    text = _AROUND_PM.sub("±", text)
    return (text if keep_percent else text.replace("%", "")).strip()


@dataclass(frozen=True, slots=True)
class Reading:
    kind: str  # NUMBER, EMPTY or TEXT
    text: str  # cleaned
    cell: PublishedCell | None = None


@lru_cache(maxsize=1 << 16)  # a large table prints the same few thousand cells again and again
def read(text: str) -> Reading:
    cleaned = clean(text)
    if cleaned.lower() in EMPTY_MARKS:
        return Reading(EMPTY, cleaned)
    match = NUMBER_RE.match(cleaned) or FRACTION_RE.match(cleaned)
    if not match:
        return Reading(TEXT, cleaned)
    std = float(match.group(3)) if match.group(3) is not None else None
    return Reading(NUMBER, cleaned, PublishedCell(cleaned, float(match.group(1)), std, len(match.group(2) or "")))


def prints_as(value: float, printed: float, decimals: int) -> bool:
    """Whether ``value`` rounds to the printed figure: half up or half to even (papers use both), after float
    noise is taken off (54.55 computed as 54.549999... still rounds to 54.6 half up)."""
    exact = Decimal(repr(round(value, 9)))
    unit = Decimal(1).scaleb(-decimals)
    target = Decimal(repr(printed)).quantize(unit, rounding=ROUND_HALF_EVEN)
    return target in (exact.quantize(unit, rounding=ROUND_HALF_UP), exact.quantize(unit, rounding=ROUND_HALF_EVEN))


def parse_cell(text: str) -> PublishedCell | None:
    return read(text).cell


def is_number(text: str) -> bool:
    return read(text).kind == NUMBER
