"""A one-file plugin (``RAGEXP_PLUGINS_DIR``) with a typed option, shared by the plugin tests."""

ANSWER_LENGTH = """
    from pydantic import BaseModel, Field

    import ragexp

    class AnswerLength:
        name = "answer_length"
        version = "1"
        needs_judge = False

        class Options(BaseModel):
            max_words: int = Field(100, description="answer longer than this scores 0")

        async def score(self, sample, judge, options):
            n = len(sample.answer.split())
            return ragexp.MetricResult(score=float(n <= options.max_words))

    @ragexp.hookimpl
    def ragexp_register_metrics(register):
        register(AnswerLength())
"""
