"""The statements of a SQL text, with procedural blocks opened up.

A text is tokenized with sqlglot and split on semicolon tokens; if the whole text does not
tokenize (an unterminated quote), it is split on lines ending in ``;`` so the rest still counts.

Procedure and script bodies hold ordinary statements between control-flow words that no SQL
parser reads as one statement: ``CREATE PROCEDURE p() BEGIN ... END`` (BigQuery),
``CREATE PROC p AS BEGIN ... END`` (T-SQL), ``CREATE PROCEDURE p IS <declarations> BEGIN ... END p;
/`` (Oracle PL/SQL), ``CREATE PROCEDURE p() ... AS $$ ... $$`` (Snowflake scripting, PL/pgSQL),
``EXECUTE IMMEDIATE '<sql>'``, and plain ``[DECLARE ...] BEGIN ... END`` blocks. Splitting on
semicolons cuts such a body into pieces that start with block syntax (``BEGIN``, ``IF c THEN``,
``WHILE c DO``, ``LOOP``, ``EXCEPTION WHEN e THEN``, ``END IF``...). This module strips that
syntax from the front of each piece, so the ``INSERT``/``MERGE``/``CREATE TABLE AS`` inside is
parsed on its own with the line it has in the file; string bodies are split the same way with
their lines kept. Declarations, assignments and procedural no-ops inside a block carry no
lineage and are dropped silently; block keywords are never statements of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from piitracer.model.lineage import ProblemSeverity


@dataclass
class Statement:
    """The tokens of one statement (their offsets index into ``sql``), or why it is not parsed."""

    line: int
    sql: str
    tokens: list[Token]
    problem: tuple[ProblemSeverity, str] | None = None


def split_statements(text: str, dialect: Dialect) -> list[Statement]:
    """Every statement of ``text`` in order, procedural blocks opened up. Never raises."""
    return list(_Splitter(dialect).text(text, 1))


# ---- words --------------------------------------------------------------------------------------

_STRINGS = frozenset(
    getattr(TokenType, name)
    for name in ("STRING", "RAW_STRING", "HEREDOC_STRING", "NATIONAL_STRING", "BYTE_STRING", "UNICODE_STRING")
    if hasattr(TokenType, name)
)
_TRANSACTION = frozenset({"TRANSACTION", "TRAN", "WORK", "DISTRIBUTED", "ISOLATION", "DEFERRED", "IMMEDIATE",
                          "EXCLUSIVE", "READ"})
# Words after END that close a block (``END IF``, ``END LOOP``, T-SQL ``END TRY``...).
_BLOCK_ENDS = frozenset({"IF", "LOOP", "WHILE", "FOR", "REPEAT", "CASE", "TRY", "CATCH"})
# Procedural statements with no lineage: dropped silently inside a block (outside one the parser
# sees them and they are reported as any other statement would be).
_NO_OPS = frozenset({"RETURN", "RAISE", "LEAVE", "ITERATE", "BREAK", "CONTINUE", "EXIT", "NULL", "OPEN", "FETCH",
                     "CLOSE", "LET", "PRINT", "RAISERROR", "THROW", "GOTO", "SIGNAL", "RESIGNAL", "ASSERT",
                     "WAITFOR"})
# Words that start a PL/SQL declaration (``CURSOR c IS SELECT ...``, ``TYPE t IS TABLE OF ...``).
_DECLARATION_HEADS = frozenset({"CURSOR", "TYPE", "SUBTYPE", "PRAGMA"})
# Words a declaration has after the declared name (``c CURSOR FOR ...``, ``e EXCEPTION``).
_DECLARATION_WORDS = frozenset({"CURSOR", "EXCEPTION", "CONSTANT", "RESULTSET", "RECORD", "TYPE", "DEFAULT",
                                "NUMBER", "VARCHAR2", "PLS_INTEGER", "BOOLEAN", "INT64", "FLOAT64", "STRING",
                                "ROWTYPE"})
# Where a T-SQL ``IF cond <statement>`` / ``WHILE cond <statement>`` (no THEN, no DO) has its
# statement: the first of these words outside parentheses.
_STATEMENT_WORDS = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "SELECT", "WITH", "CREATE", "DROP", "TRUNCATE",
                              "SET", "BEGIN", "EXEC", "EXECUTE", "RETURN", "PRINT", "RAISERROR", "THROW", "DECLARE",
                              "IF", "WHILE", "BREAK", "CONTINUE", "ALTER", "CALL", "REPLACE", "COPY"})
# Words that make a statement that starts with a name a real statement (a typo such as
# ``INSRT INTO t SELECT ...``), not a declaration or a call: it goes to the parser.
_QUERY_WORDS = frozenset({"SELECT", "FROM", "INTO", "TABLE", "OVERWRITE", "VALUES", "USING", "SET"})
_ROUTINE_MODIFIERS = frozenset({"CREATE", "ALTER", "REPLACE", "OR", "SECURE", "TEMP", "TEMPORARY"})
_SQL_LANGUAGES = frozenset({"SQL", "PLPGSQL", "PLSQL", "TSQL", "TRANSACT_SQL", "SQLSCRIPT", "SPL"})
_MAX_NESTED_BODIES = 16  # EXECUTE IMMEDIATE of a string holding EXECUTE IMMEDIATE ...
_MAX_HEADS = 10_000  # block words stripped from one statement; each step strips at least one token


def _word(token: Token) -> str:
    """The upper-cased text of a keyword or name token; '' for strings (their text is data)."""
    return "" if token.token_type in _STRINGS else token.text.upper()


def _is_name(token: Token) -> bool:
    return token.token_type == TokenType.VAR


# ---- splitting ----------------------------------------------------------------------------------


class _Splitter:
    """Splits texts into statements; remembers, across one file, how deep in blocks it is."""

    def __init__(self, dialect: Dialect):
        self.dialect = dialect
        self.depth = 0  # open BEGIN/IF/LOOP... blocks: inside one, declarations and no-ops are dropped
        self.declaring = False  # between DECLARE (or a procedure's AS/IS) and its BEGIN
        self.nested = 0  # string bodies being split inside string bodies

    def text(self, text: str, first_line: int) -> Iterator[Statement]:
        """The statements of ``text``, whose first line is line ``first_line`` of the file."""
        try:
            tokens = self._tokenize(text, first_line)
        except TokenError:
            yield from self._by_lines(text, first_line)
            return
        yield from self._split(tokens, text)

    def _tokenize(self, text: str, first_line: int) -> list[Token]:
        tokens = self.dialect.tokenize(text)
        if first_line != 1:
            for token in tokens:  # lines as in the file, so every message and origin is right
                token.line += first_line - 1
        return tokens

    def _by_lines(self, text: str, first_line: int) -> Iterator[Statement]:
        for offset, chunk in _line_chunks(text):
            line = first_line + offset
            try:
                tokens = self._tokenize(chunk, line)
            except TokenError as error:
                where = line + _first_content_line(chunk)
                yield Statement(where, chunk, [], (ProblemSeverity.ERROR, f"cannot tokenize: {error}"))
                continue
            yield from self._split(tokens, chunk)

    def _split(self, tokens: list[Token], sql: str) -> Iterator[Statement]:
        current: list[Token] = []
        for token in tokens + [None]:
            if token is None or token.token_type == TokenType.SEMICOLON:
                if current:
                    end = token.start if token is not None else len(sql)
                    yield from self._statement(current, sql, end)
                current = []
            else:
                current.append(token)

    # ---- one semicolon-delimited piece ---------------------------------------------------------

    def _statement(self, tokens: list[Token], sql: str, end: int) -> Iterator[Statement]:
        """Strip block syntax from the front of a piece until a statement (or nothing) is left."""
        for _ in range(_MAX_HEADS):
            if not tokens:
                return
            if _is_command_scanned(tokens, sql):
                # sqlglot keeps what follows a command word as one string: tokenize it for real.
                head = tokens[0]
                retokenized = self._retokenize(head, sql, end)
                if isinstance(retokenized, str):
                    yield Statement(head.line, sql, [], (ProblemSeverity.ERROR, retokenized))
                    return
                tokens, sql, end = retokenized
                continue
            try:
                step = self._head(tokens, sql, end)
            except (IndexError, ValueError, AttributeError, TypeError, RecursionError):
                # Block syntax this module does not expect: the parser gets the piece as it is
                # (and reports it if it cannot read it), rather than the file being lost.
                step = None
            if step is None:  # nothing to strip: a statement
                yield Statement(tokens[0].line, sql, tokens)
                return
            if isinstance(step, int):  # drop the first ``step`` tokens
                tokens = tokens[step:]
                continue
            yield from step  # statements of a string body, or a report; the piece is done
            return

    def _retokenize(self, head: Token, sql: str, end: int) -> tuple[list[Token], str, int] | str:
        """The head token followed by the real tokens of the text sqlglot kept as one string
        (or why that text does not tokenize)."""
        rest = sql[head.end + 1:end]
        try:
            tokens = self._tokenize(rest, head.line)  # the rest starts on the head's line
        except TokenError as error:
            return f"cannot tokenize: {error}"
        # A stand-in for the head, whose offsets point before the rest: it is stripped next.
        stand_in = Token(TokenType.VAR, head.text, line=head.line, col=head.col, start=0, end=-1)
        return [stand_in] + tokens, rest, len(rest)

    def _head(self, tokens: list[Token], sql: str, end: int) -> int | list[Statement] | None:
        """What to do with the piece's first words: a number of tokens to strip, the statements
        that replace the piece (a body, a report, or none: dropped), or None (parse it)."""
        word = _word(tokens[0])
        after = _word(tokens[1]) if len(tokens) > 1 else ""
        if word in ("/", "GO") and (len(tokens) == 1 or tokens[1].line > tokens[0].line):
            return 1  # Oracle's and T-SQL's batch terminators, on a line of their own
        if word == "BEGIN":
            if after == "" or after in _TRANSACTION:
                return []  # BEGIN [TRANSACTION]: a transaction, no lineage
            self.depth += 1
            self.declaring = False
            return 2 if after in ("TRY", "CATCH", "ATOMIC") else 1
        if word == "END":
            self.depth = max(0, self.depth - 1)
            if len(tokens) > 1 and (after in _BLOCK_ENDS or (_is_name(tokens[1]) and after != "GO"
                                                             and (len(tokens) == 2 or tokens[2].line > tokens[1].line))):
                return 2  # END IF, END LOOP, END TRY, END proc_name
            return 1
        if word == "UNTIL":  # REPEAT ... UNTIL cond END REPEAT
            self.depth = max(0, self.depth - 1)
            return []
        if word == "DECLARE":
            self.declaring = True
            return []
        if word in ("IF", "ELSEIF", "ELSIF", "WHEN", "CASE"):
            return self._through(tokens, ("THEN",), opens=word == "IF")
        if word == "ELSE":
            return 1
        if word in ("LOOP", "REPEAT"):
            self.depth += 1
            return 1
        if word in ("WHILE", "FOR"):
            return self._through(tokens, ("DO", "LOOP"), opens=True, or_before=("BEGIN",))
        if word == "EXCEPTION":
            return 1
        if word in ("CREATE", "ALTER", "REPLACE"):
            return self._procedure(tokens, sql)
        if word in ("EXECUTE", "EXEC") and after in ("IMMEDIATE", "SP_EXECUTESQL"):
            return self._dynamic(tokens, sql)
        label = _label_length(tokens)
        if label:
            return label
        if self.depth or self.declaring:
            if word in _NO_OPS or word in _DECLARATION_HEADS or _declaration_or_call(tokens):
                return []
        return None

    def _through(
        self, tokens: list[Token], words: tuple[str, ...], *, opens: bool, or_before: tuple[str, ...] = ()
    ) -> int | list[Statement]:
        """Strip a control head up to and including its first ``words`` (``IF c THEN``), or up to
        a word of ``or_before`` (T-SQL ``WHILE c BEGIN``), outside parentheses and CASE ... END.

        A head with neither (T-SQL ``IF c <statement>``) is stripped up to the first word that
        starts a statement; one with none of those is dropped."""
        depth = cases = 0
        for index, token in enumerate(tokens[1:], start=1):
            word = _word(token)
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth = max(0, depth - 1)
            elif word == "CASE":
                cases += 1
            elif word == "END" and cases:
                cases -= 1
            elif not depth and not cases and word in words:
                if opens:
                    self.depth += 1
                return index + 1
            elif not depth and not cases and word in or_before:
                return index
        for index, token in enumerate(tokens[1:], start=1):
            if _word(token) in _STATEMENT_WORDS and _paren_depth(tokens, index) == 0:
                return index
        return []

    def _procedure(self, tokens: list[Token], sql: str) -> int | list[Statement] | None:
        """``CREATE [OR REPLACE|OR ALTER] PROC[EDURE] name ... <body>``: where the body starts.

        The body is what follows the first top-level BEGIN, or AS/IS (``EXECUTE AS CALLER`` is a
        clause, not the body): a string (``$$ ... $$``), split as a text of its own, or the rest
        of the piece. PL/pgSQL functions are procedures too; other functions are left to sqlglot."""
        kind = next((i for i, t in enumerate(tokens[:6]) if _word(t) in ("PROCEDURE", "PROC", "FUNCTION")), None)
        if kind is None or any(_word(t) not in _ROUTINE_MODIFIERS for t in tokens[:kind]):
            return None  # not a routine (``CREATE TABLE proc AS ...``)
        language = _language(tokens)
        if _word(tokens[kind]) == "FUNCTION" and language != "PLPGSQL":
            return None
        depth = 0
        for index in range(kind + 1, len(tokens)):
            token, word = tokens[index], _word(tokens[index])
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth = max(0, depth - 1)
            if depth:
                continue
            if word == "BEGIN":
                return index
            if word in ("AS", "IS") and _word(tokens[index - 1]) != "EXECUTE":
                body = tokens[index + 1] if index + 1 < len(tokens) else None
                if body is not None and body.token_type in _STRINGS:
                    return self._string_body(body, sql, language, _routine_name(tokens, kind))
                self.declaring = True  # Oracle's declarations, or a T-SQL body without BEGIN
                return index + 1
        return None

    def _string_body(self, body: Token, sql: str, language: str, name: str) -> list[Statement]:
        if language and language not in _SQL_LANGUAGES:
            reason = f"procedure {name} is written in {language}: its statements are not analysed (no lineage)"
            return [Statement(body.line, sql, [], (ProblemSeverity.WARNING, reason))]
        return self._nested(body, sql)

    def _dynamic(self, tokens: list[Token], sql: str) -> list[Statement]:
        """``EXECUTE IMMEDIATE '<sql>'`` (and T-SQL's ``sp_executesql N'<sql>'``): the string's
        statements; dynamic SQL built at run time cannot be read."""
        body = tokens[2] if len(tokens) > 2 else None
        if body is not None and body.token_type in _STRINGS:
            return self._nested(body, sql)
        reason = "dynamic SQL built at run time (EXECUTE IMMEDIATE of an expression): not analysed, no lineage"
        return [Statement(tokens[0].line, sql, [], (ProblemSeverity.WARNING, reason))]

    def _nested(self, body: Token, sql: str) -> list[Statement]:
        """The statements of a string body, with the lines they have in the file."""
        if self.nested >= _MAX_NESTED_BODIES:
            reason = f"SQL nested in strings more than {_MAX_NESTED_BODIES} levels deep: not analysed"
            return [Statement(body.line, sql, [], (ProblemSeverity.WARNING, reason))]
        saved = (self.depth, self.declaring)
        self.nested += 1
        self.depth, self.declaring = self.depth + 1, False  # a routine's body: declarations are no statements
        try:
            statements = list(self.text(body.text, _body_line(body, sql)))
            for statement in statements:
                # An escaped newline in a quoted body is no line of the file: stay inside the body.
                statement.line = min(statement.line, body.line)
            return statements
        finally:
            self.nested -= 1
            self.depth, self.declaring = saved


# ---- helpers ------------------------------------------------------------------------------------


def _is_command_scanned(tokens: list[Token], sql: str) -> bool:
    """Whether sqlglot kept the rest of the piece after its first word as one string (it does
    so for its command words, e.g. BigQuery's ``BEGIN``, ``WHILE``, ``LOOP``, T-SQL's ``END``).
    Only block words matter here: other commands go to the parser as they are."""
    if len(tokens) != 2 or tokens[1].token_type != TokenType.STRING:
        return False
    if _word(tokens[0]) not in ("BEGIN", "END", "IF", "ELSEIF", "ELSIF", "ELSE", "WHEN", "CASE", "LOOP", "REPEAT",
                                "WHILE", "FOR", "EXCEPTION", "DECLARE", "EXECUTE", "EXEC", "UNTIL", "GO"):
        return False
    # A real string literal starts with a quote (or a prefix and a quote); a kept rest starts
    # with its first word.
    rest = sql[tokens[0].end + 1:].lstrip()
    literal = rest[:1] in ("'", '"', "$", "`") or (rest[1:2] in ("'", '"') and rest[:1].upper() in "NEBXRU")
    return not literal and rest.startswith(tokens[1].text[:1])


def _paren_depth(tokens: list[Token], index: int) -> int:
    depth = 0
    for token in tokens[:index]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth = max(0, depth - 1)
    return depth


def _label_length(tokens: list[Token]) -> int:
    """``<<name>>`` (PL/SQL) or ``name:`` before a block word: the tokens to strip, else 0."""
    for length in (3, 4, 5):
        if re.fullmatch(r"<<\w+>>", "".join(t.text for t in tokens[:length])) and len(tokens) > length:
            return length
    if (len(tokens) > 2 and _is_name(tokens[0]) and tokens[1].token_type == TokenType.COLON
            and _word(tokens[2]) in ("BEGIN", "LOOP", "WHILE", "FOR", "REPEAT")):
        return 2
    return 0


def _declaration_or_call(tokens: list[Token]) -> bool:
    """Inside a block: ``v NUMBER := 0``, ``c CURSOR FOR ...``, ``v := v + 1``, ``pkg.log('x')``.

    A piece that starts with a name but reads like a query (``INSRT INTO t SELECT ...``) is not
    one: it goes to the parser and is reported."""
    if len(tokens) < 2 or not (_is_name(tokens[0]) or tokens[0].token_type == TokenType.PARAMETER):
        return False
    if any(_word(t) in _QUERY_WORDS for t in tokens[1:]):
        return False
    second = tokens[1]
    return (
        second.token_type in (TokenType.COLON_EQ, TokenType.L_PAREN, TokenType.DOT, TokenType.VAR)
        or second.token_type in Parser.TYPE_TOKENS
        or _word(second) in _DECLARATION_WORDS
    )


def _language(tokens: list[Token]) -> str:
    for index, token in enumerate(tokens[:-1]):
        if _word(token) == "LANGUAGE":
            return _word(tokens[index + 1]).replace(" ", "_")
    return ""


def _routine_name(tokens: list[Token], kind: int) -> str:
    parts = []
    for token in tokens[kind + 1:]:
        if token.token_type in (TokenType.VAR, TokenType.DOT) or (parts and token.token_type == TokenType.DOT):
            parts.append(token.text)
        else:
            break
    return "".join(parts) or "(unnamed)"


def _body_line(body: Token, sql: str) -> int:
    """The file line a string token's text starts on (a token's own line is where it ends)."""
    return max(1, body.line - body.text.count("\n"))


def _line_chunks(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, text) of runs of lines, each ending with a line that ends in ``;``."""
    lines = text.splitlines(keepends=True)
    start = 0
    for index, line in enumerate(lines):
        if line.rstrip().endswith(";") or index == len(lines) - 1:
            chunk = "".join(lines[start:index + 1])
            if chunk.strip():
                yield start, chunk
            start = index + 1


def _first_content_line(chunk: str) -> int:
    """Offset of the chunk's first line that is neither blank nor a ``--`` comment."""
    for offset, line in enumerate(chunk.splitlines()):
        if line.strip() and not line.strip().startswith("--"):
            return offset
    return 0
