"""The plan as readable tables (rich), and one dataset's explanation. Never prints subject values."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from piitracer.model.plan import DatasetDecision, DeletionPlan, Step
from piitracer.planner.errors import PlanningError
from piitracer.render.tables import Fit, FittedTable, line, name_column, text_column


def plan_header(plan: DeletionPlan) -> list[Text]:
    """The plan's id, its subjects and requests, its sources and its deadline: three lines."""
    requests = sorted({s.request_id for s in plan.subjects})
    shown = ", ".join(requests[:5]) + (f" and {len(requests) - 5} more" if len(requests) > 5 else "")
    return [Text.assemble(("plan ", "bold"), plan.plan_id[:16], f"  schema {plan.schema_version}"),
            Text(f"{len(plan.subjects)} subject(s), requests {shown}; sources {', '.join(str(s) for s in plan.sources)}"),
            Text(f"deadline {plan.deadline_at.isoformat()}")]


def plan_compact(plan: DeletionPlan) -> Group:
    """``piitracer plan``'s default: the header, then one line per dataset (its decision, key
    column, steps and deadline) that fits the width it is printed at, and how to see the rest."""
    steps_of: dict[str, list[Step]] = {}
    for step in plan.steps:
        steps_of.setdefault(step.dataset, []).append(step)
    columns = [Fit("dataset", minimum=16), Fit("status", minimum=9), Fit("key column", minimum=8, drop=4),
               Fit("format", minimum=7, drop=2), Fit("deadline", minimum=6, drop=1),
               Fit("steps", minimum=12, drop=3, flexible=True)]
    rows = [[decision.dataset, decision.status.value, decision.key_column or "", decision.format or "?",
             _deadline_word(decision), _steps_word(steps_of.get(decision.dataset, []))] for decision in plan.datasets]
    table = FittedTable(columns, rows, note_dropped="--wide adds: {columns}")
    parts: list = [line(text) for text in plan_header(plan)]
    parts.append(table)
    parts += [line(Text(f"warning: {w}", style="yellow")) for w in plan.warnings]
    parts.append(line(f"{len(plan.steps)} steps in {len(plan.datasets)} datasets; --wide lists every step, "
                      "--explain DATASET says why"))
    return Group(*parts)


def _deadline_word(decision: DatasetDecision) -> str:
    if decision.deadline is None:
        return ""
    return "overridden" if decision.deadline.violates_deadline else "met"


def _steps_word(steps: list[Step]) -> str:
    """``3: delete_rows, expire_snapshots, remove_orphans`` (``!`` after a blocking step)."""
    if not steps:
        return ""
    return f"{len(steps)}: " + ", ".join(s.action.value + ("!" if s.blocking else "") for s in steps)


def plan_tables(plan: DeletionPlan) -> Group:
    """Header, the ordered steps and the per-dataset summary: every column (``plan --wide``)."""
    header = Text("\n").join(plan_header(plan))
    steps = Table(title="steps", show_lines=False)
    name_column(steps, "#", [str(s.order) for s in plan.steps], justify="right")
    name_column(steps, "id", [s.id for s in plan.steps])
    name_column(steps, "dataset", [s.dataset for s in plan.steps])
    name_column(steps, "action", [_action(s) for s in plan.steps])
    name_column(steps, "key column", [s.key_column or "" for s in plan.steps])
    for name in ("values", "after", "note"):
        text_column(steps, name)
    for step in plan.steps:
        steps.add_row(str(step.order), step.id, step.dataset, _action(step), step.key_column or "",
                      _values(step), ", ".join(step.depends_on[:3]) + ("…" if len(step.depends_on) > 3 else ""),
                      _note(step))
    datasets = Table(title="datasets")
    name_column(datasets, "dataset", [d.dataset for d in plan.datasets])
    name_column(datasets, "format", [d.format or "?" for d in plan.datasets])
    name_column(datasets, "status", [d.status.value for d in plan.datasets])
    name_column(datasets, "key column", [d.key_column or "" for d in plan.datasets])
    for name in ("rule", "deadline"):
        text_column(datasets, name)
    for decision in plan.datasets:
        datasets.add_row(decision.dataset, decision.format or "?", decision.status.value, decision.key_column or "",
                         decision.rule, _deadline(decision))
    parts = [header, steps, datasets]
    if plan.guard_points:  # issue 52: where piitracer.guard belongs so the person is not written back
        parts.append(Text("where a pipeline guard belongs (piitracer.guard, in the jobs that write):\n" + "\n".join(
            f"  - {g.dataset} ({', '.join(g.columns)})" + (f", fed by {', '.join(g.fed_by)}" if g.fed_by else "")
            for g in plan.guard_points)))
    if plan.warnings:
        parts.append(Text("warnings:\n" + "\n".join(f"  - {w}" for w in plan.warnings), style="yellow"))
    return Group(*parts)


