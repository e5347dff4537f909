"""Cheap text heuristics for the write path (no LLM): hashing, entities, importance, corrections."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Sequence

from .policy import Policy
from .time_refs import MONTH_PATTERN


def normalize_text(text: str) -> str:
    """Case, width, spacing and trailing punctuation do not make a memory new."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = re.sub(r"\s+", " ", t).strip()
    return t.rstrip(" .!?;,")


# A write hashes its text where it is prepared, checked and stored: the last few are kept.
@functools.lru_cache(maxsize=512)
def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def forget_cached_texts() -> None:
    """Drop the hashed texts kept, after a forget (as `updates` does its own)."""
    content_hash.cache_clear()


# Capitalised words that start sentences or are pronouns, not names.
_NOT_ENTITIES = frozenset(
    [
        'i', "i'm", "i've", "i'll", "i'd", 'im', 'a', 'an', 'the', 'this', 'that', 'these',
        'those', 'it', 'its', "it's", 'he', 'she', 'they', 'we', 'you', 'my', 'your', 'our',
        'their', 'his', 'her', 'hey', 'hi', 'hello', 'hello!', 'yes', 'no', 'ok', 'okay',
        'oh', 'wow', 'well', 'so', 'and', 'but', 'or', 'if', 'when', 'what', 'where', 'who',
        'why', 'how', 'thanks', 'thank', 'sure', 'great', 'nice', 'good', 'cool', 'yeah',
        'yep', 'also', 'just', 'maybe', 'really', 'actually', 'btw', 'by', 'the', 'way',
        'do', 'does', 'did', 'is', 'are', 'was', 'were', 'have', 'has', 'had', 'can',
        'could', 'would', 'should', 'will', 'let', 'lets', "let's", 'there', 'here', 'then',
        'now', 'today', 'tomorrow', 'yesterday', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat',
        'sun', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday',
        'january', 'february', 'march', 'april', 'may', 'june', 'july', 'august',
        'september', 'october', 'november', 'december', 'not', "don't", "doesn't", "didn't",
        'please', 'remember', 'always', 'never',
    ]
)
_WORD = re.compile(r"[A-Za-z][\w'&.-]*")
DATE_PATTERN = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH_PATTERN}\b|"
    rf"{MONTH_PATTERN}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
    rf"(?:19|20)\d{{2}}\b|(?:last|next|this)\s+(?:week|month|year|weekend)|"
    rf"(?:yesterday|tomorrow|tonight))",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_INSTRUCTION = re.compile(
    r"\b(?:remember|always|never|must|don't forget|do not forget|make sure|important|"
    r"prefer|preference|call me|my name is|i am allergic|allergic)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|k|thanks?|thank you|thx|lol|haha+|hmm+|yes|no|yeah|yep|nope|sure|"
    r"cool|great|nice|bye|hi|hello|hey)[\s,.!?]*)+$",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:actually|no longer|not anymore|any ?more|switched to|changed to|moved to|"
    r"instead of|correction|i was wrong|scratch that|now (?:i|we) (?:use|live|work|prefer))\b",
    re.IGNORECASE,
)


def extract_entities(text: str) -> frozenset[str]:
    """Capitalised words that are not sentence fillers, lower-cased: a cheap proper-noun guess."""
    found: set[str] = set()
    for m in _WORD.finditer(text):
        w = m.group(0).strip(".'-&")
        if len(w) < 2 or not w[0].isupper():
            continue
        low = w.casefold()
        if low in _NOT_ENTITIES:
            continue
        found.add(low)
    return frozenset(found)


def has_date(text: str) -> bool:
    return DATE_PATTERN.search(text) is not None


def has_number(text: str) -> bool:
    return _NUMBER.search(text) is not None


def is_correction(text: str) -> bool:
    return _CORRECTION.search(text) is not None


_SPEAKER = re.compile(r"^[A-Za-z][\w .'-]{0,40}:\s+")


_NOT_SPEAKERS = frozenset(
    ["remember", "note", "important", "reminder", "todo", "fyi", "ps", "update", "correction",
     "warning", "tip", "rule", "fact", "q", "a"]
)


# Lower-case words inside a person's name ("Ludwig van Beethoven", "Leonardo da Vinci").
_NAME_PARTICLES = frozenset(
    ["van", "von", "der", "den", "de", "da", "di", "del", "della", "du", "la", "le", "bin",
     "ibn", "al", "el", "y"]
)


def _label(prefix: str) -> bool:
    """Is a "...:" prefix a label rather than who spoke: a known one ("Note", "Update"),
    or words after its first that start in lower case ("Heads up", "New total", "Quick
    update"), as no name is written ("Mary Jane", "Dr. Okafor")."""
    if prefix.casefold() in _NOT_SPEAKERS:
        return True
    rest = prefix.split()[1:]
    return any(w[0].islower() and w not in _NAME_PARTICLES for w in rest)


def _speaker_prefix(text: str) -> re.Match[str] | None:
    """The "Name: " prefix that says who spoke, if the text opens with one (a label is
    no speaker)."""
    m = _SPEAKER.match(text)
    return None if m is None or _label(m.group(0).rstrip(": \t")) else m


def strip_speaker(text: str) -> str:
    """'user: ok thanks' is judged by what was said, not by who said it; 'Remember: ...',
    'Note: ...' and 'Heads up: ...' are not speakers."""
    t = text.strip()
    m = _speaker_prefix(t)
    return t if m is None else t[m.end() :]


def speaker_name(text: str) -> str | None:
    """Who a speaker prefix names ("Caroline: ..." -> "caroline"), lower-cased, if any."""
    m = _speaker_prefix(text.strip())
    return None if m is None else m.group(0).rstrip(": \t").casefold()


