"""Each version keeps what it changed against the one before it (reconcile.diff.summarize),
written at provision; the versions that exist are summarised here once."""

from django.db import migrations, models


def summarise(apps, schema_editor):
    from reconcile import Config
    from reconcile.diff import diff, summarize
    from reconcile.document import read_document

    before = Config()
    for version in apps.get_model("poolweb", "ConfigVersion").objects.order_by("number").iterator():
        after = read_document(version.document) or Config()
        version.summary = summarize(diff(before, after))
        version.save(update_fields=["summary"])
        before = after


class Migration(migrations.Migration):
    dependencies = [("poolweb", "0011_password_reset_ask")]

    operations = [
        migrations.AddField(model_name="configversion", name="summary", field=models.TextField(blank=True)),
        migrations.RunPython(summarise, migrations.RunPython.noop),
    ]