def explain_text(plan: DeletionPlan, dataset: str) -> str:
    """Why the plan does what it does with one dataset: rule, key, values, lineage path, deadline.
    Raises :class:`PlanningError` when the plan does not reach ``dataset``."""
    if dataset not in {d.dataset for d in plan.datasets}:
        raise PlanningError(f"--explain {dataset}: the plan does not reach dataset {dataset!r}")
    decision = plan.decision(dataset)
    lines = [
        f"{decision.dataset} ({decision.format or 'not in catalog'})",
        f"  status:     {decision.status.value}",
        f"  rule:       {decision.rule}",
        f"  reason:     {decision.reason}",
    ]
    if decision.key_column:
        lines.append(f"  key column: {decision.key_column}")
    for value in decision.values_from:
        how = f"computed on {value.source}: {value.expression}" if value.expression else f"captured from {value.source}"
        if value.lookup is not None:  # the chain: natural key -> surrogate key (how) -> this dataset
            lookup = value.lookup
            how = (f"surrogate key read at run time from {lookup.dataset}.{lookup.value_column}, assigned by {lookup.how}, "
                   f"on the rows whose {lookup.key_column} holds {', '.join(lookup.key_from)}")
        lines.append(f"  values:     {value.name} ({how})")
    if decision.group:
        lines.append(f"  group:      {decision.group} (a lineage cycle, erased together)")
    lines.append("  lineage path:")
    lines += [f"    {hop}" for hop in decision.lineage_path] or ["    (a source of the request)"]
    if decision.deadline:
        d = decision.deadline
        lines.append(f"  deadline:   {d.deadline_at.isoformat()}; own retention: {d.basis}")
        if d.violates_deadline:
            lines.append(f"  ! own retention misses the deadline; the plan instead: {d.override}")
    steps = [s for s in plan.steps if s.dataset == dataset]
    if steps:
        lines.append("  steps:      " + ", ".join(f"{s.id} {s.action.value}" for s in steps))
    lines += [f"  warning:    {w}" for w in decision.warnings]
    return "\n".join(lines)


def _action(step: Step) -> str:
    engine = f" via {step.engine.value}" if step.engine else ""  # which engine runs it (Iceberg: spark or pyiceberg)
    return step.action.value + engine + (" (blocking)" if step.blocking else "")


def _values(step: Step) -> str:
    return ", ".join(v.expression or v.name for v in step.values_from)


def _note(step: Step) -> str:
    parts = []
    if step.group:
        parts.append(step.group)
    if step.owner:
        parts.append(f"owner: {step.owner}")
    if step.reason and step.action.value in ("manual", "manual_review", "release_ref", "rewrite_ref", "recompute",
                                             "clean_delta_log"):
        parts.append(step.reason)
    condition = getattr(step.params, "condition", None)
    if condition:
        parts.append(condition)
    return "; ".join(parts)


def _deadline(decision: DatasetDecision) -> str:
    if decision.deadline is None:
        return ""
    if decision.deadline.violates_deadline:
        return "own retention misses it: overridden"
    return "met by own retention"
