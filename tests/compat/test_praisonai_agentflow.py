"""AgentFlow and AgentTeam as PraisonAI's users write them: its step helpers, its duck-typed agents,
its ``when`` templates, ``tools_run_on`` and ``_collect_agents``; and every place refused when the
flow, team or agent is made. Only the imports name our package.

PraisonAI's own two flow tests run with the rest of its file in test_praisonai_shared_compute.py;
these use its duck-typed agent, with an answer.
"""

from __future__ import annotations

import pytest
from test_praisonai_shared_compute import FakeAgent as PraisonAIFakeAgent


class FakeAgent(PraisonAIFakeAgent):
    """PraisonAI's duck-typed Agent (what _collect_agents and attach() look for), plus an answer."""

    def __init__(self, name, tools=None, backend=None, answer=""):  # type: ignore[no-untyped-def]
        super().__init__(name, tools, backend)
        self.answer = answer
        self.asked: list[str] = []

    def chat(self, *a, **k):  # type: ignore[no-untyped-def]
        self.asked.append(a[0])
        return self.answer


# ---- the rest of PraisonAI's flow spelling ------------------------------------------------------


def test_no_place_given_is_none_under_both_names() -> None:
    from praisonai import AgentFlow, AgentTeam

    flow, team = AgentFlow(steps=[FakeAgent("A")]), AgentTeam(agents=[FakeAgent("A")])  # type: ignore[list-item]
    assert flow.compute is None and flow.tools_run_on is None
    assert team.compute is None and team.tools_run_on is None
    placed = AgentFlow(steps=[FakeAgent("A")], tools_run_on="docker")
    assert placed.tools_run_on == placed.compute == "docker"


def test_a_flow_runs_duck_typed_agents_and_praisonai_templates() -> None:
    from praisonai import AgentFlow
    from praisonai.agents import route, when

    scorer = FakeAgent("scorer", answer="85")
    approver, rejecter = FakeAgent("approver", answer="approved"), FakeAgent("rejecter", answer="rejected")
    fallback = FakeAgent("fallback", answer="handled elsewhere")
    flow = AgentFlow(
        steps=[
            scorer,
            when(condition="{{scorer_output}} > 80", then_steps=[approver], else_steps=[rejecter]),
            route({"rejected": [rejecter], "default": [fallback]}),
        ]
    )
    result = flow.start("grade this")
    assert result.text == "handled elsewhere"
    assert [(o.agent, o.text) for o in result.outputs] == [
        ("scorer", "85"),
        ("approver", "approved"),
        ("fallback", "handled elsewhere"),
    ]
    assert scorer.asked == ["grade this"] and approver.asked == ["85"] and rejecter.asked == []


@pytest.mark.parametrize(
    ("condition", "variables", "then"),
    [
        ("{{score}} > 80", {"score": 90}, True),
        ("{{score}} > 80", {"score": 80}, False),
        ("{{missing}} > 1", {}, False),
        ("{{status}} == approved", {"status": "approved"}, True),
        ("{{status}} != approved", {"status": "approved"}, False),
        ("error in {{previous_output}}", {}, True),  # the step's input: "An ERROR here"
        ("{{previous_output}} contains here", {}, True),
        ("{{input}} contains nothing", {}, False),
        ("{{item.score}} >= 60", {"item": {"score": 61}}, True),
        ("{{flag}}", {"flag": False}, False),
        ("{{flag}}", {"flag": True}, True),
        # text, never code: with eval() each of these would be true (or run something)
        ("{{code}}", {"code": "__import__('os').getpid() > 0"}, False),
        ("{{a}} > {{b}}", {"a": "len('xxxxx')", "b": "1"}, False),
    ],
)
def test_when_templates_follow_praisonai_and_are_never_evaluated_as_code(
    condition: str, variables: dict[str, object], then: bool
) -> None:
    from praisonai import AgentFlow
    from praisonai.agents import when

    flow = AgentFlow(steps=[when(condition, [lambda t: "then"], [lambda t: "else"])], variables=variables)
    assert flow.start("An ERROR here").text == ("then" if then else "else")


def test_a_place_is_refused_when_the_flow_team_or_agent_is_made() -> None:
    from praisonai import Agent, AgentFlow, AgentTeam, LocalAgent, ManagedAgent, SharedCompute
    from praisonai._errors import UnknownProviderError

    with pytest.raises(UnknownProviderError) as shared:
        SharedCompute("dokcer")
    made = [
        lambda: AgentFlow(steps=[FakeAgent("A")], tools_run_on="dokcer"),
        lambda: AgentTeam(agents=[Agent(name="A", api_key="k")], tools_run_on="dokcer"),
        lambda: Agent(name="A", api_key="k", tools_run_on="dokcer"),
        lambda: LocalAgent(tools_run_on="dokcer"),
        lambda: ManagedAgent(compute="dokcer"),
    ]
    for make in made:
        with pytest.raises(UnknownProviderError) as caught:
            make()
        assert str(caught.value) == str(shared.value)
