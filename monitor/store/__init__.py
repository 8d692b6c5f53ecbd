"""The SQL store: models, engines, migrations, writes and reads."""
