"""MLflow's names for what ragexp writes into a run and its traces, as plain strings, so that
the job builds its traces without importing MLflow. A test checks each against MLflow's own
constant."""

from __future__ import annotations

# span attributes (mlflow.tracing.constant.SpanAttributeKey)
SPAN_TRACE_ID = "mlflow.traceRequestId"
SPAN_TYPE = "mlflow.spanType"
SPAN_INPUTS = "mlflow.spanInputs"
SPAN_OUTPUTS = "mlflow.spanOutputs"
SPAN_CHAT_USAGE = "mlflow.chat.tokenUsage"

# trace metadata (TraceMetadataKey, TRACE_SCHEMA_VERSION_KEY)
TRACE_SOURCE_RUN = "mlflow.sourceRun"
TRACE_INPUTS = "mlflow.traceInputs"
TRACE_OUTPUTS = "mlflow.traceOutputs"
TRACE_TOKEN_USAGE = "mlflow.trace.tokenUsage"
TRACE_SCHEMA_VERSION_KEY = "mlflow.trace_schema.version"
TRACE_SCHEMA_VERSION = 3

# trace tags (TraceTagKey, SpansLocation)
TRACE_NAME = "mlflow.traceName"
SPANS_LOCATION = "mlflow.trace.spansLocation"
SPANS_IN_TRACKING_STORE = "TRACKING_STORE"
ARTIFACT_LOCATION = "mlflow.artifactLocation"

# token usage (TokenUsageKey)
INPUT_TOKENS = "input_tokens"
OUTPUT_TOKENS = "output_tokens"
TOTAL_TOKENS = "total_tokens"

EXPECTED_RESPONSE = "expected_response"
"""The name `mlflow.genai.evaluate` gives a dataset's ground-truth answer."""

# run tags (mlflow.utils.mlflow_tags)
RUN_NAME = "mlflow.runName"
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"
USER = "mlflow.user"
SOURCE_NAME = "mlflow.source.name"
SOURCE_TYPE = "mlflow.source.type"
GIT_COMMIT = "mlflow.source.git.commit"
GIT_BRANCH = "mlflow.source.git.branch"
GIT_REPO_URL = "mlflow.source.git.repoURL"
