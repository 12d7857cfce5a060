"""``/metrics``: Prometheus's text format of what the database says (decisions 150–153)."""
