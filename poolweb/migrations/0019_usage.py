from django.db import migrations, models
import django.utils.timezone


class Migration(migrations.Migration):

    dependencies = [
        ('poolweb', '0018_audit'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageDay',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('part', models.CharField(max_length=16)),
                ('method', models.PositiveSmallIntegerField()),
                ('data', models.JSONField()),
                ('computed_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('day', 'part'), name='one_usage_day_part')],
            },
        ),
    ]
