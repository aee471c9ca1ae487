"""Built-in folioperf workflows: one module per PTF workflow, each a Locust TaskSet plugin."""
