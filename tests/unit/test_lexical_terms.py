"""The lexical text rules every BM25 tier shares (core.text): Porter stems checked against
the examples of Porter's 1980 paper, folding, and query construction."""

from __future__ import annotations

import pytest

from reverie.core.text import MAX_QUERY_TERMS, lexical_terms, porter_stem, query_terms

# (word, stem) pairs printed in M. F. Porter, "An algorithm for suffix stripping" (1980).
_PAPER_TEXT = """
caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre
plastered plaster bled bled motoring motor sing sing conflated conflat troubled troubl
sized size hopping hop tanned tan falling fall hissing hiss fizzed fizz failing fail
filing file happy happi sky sky relational relat conditional condit rational ration
valenci valenc digitizer digit conformabli conform radicalli radic differentli differ
vileli vile analogousli analog vietnamization vietnam predication predic operator oper
feudalism feudal decisiveness decis hopefulness hope callousness callous formaliti formal
sensitiviti sensit sensibiliti sensibl triplicate triplic formative form formalize formal
electriciti electr electrical electr hopeful hope goodness good revival reviv
allowance allow inference infer airliner airlin gyroscopic gyroscop adjustable adjust
defensible defens irritant irrit replacement replac adjustment adjust dependent depend
adoption adopt homologou homolog communism commun activate activ angulariti angular
homologous homolog effective effect bowdlerize bowdler probate probat rate rate
cease ceas controll control roll roll generalizations gener oscillators oscil
"""
PAPER = _PAPER_TEXT.split()


@pytest.mark.parametrize(("word", "stem"), list(zip(PAPER[::2], PAPER[1::2], strict=True)))
def test_porter_stems_of_the_paper(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_short_long_and_non_letter_tokens_pass_through() -> None:
    assert porter_stem("is") == "is"  # under 3 letters
    assert porter_stem("2023s") == "2023s"
    assert porter_stem("cafés") == "cafés"  # not a-z: left alone (folding happens before)
    long = "ing" * 30
    assert porter_stem(long) == long


def test_documents_keep_every_term_in_order_folded_and_stemmed() -> None:
    text = "Caroline: I PAINTED the lake, café-style — naïve_art 2023!"
    assert lexical_terms(text) == [
        "carolin", "i", "paint", "the", "lake", "cafe", "style", "naiv", "art", "2023",
    ]
    assert lexical_terms("...") == []


def test_queries_drop_function_words_and_repeats_but_never_everything() -> None:
    assert query_terms("When did Caroline paint the painting?") == ["carolin", "paint"]
    assert query_terms("who was it?") == ["who", "wa", "it"]  # only function words: keep them
    assert query_terms("?!") == []


def test_what_an_apostrophe_leaves_is_no_query_term() -> None:
    # "what's" splits into "what" and "s"; a lone "s" would match every "here's" and "it's"
    assert query_terms("What's my mobile?") == ["mobil"]
    assert query_terms("Where'd I park? I don't know, we'll see, I'm lost") == [
        "park", "don", "know", "see", "lost"
    ]
    assert lexical_terms("Here's one") == ["here", "s", "on"]  # documents keep every term


def test_a_pasted_document_becomes_a_bounded_query() -> None:
    words = " ".join(f"w{i}x" for i in range(500))
    assert len(query_terms(words)) == MAX_QUERY_TERMS
