"""The store's tables and how to reach them: models, engines, migrations, SQL helpers."""