_CAPITALISED = re.compile(r"\b[A-Z][\w-]*")


def names_asked(query: str) -> frozenset[str]:
    """The capitalised words of a question, lower-cased and without a possessive: the
    people it may ask about ("What do Melanie's kids like?" -> {"melanie"})."""
    words = (w.casefold() for w in _CAPITALISED.findall(query.replace("\u2019", "'")))
    return frozenset(w for w in words if w not in _NOT_ENTITIES)


def initial_importance(text: str, policy: Policy, entities: frozenset[str] | None = None) -> float:
    """S0 at write time: instructions, names, dates and numbers matter; 'ok thanks' does not."""
    stripped = strip_speaker(text)
    if _FILLER.match(stripped):
        weights = policy.importance
        return round(max(0.0, weights.base_importance - weights.filler_penalty), 6)
    score = policy.importance.base_importance
    if _INSTRUCTION.search(stripped):
        score += policy.importance.instruction_boost
    if entities if entities is not None else extract_entities(stripped):
        score += policy.importance.entity_boost
    if has_date(stripped):
        score += policy.importance.date_boost
    if has_number(stripped):
        score += policy.importance.number_boost
    return round(min(1.0, max(0.0, score)), 6)


# --- lexical terms: the one set of text rules every BM25 channel shares ----------------------
#
# The SQLite tier indexes `" ".join(lexical_terms(text))` with FTS5's `ascii` tokenizer (which
# splits only on ASCII non-alphanumerics, so each term below stays one token) and a Python or
# Lua BM25 (the Redis tier) can index the very same list: both tiers then agree term for term.
# Scoring is FTS5's bm25(): k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) clamped
# to 1e-6 when not positive, document length = len(lexical_terms(text)).

_TERM = re.compile(r"[^\W_]+")
# The last line holds what an apostrophe leaves of a contraction or a possessive ("what's",
# "don't", "I'm", "we'll"): alone it means nothing, yet it is in so many documents that a
# question such as "What's my phone?" would match any "here's" at full lexical strength.
_STOP_WORD_TEXT = """
    a an and are as at be been being but by can could did do does for from had has have he
    her hers him his how i if in into is it its me my no not of on or our ours she so than
    that the their them then there these they this those to was we were what when where
    which who whom whose why will with would you your yours
    s t m d ll re ve
"""
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())
MAX_QUERY_TERMS = 64  # a pasted document must not become an OR of thousands of terms
_STEM_MIN, _STEM_MAX = 3, 64  # shorter or longer tokens pass through unstemmed (as in FTS5)


def _fold(text: str) -> str:
    """Casefold and drop diacritics ('Café' and 'cafe' are one term)."""
    if text.isascii():
        return text.lower()  # NFKD leaves ASCII as it is, and ASCII has no combining marks
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def lexical_terms(text: str) -> list[str]:
    """The terms a document is indexed under, in order, repeats kept (BM25 counts them):
    letters and digits folded, each word Porter-stemmed so 'painting' finds 'painted'."""
    return [porter_stem(w) for w in _TERM.findall(_fold(text))]


def query_terms(text: str) -> list[str]:
    """The distinct terms a query searches for. English function words are dropped when other
    words remain: their IDF is near 0, so they hardly move the ranking, but each one makes BM25
    score almost every document, so a natural-language question would cost a full scan."""
    words = list(dict.fromkeys(_TERM.findall(_fold(text))))
    content = [w for w in words if w not in STOP_WORDS] or words
    return list(dict.fromkeys(porter_stem(w) for w in content))[:MAX_QUERY_TERMS]


# Porter (1980), the original algorithm (the one FTS5's `porter` tokenizer implements).


def _is_consonant(w: str, i: int) -> bool:
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _is_consonant(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]."""
    m, prev_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _is_consonant(stem, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _double_consonant(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _is_consonant(w, len(w) - 1)


def _cvc(w: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (hop, not snow)."""
    n = len(w)
    return (
        n >= 3
        and _is_consonant(w, n - 1)
        and not _is_consonant(w, n - 2)
        and _is_consonant(w, n - 3)
        and w[-1] not in "wxy"
    )


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
)
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
    "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)
# The longest suffix is tried first; when its condition fails no shorter one is tried.
_STEP2_BY_LENGTH = sorted(_STEP2, key=lambda p: -len(p[0]))
_STEP3_BY_LENGTH = sorted(_STEP3, key=lambda p: -len(p[0]))
_STEP4_BY_LENGTH = sorted(_STEP4, key=len, reverse=True)


def _replace(w: str, rules: Sequence[tuple[str, str]], min_measure: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            return stem + repl if _measure(stem) > min_measure else w
    return w


# Stemming is pure and vocabularies are small: cached, indexing a synthesis or a recall
# query stops re-stemming the same words (a large REM cycle's commit stems a great deal).
@functools.lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter stem of one lower-case word; anything not a-z, or shorter than 3 or longer
    than 64 letters, is returned unchanged."""
    if not (_STEM_MIN <= len(word) <= _STEM_MAX) or not word.isascii() or not word.isalpha():
        return word
    w = word
    # step 1a
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double_consonant(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2_BY_LENGTH, 0)
    w = _replace(w, _STEP3_BY_LENGTH, 0)
    # step 4
    for suffix in _STEP4_BY_LENGTH:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                w = stem
            break
    # step 5
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if _measure(w) > 1 and _double_consonant(w) and w.endswith("l"):
        w = w[:-1]
    return w
