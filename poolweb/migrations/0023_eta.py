"""Issue 23 rule 5 (R-54): a pending request's estimated start and its basis."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0022_budgets'),
    ]

    operations = [
        migrations.AddField(
            model_name='request',
            name='eta',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='request',
            name='eta_basis',
            field=models.CharField(blank=True, default='', max_length=20),
        ),
    ]
