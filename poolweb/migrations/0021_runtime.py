"""Issue 23, time in the rules: the order of a pass's grants (R-47), a policy's min_runtime_seconds (R-48), run limits (R-52, R-53)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0016_totals'),
    ]

    operations = [
        migrations.AddField(
            model_name='policy',
            name='max_runtime_seconds',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='policy',
            name='min_runtime_seconds',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='policy',
            name='on_time_limit',
            field=models.CharField(default='end', max_length=16),
        ),
        migrations.AddField(
            model_name='policy',
            name='require_max_runtime',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='request',
            name='grant_order',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='request',
            name='max_runtime_seconds',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='request',
            name='time_limit_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='decisiontotal',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], max_length=32),
        ),
        migrations.AlterField(
            model_name='request',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], default='Submitted', max_length=32),
        ),
        migrations.AlterField(
            model_name='requestchange',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], max_length=32),
        ),
    ]
