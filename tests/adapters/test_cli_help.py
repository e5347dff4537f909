"""`reverie --help` and every command's `--help` read as whole sentences at any width.

Help paragraphs are reflowed to the terminal (no line breaks carried over from the
docstrings), each command opens with one short sentence, and every argument and option
says what it is in a sentence of its own.
"""

from __future__ import annotations

import inspect
import re

import pytest
import typer.main
from typer.testing import CliRunner

from reverie.adapters.cli import app

COMMAND = typer.main.get_command(app)
COMMANDS = sorted(COMMAND.commands)  # type: ignore[attr-defined]
WIDTH = 80


def render_help(*args: str) -> str:
    runner = CliRunner()
    r = runner.invoke(app, [*args, "--help"], env={"COLUMNS": str(WIDTH), "NO_COLOR": "1"})
    assert r.exit_code == 0, r.output
    return r.output


def description(output: str) -> list[list[str]]:
    """The prose between the usage line and the first panel, as paragraphs of lines."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("╭"))
    paragraphs: list[list[str]] = [[]]
    for line in lines[start:end]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def first_paragraph(help_text: str | None) -> str:
    return " ".join(inspect.cleandoc(help_text or "").split("\n\n")[0].split())


def is_sentence(text: str) -> bool:
    return bool(text) and text[0].isupper() and text.endswith(".")


def test_every_command_has_help() -> None:
    assert COMMANDS, "no commands registered"
    assert all(COMMAND.commands[name].help for name in COMMANDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_opens_with_one_short_sentence(name: str) -> None:
    summary = first_paragraph(COMMAND.commands[name].help)  # type: ignore[attr-defined]
    assert is_sentence(summary), f"{name}: {summary!r}"
    assert len(summary) <= 2 * WIDTH, f"{name}: the summary is a paragraph, not a sentence"
    assert len(re.findall(r"[.!?](?:\s|$)", summary)) == 1, f"{name}: {summary!r}"


@pytest.mark.parametrize("args", [(), *[(name,) for name in COMMANDS]])
def test_help_paragraphs_are_reflowed_whole_sentences(args: tuple[str, ...]) -> None:
    paragraphs = description(render_help(*args))
    assert paragraphs, f"reverie {' '.join(args)} --help shows no description"
    for lines in paragraphs:
        text = " ".join(lines)
        assert is_sentence(text), f"a paragraph stops mid-sentence: {text!r}"
        # a line carried over from the docstring shows as a short line inside a paragraph
        for line in lines[:-1]:
            assert len(line) >= WIDTH // 2, f"a line breaks early: {line!r} in {text!r}"


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_every_argument_and_option_is_explained_in_a_sentence(name: str) -> None:
    command = COMMAND.commands[name] if name else COMMAND  # type: ignore[attr-defined]
    for param in command.params:
        text = " ".join((getattr(param, "help", None) or "").split())
        assert is_sentence(text), f"reverie {name} {param.name}: {text!r}"
