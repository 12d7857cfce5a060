from django.db import migrations, models


class Migration(migrations.Migration):
    """A pool's labels (decision 137): key → text, stored with each version's rows."""

    dependencies = [
        ("poolweb", "0016_totals"),
    ]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="labels",
            field=models.JSONField(default=dict),
        ),
    ]
