"""Built-in scenarios, installed as ``swe.scenarios``: one module per scenario, each with
``build(**params) -> swe.Scenario``."""
