"""The value sets searched per dataset (verify.verifier.sets_for) come from an index of the plan
built once per plan object: the same answer as a walk of every step, for each of two different
plans asked in turn (the index is never another plan's)."""

from __future__ import annotations

from pathlib import Path

from audit_builders import copy_workspace, make_plan

import piitracer
from piitracer.model.plan import ValueKind
from piitracer.verify.verifier import identifier_sets, sets_for


def walked(plan, decision) -> list[str]:
    """sets_for's rule, stated as a walk of the whole plan."""
    names = {f"{c.dataset}.{column}" for c in plan.resolve for column in (*c.key_columns, *c.identifiers)}
    names |= {v.name for s in plan.steps for v in s.values_from if v.kind is ValueKind.IDENTIFIER}
    names |= {v.name for v in decision.values_from}
    names |= {name for forms in decision.column_forms.values() for name in forms}
    names |= {v.name for s in plan.steps if s.dataset == decision.dataset for v in s.values_from}
    return sorted(names)


def test_each_plan_gets_its_own_sets_asked_in_turn(tmp_path: Path) -> None:
    workspace = copy_workspace(tmp_path)
    graph = piitracer.build_lineage_graph(workspace)
    first = make_plan(workspace, graph)
    second = first.model_copy(update={"resolve": (), "steps": tuple(s for s in first.steps if s.dataset == first.steps[0].dataset)})
    assert [sets_for(first, d) for d in first.datasets] != [walked(second, d) for d in second.datasets]
    for _ in range(2):
        for plan in (first, second):
            assert identifier_sets(plan) == {f"{c.dataset}.{column}" for c in plan.resolve
                                             for column in (*c.key_columns, *c.identifiers)} | {
                v.name for s in plan.steps for v in s.values_from if v.kind is ValueKind.IDENTIFIER}
            for decision in plan.datasets:
                assert sets_for(plan, decision) == walked(plan, decision)
