"""R-47: the order of the grants of a pass (grant_order)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0016_totals'),
    ]

    operations = [
        migrations.AddField(
            model_name='request',
            name='grant_order',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
