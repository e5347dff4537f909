"""LangChain's own standard tests (`langchain-tests`) on the LangChain face: the retriever
against `RetrieversIntegrationTests`, each memory tool against `ToolsUnitTests` and
`ToolsIntegrationTests`. They hold the face to the framework's contract, on a real engine
(SQLite file, embedded Chroma, the real MiniLM model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from reverie.adapters.langchain import ReverieLangChainRetriever, memory_tools
from reverie.core.engine import MemoryEngine
from tests.adapters.langchain_support import real_engine

pytestmark = pytest.mark.slow

NAMESPACE = "user/alice"
LINES = (
    "user: I adopted a grey cat called Miso",
    "user: my sister Ana is getting married in Porto",
    "user: I moved to Lisbon last spring",
    "user: I am allergic to peanuts",
    "user: my favourite tea is genmaicha",
    "user: I run every Sunday morning by the river",
)


@pytest.fixture(scope="class", autouse=True)
def seeded_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryEngine]:
    """One engine per suite class, holding more memories than any test asks for."""
    engine = real_engine(tmp_path_factory.mktemp("standard"), namespace=NAMESPACE)
    ids = [engine.observe(line, source="chat-1").id for line in LINES]
    request.cls.engine = engine
    request.cls.first_id = ids[0]
    yield engine
    engine.close()


class TestReverieRetrieverStandard(RetrieversIntegrationTests):
    engine: ClassVar[MemoryEngine]

    @property
    def retriever_constructor(self) -> type[ReverieLangChainRetriever]:
        return ReverieLangChainRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine, "namespace": NAMESPACE}

    @property
    def retriever_query_example(self) -> str:
        return "what do you know about the user?"


class _ToolSuite:
    """One memory tool, as `memory_tools` builds it, with a call that suits it."""

    engine: ClassVar[MemoryEngine]
    first_id: ClassVar[str]
    tool_name: ClassVar[str]

    @property
    def tool_constructor(self) -> BaseTool:
        tools = {t.name: t for t in memory_tools(self.engine, namespace=NAMESPACE, k=2)}
        return tools[self.tool_name]

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {
            "remember": {"text": "the user's cat is called Miso"},
            "recall": {"query": "what pet does the user have?", "k": 3},
            "forget": {"memory_id": "no-such-memory"},
            "confirm": {"memory_id": self.first_id},
        }[self.tool_name]


class TestRememberToolUnit(_ToolSuite, ToolsUnitTests):
    tool_name = "remember"


class TestRememberToolIntegration(_ToolSuite, ToolsIntegrationTests):
    tool_name = "remember"


class TestRecallToolUnit(_ToolSuite, ToolsUnitTests):
    tool_name = "recall"


class TestRecallToolIntegration(_ToolSuite, ToolsIntegrationTests):
    tool_name = "recall"


class TestForgetToolUnit(_ToolSuite, ToolsUnitTests):
    tool_name = "forget"


class TestForgetToolIntegration(_ToolSuite, ToolsIntegrationTests):
    tool_name = "forget"


class TestConfirmToolUnit(_ToolSuite, ToolsUnitTests):
    tool_name = "confirm"


class TestConfirmToolIntegration(_ToolSuite, ToolsIntegrationTests):
    tool_name = "confirm"
