"""Issue 23, rule 3: a policy's max_wait_seconds and the reason ReservingCapacity (R-49)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0024_service_accounts'),
    ]

    operations = [
        migrations.AddField(
            model_name='policy',
            name='max_wait_seconds',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='decisiontotal',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('ReservingCapacity', 'ReservingCapacity'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('BudgetSpent', 'BudgetSpent'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], max_length=32),
        ),
        migrations.AlterField(
            model_name='request',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('ReservingCapacity', 'ReservingCapacity'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('BudgetSpent', 'BudgetSpent'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], default='Submitted', max_length=32),
        ),
        migrations.AlterField(
            model_name='requestchange',
            name='reason',
            field=models.CharField(choices=[('ManagementDisabled', 'ManagementDisabled'), ('WaitingForQuota', 'WaitingForQuota'), ('WaitingForReservation', 'WaitingForReservation'), ('WaitingForPreemption', 'WaitingForPreemption'), ('WaitingForProtectedVictims', 'WaitingForProtectedVictims'), ('ReservingCapacity', 'ReservingCapacity'), ('BlockedByHigherPriority', 'BlockedByHigherPriority'), ('WaitingForCapacity', 'WaitingForCapacity'), ('NoConnectedPool', 'NoConnectedPool'), ('ExceedsPoolCapacity', 'ExceedsPoolCapacity'), ('ResourceNotInPool', 'ResourceNotInPool'), ('ExceedsLimit', 'ExceedsLimit'), ('ExceedsReserved', 'ExceedsReserved'), ('BudgetSpent', 'BudgetSpent'), ('PreemptedByPriority', 'PreemptedByPriority'), ('Reclaimed', 'Reclaimed'), ('LeaseExpired', 'LeaseExpired'), ('TimeLimit', 'TimeLimit'), ('TimeLimitNear', 'TimeLimitNear'), ('CancelledByUser', 'CancelledByUser'), ('QueueRemoved', 'QueueRemoved'), ('Released', 'Released'), ('Submitted', 'Submitted'), ('Granted', 'Granted')], max_length=32),
        ),
    ]
