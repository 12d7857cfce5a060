"""Django's admin: the record of reconcile passes, read-only, for whoever runs the service."""

from django.contrib import admin

from poolweb.models import PassRecord


@admin.register(PassRecord)
class PassRecordAdmin(admin.ModelAdmin):
    list_display = ("started_at", "trigger", "duration_ms", "pending", "live", "grants", "preemptions",
                    "evictions", "expiries", "rejections", "cancellations", "conflicts")
    list_filter = ("trigger",)
    date_hierarchy = "started_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
