"""Token names (existing tokens were all made by ``manage.py create_api_token``, so they are
named after it), a version's author when that is no account, and failed sign-ins."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("poolweb", "0004_request_history"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="name",
            field=models.CharField(default="create_api_token", max_length=100),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="configversion",
            name="author_name",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.CreateModel(
            name="SignInFailure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("address", models.CharField(max_length=64)),
                ("at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
            ],
            options={
                "indexes": [models.Index(fields=["address", "at"], name="signin_failure_address_at")],
            },
        ),
    ]
