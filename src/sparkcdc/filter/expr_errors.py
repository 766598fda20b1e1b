"""The errors of TiCDC's expression filters, with TiCDC's codes and wording.

``CDC:ErrInvalidFilterExpression`` (TiCDC's ``ErrExpressionParseFailed``) and ``CDC:ErrExpressionColumnNotFound``
refuse a changefeed at create/update, and fail it (unretryable, as TiCDC's ``changefeedUnRetryableErrors``) when
they appear later, after a DDL. ``CDC:ErrFailedToFilterDML`` is an expression failing on one row's values.
"""

from __future__ import annotations

from sparkcdc.errors import ConfigError, SparkcdcError

ERR_INVALID_FILTER_EXPRESSION = "CDC:ErrInvalidFilterExpression"
ERR_EXPRESSION_COLUMN_NOT_FOUND = "CDC:ErrExpressionColumnNotFound"
ERR_FAILED_TO_FILTER_DML = "CDC:ErrFailedToFilterDML"


class ExprEvalError(SparkcdcError):
    """An expression failed on a row: an integer out of BIGINT's range, an invalid regular expression."""

    default_code = ERR_FAILED_TO_FILTER_DML
    default_retryable = True


class ArgumentError(ValueError):
    """A function called with the wrong arguments (a syntax error of the expression)."""


class ColumnNotFound(LookupError):
    """An expression names a column the table does not have (its name in ``args[0]``)."""


def syntax_error(text: str, detail: str = "") -> ConfigError:
    """TiCDC's ``ErrExpressionParseFailed`` (code ``CDC:ErrInvalidFilterExpression``) for ``text``."""
    more = f" ({detail})" if detail else ""
    return ConfigError(
        f"invalid filter expressions. There is a syntax error in: '{text}'{more}; fix the expression",
        code=ERR_INVALID_FILTER_EXPRESSION,
    )


def column_not_found(column: str, table: str, text: str) -> ConfigError:
    """TiCDC's ``ErrExpressionColumnNotFound``."""
    return ConfigError(
        f"invalid filter expression(s). Cannot find column '{column}' from table '{table}' in: {text}",
        code=ERR_EXPRESSION_COLUMN_NOT_FOUND,
    )
