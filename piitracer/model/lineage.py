"""Lineage types shared by every layer: column references, typed edges, ingest problems.

Edge typing follows the OpenLineage column-lineage facet (1-1-0 and later):
``DIRECT`` edges carry values (IDENTITY, TRANSFORMATION, AGGREGATION); ``INDIRECT`` edges
only influence which rows exist or how they are ordered (JOIN, FILTER, GROUP_BY, SORT, WINDOW,
CONDITIONAL) and never carry a value.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of every model type: immutable, hashable, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class EdgeKind(str, Enum):
    """OpenLineage transformation ``type``."""

    DIRECT = "DIRECT"
    INDIRECT = "INDIRECT"


class EdgeSubtype(str, Enum):
    """OpenLineage transformation ``subtype``."""

    IDENTITY = "IDENTITY"
    TRANSFORMATION = "TRANSFORMATION"
    AGGREGATION = "AGGREGATION"
    JOIN = "JOIN"
    FILTER = "FILTER"
    GROUP_BY = "GROUP_BY"
    SORT = "SORT"
    WINDOW = "WINDOW"
    CONDITIONAL = "CONDITIONAL"
    # Not an OpenLineage subtype: learnt from SQL, a key assigned per value of the source column
    # (``row_number() over (order by customer_id)``): the target identifies the same person as the
    # source, by another value, which only the dataset holding both can map (see ColumnEdge).
    SURROGATE = "SURROGATE"


DIRECT_SUBTYPES = frozenset(
    {EdgeSubtype.IDENTITY, EdgeSubtype.TRANSFORMATION, EdgeSubtype.AGGREGATION, EdgeSubtype.SURROGATE}
)


class OriginKind(str, Enum):
    """Where an edge was learnt."""

    OPENLINEAGE = "openlineage"
    SQL = "sql"
    CATALOG = "catalog"


class Origin(Frozen):
    """The place an edge or problem comes from: ``file:line`` plus the job or statement."""

    kind: OriginKind
    file: str
    line: int | None = None
    job: str | None = None

    def location(self) -> str:
        """``file:line`` (or just ``file``) for messages."""
        return f"{self.file}:{self.line}" if self.line is not None else self.file


class ColumnRef(Frozen):
    """A column of a dataset, by canonical dataset id (see ``model.naming``).

    Examples:
        >>> str(ColumnRef(dataset="prod.payments", column="user_id"))
        'prod.payments.user_id'
    """

    dataset: str
    column: str

    def __str__(self) -> str:
        return f"{self.dataset}.{self.column}"


class ColumnEdge(Frozen):
    """One typed column-lineage edge.

    ``target_column`` is ``None`` for a dataset-level INDIRECT edge (the input influences every
    row of the output, as in OpenLineage 1-2-0's ``dataset`` list, or a SQL WHERE/JOIN/GROUP BY).

    ``expression`` is set on DIRECT TRANSFORMATION edges learnt from SQL: the transform as sqlglot
    SQL text (Spark dialect) over the *unqualified source column name*, e.g.
    ``SHA2(LOWER(TRIM(email)), 256)``. The planner substitutes upstream values into it.
    ``description`` is free text from an OpenLineage producer; it is never evaluated.
    On a DIRECT SURROGATE edge ``expression`` says how the key is assigned (the ranking as SQL
    text, e.g. ``ROW_NUMBER() OVER (ORDER BY customer_id)``); on an INDIRECT WINDOW edge into a
    ranking it is that ranking. Neither is ever evaluated: the values are read from the dataset.

    ``join_equality`` is set on a DIRECT IDENTITY edge that exists only because an inner equi-join
    (``JOIN ... ON a.x = b.y``, ``JOIN ... USING (x)``, or a WHERE equality between two relations)
    equates the target's value with the source column for every row the statement writes: the
    text is the equality as Spark SQL (``t.account_ref = a.account_id``). Outer joins and
    non-equality predicates never produce one.
    """

    source: ColumnRef
    target_dataset: str
    target_column: str | None
    kind: EdgeKind
    subtype: EdgeSubtype | None = None
    masking: bool = False
    expression: str | None = None
    description: str | None = None
    join_equality: str | None = None
    origin: Origin

    @property
    def target(self) -> ColumnRef | None:
        """The target column, or ``None`` for a dataset-level edge."""
        if self.target_column is None:
            return None
        return ColumnRef(dataset=self.target_dataset, column=self.target_column)

    def sort_key(self) -> tuple:
        """Total order used wherever edges are listed, so output is deterministic."""
        return (
            self.source.dataset,
            self.source.column,
            self.target_dataset,
            self.target_column or "",
            self.kind.value,
            self.subtype.value if self.subtype else "",
            self.masking,
            self.expression or "",
            self.join_equality or "",
            self.origin.file,
            self.origin.line or 0,
        )


class DatasetRelation(str, Enum):
    """Dataset-level relations: a job's input->output flow, clones, archives and replicas."""

    FLOW = "flow"
    SHALLOW_CLONE = "shallow_clone"
    DEEP_CLONE = "deep_clone"
    ARCHIVE = "archive"
    REPLICA = "replica"


class DatasetEdge(Frozen):
    """A dataset-level edge, ``source`` -> ``target`` (the clone or archive is the target)."""

    source: str
    target: str
    relation: DatasetRelation
    origin: Origin

    def sort_key(self) -> tuple:
        """Total order used wherever dataset edges are listed, so output is deterministic."""
        return (self.source, self.target, self.relation.value, self.origin.file, self.origin.line or 0,
                self.origin.job or "")


class DatasetFacts(Frozen):
    """What one lineage source says about a dataset itself: columns (schema) and aliases."""

    dataset: str
    columns: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    origin: Origin
    view: bool = False  # made by CREATE VIEW: a query, no files of its own


class ProblemSeverity(str, Enum):
    ERROR = "error"  # the statement/event was skipped
    WARNING = "warning"  # ingested, but something could not be resolved
    INFO = "info"  # nothing was lost; said so nobody wonders (a bare SELECT, an INSERT of constants)


class IngestProblem(Frozen):
    """A bad event or statement: reported with its place and reason, counted, and skipped."""

    severity: ProblemSeverity = ProblemSeverity.ERROR
    origin: Origin
    reason: str

    def __str__(self) -> str:
        return f"{self.origin.location()}: {self.severity.value}: {self.reason}"


class LineageBatch(Frozen):
    """Everything one ingest produced. Batches from several sources are merged into the graph."""

    column_edges: tuple[ColumnEdge, ...] = ()
    dataset_edges: tuple[DatasetEdge, ...] = ()
    datasets: tuple[DatasetFacts, ...] = ()
    problems: tuple[IngestProblem, ...] = ()
    units_read: int = 0  # events or statements read (good and bad)

    def merged(self, other: "LineageBatch") -> "LineageBatch":
        """Concatenate two batches."""
        return LineageBatch(
            column_edges=self.column_edges + other.column_edges,
            dataset_edges=self.dataset_edges + other.dataset_edges,
            datasets=self.datasets + other.datasets,
            problems=self.problems + other.problems,
            units_read=self.units_read + other.units_read,
        )
