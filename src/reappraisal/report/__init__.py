"""The paper-style HTML report and the model cards: render artifacts, never compute a number."""
