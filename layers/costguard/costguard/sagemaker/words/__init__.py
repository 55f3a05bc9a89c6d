"""The SageMaker messages: Block Kit built by pure functions, sent by the acts."""
