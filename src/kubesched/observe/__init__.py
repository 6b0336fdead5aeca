"""Decision records, failure messages, explanations and reports."""
