"""Submitting for another user (decision 131): the ``submit_for_others`` permission, the request's
``submitted_by``, and Idempotency-Keys scoped to the submitting account: the owner's constraint now
covers only the requests their owner submitted, a second one the keys of those submitted for others.
No existing row changes: every request so far was submitted by its owner."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0014_management_changed_and_display_names'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='request',
            options={'ordering': ['id'], 'permissions': [('submit_for_others', 'Can submit requests owned by another user')]},
        ),
        migrations.RemoveConstraint(
            model_name='request',
            name='one_request_per_idempotency_key',
        ),
        migrations.AddField(
            model_name='request',
            name='submitted_by',
            field=models.CharField(blank=True, max_length=150, null=True),
        ),
        migrations.AddConstraint(
            model_name='request',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False), ('submitted_by__isnull', True)), fields=('owner', 'idempotency_key'), name='one_request_per_idempotency_key'),
        ),
        migrations.AddConstraint(
            model_name='request',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False), ('submitted_by__isnull', False)), fields=('submitted_by', 'idempotency_key'), name='one_request_per_submitter_key'),
        ),
    ]
