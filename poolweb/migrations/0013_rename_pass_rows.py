"""Names that say what the rows are (decision 115): ``LiveChange`` is a change not yet announced,
and ``PassWanted`` the flag raised while a pass task is queued. Tables and the field are renamed;
no row changes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("poolweb", "0012_version_summary")]

    operations = [
        migrations.RenameModel("LiveChange", "UnannouncedChange"),
        migrations.RenameModel("PassWanted", "PassTaskFlag"),
        migrations.RenameField("PassTaskFlag", "wanted", "raised"),
    ]
