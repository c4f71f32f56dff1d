"""The names ragexp writes MLflow's runs and traces with are MLflow's own constants."""

from __future__ import annotations

from ragexp.tracking import names


def test_the_names_are_mlflows_own() -> None:
    from mlflow.genai.evaluation.constant import AgentEvaluationReserverKey
    from mlflow.tracing import constant as c
    from mlflow.utils import mlflow_tags as t

    span, meta, tag, usage = c.SpanAttributeKey, c.TraceMetadataKey, c.TraceTagKey, c.TokenUsageKey
    pairs = [
        (names.SPAN_TRACE_ID, span.REQUEST_ID), (names.SPAN_TYPE, span.SPAN_TYPE),
        (names.SPAN_INPUTS, span.INPUTS), (names.SPAN_OUTPUTS, span.OUTPUTS),
        (names.SPAN_CHAT_USAGE, span.CHAT_USAGE), (names.TRACE_SOURCE_RUN, meta.SOURCE_RUN),
        (names.TRACE_INPUTS, meta.INPUTS), (names.TRACE_OUTPUTS, meta.OUTPUTS),
        (names.TRACE_TOKEN_USAGE, meta.TOKEN_USAGE),
        (names.TRACE_SCHEMA_VERSION_KEY, c.TRACE_SCHEMA_VERSION_KEY),
        (names.TRACE_SCHEMA_VERSION, c.TRACE_SCHEMA_VERSION),
        (names.TRACE_NAME, tag.TRACE_NAME), (names.SPANS_LOCATION, tag.SPANS_LOCATION),
        (names.SPANS_IN_TRACKING_STORE, c.SpansLocation.TRACKING_STORE.value),
        (names.INPUT_TOKENS, usage.INPUT_TOKENS), (names.OUTPUT_TOKENS, usage.OUTPUT_TOKENS),
        (names.TOTAL_TOKENS, usage.TOTAL_TOKENS),
        (names.EXPECTED_RESPONSE, AgentEvaluationReserverKey.EXPECTED_RESPONSE),
        (names.ARTIFACT_LOCATION, t.MLFLOW_ARTIFACT_LOCATION), (names.RUN_NAME, t.MLFLOW_RUN_NAME),
        (names.LOGGED_ARTIFACTS, t.MLFLOW_LOGGED_ARTIFACTS), (names.USER, t.MLFLOW_USER),
        (names.SOURCE_NAME, t.MLFLOW_SOURCE_NAME), (names.SOURCE_TYPE, t.MLFLOW_SOURCE_TYPE),
        (names.GIT_COMMIT, t.MLFLOW_GIT_COMMIT), (names.GIT_BRANCH, t.MLFLOW_GIT_BRANCH),
        (names.GIT_REPO_URL, t.MLFLOW_GIT_REPO_URL),
    ]  # fmt: skip
    assert [ours for ours, _ in pairs] == [theirs for _, theirs in pairs]
