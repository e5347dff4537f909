"""Cheap text heuristics for the write path (no LLM): hashing, entities, importance, corrections."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from .policy import Policy


def normalize_text(text: str) -> str:
    """Case, width, spacing and trailing punctuation do not make a memory new."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = re.sub(r"\s+", " ", t).strip()
    return t.rstrip(" .!?;,")


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


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
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|"
    r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\b|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
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
    return _DATE.search(text) is not None


def has_number(text: str) -> bool:
    return _NUMBER.search(text) is not None


def is_correction(text: str) -> bool:
    return _CORRECTION.search(text) is not None


_SPEAKER = re.compile(r"^[A-Za-z][\w .'-]{0,40}:\s+")


_NOT_SPEAKERS = frozenset(
    ["remember", "note", "important", "reminder", "todo", "fyi", "ps", "update", "correction",
     "warning", "tip", "rule", "fact", "q", "a"]
)


def strip_speaker(text: str) -> str:
    """'user: ok thanks' is judged by what was said, not by who said it; 'Remember: ...'
    and 'Note: ...' are not speakers."""
    t = text.strip()
    m = _SPEAKER.match(t)
    if m is None or m.group(0).rstrip(": \t").casefold() in _NOT_SPEAKERS:
        return t
    return t[m.end() :]


def initial_importance(text: str, policy: Policy, entities: frozenset[str] | None = None) -> float:
    """S0 at write time: instructions, names, dates and numbers matter; 'ok thanks' does not."""
    stripped = strip_speaker(text)
    if _FILLER.match(stripped):
        return round(max(0.0, policy.base_importance - policy.filler_penalty), 6)
    score = policy.base_importance
    if _INSTRUCTION.search(stripped):
        score += policy.instruction_boost
    if entities if entities is not None else extract_entities(stripped):
        score += policy.entity_boost
    if has_date(stripped):
        score += policy.date_boost
    if has_number(stripped):
        score += policy.number_boost
    return round(min(1.0, max(0.0, score)), 6)
