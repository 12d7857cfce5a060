"""Django's admin, for whoever runs the service: what happened (passes, requests, configuration
versions, the audit log) read-only — decisions are the reconciler's and the API's — API tokens, which an
admin may revoke (delete: the token stops working at once), and failed sign-ins, which an admin
may delete to end a lockout; the directory's mapping, and which users and groups it manages;
service accounts, shown only (``manage.py service_account`` creates and revokes them)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from poolweb.models import (
    ApiToken, AuditEntry, ConfigVersion, DirectoryAccount, DirectoryGroup, PassRecord, Policy, Pool, Profile, Request,
    ServiceAccount, SignInFailure,
)
from poolweb.selectors.directory import managed_by_label
from poolweb.selectors.service_accounts import rights_of
from poolweb.services.tokens import TokenNotFound, token_revoke


class ShownOnly:
    """Shown, never added or changed here: the services write these rows."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ReadOnly(ShownOnly, admin.ModelAdmin):
    """Shown, never changed here."""

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(PassRecord)
class PassRecordAdmin(ReadOnly):
    list_display = ("started_at", "trigger", "duration_ms", "pending", "live", "grants", "preemptions",
                    "evictions", "expiries", "rejections", "cancellations", "conflicts")
    list_filter = ("trigger",)
    date_hierarchy = "started_at"

    def has_delete_permission(self, request, obj=None) -> bool:
        return True  # old records may go; the periodic pass prunes them too


@admin.register(Request)
class RequestAdmin(ReadOnly):
    list_display = ("id", "name", "owner", "submitted_by", "policy", "profile", "state", "reason", "pool", "position",
                    "submitted_at", "finished_at")
    list_filter = ("state", "policy", "pool", "owner")
    search_fields = ("=id", "name", "owner__username")
    date_hierarchy = "submitted_at"
    list_select_related = ("owner",)
    show_full_result_count = False  # a count of a large table on every page is slow on PostgreSQL


class InVersion(ShownOnly, admin.TabularInline):
    """A version's rows, read-only, beside its document."""

    extra = 0
    can_delete = False
    show_change_link = False


class PoolInline(InVersion):
    model = Pool
    fields = ("name", "description", "capacity")


class ProfileInline(InVersion):
    model = Profile
    fields = ("name", "description", "resources", "dynamic")


class PolicyInline(InVersion):
    model = Policy
    fields = ("name", "description", "group_name", "priority")


@admin.register(ConfigVersion)
class ConfigVersionAdmin(ReadOnly):
    list_display = ("number", "author_label", "created_at", "comment")
    search_fields = ("=number", "comment", "author__username", "author_name")
    fields = ("number", "author_label", "created_at", "comment", "document")
    readonly_fields = ("author_label",)
    inlines = (PoolInline, ProfileInline, PolicyInline)

    @admin.display(description="author")
    def author_label(self, version: ConfigVersion) -> str:
        return version.author_label or "—"


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnly):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at")
    list_filter = ("user",)
    search_fields = ("name", "user__username", "prefix")
    list_select_related = ("user",)
    fields = ("name", "user", "prefix", "created_at", "last_used_at")
    actions = ["delete_selected"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return True  # revoking a token is deleting it

    def get_actions(self, request):
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            function, name, _ = actions["delete_selected"]
            actions["delete_selected"] = (function, name, "Revoke the selected tokens")
        return actions

    def delete_model(self, request, obj: ApiToken) -> None:
        self.delete_queryset(request, [obj])

    def delete_queryset(self, request, queryset) -> None:
        """Revoked as everywhere else, so each revocation is audited (decision 154)."""
        for token in queryset:
            try:
                token_revoke(token_id=token.pk, user=request.user)
            except TokenNotFound:
                pass  # revoked meanwhile: what was asked for is done


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnly):
    """The audit log (decision 154): shown only; an entry is never changed or deleted."""

    list_display = ("at", "actor", "origin", "action", "target", "before", "after")
    list_filter = ("action",)
    search_fields = ("=actor", "=target", "=origin")
    date_hierarchy = "at"
    ordering = ("-id",)
    show_full_result_count = False


@admin.register(SignInFailure)
class SignInFailureAdmin(ReadOnly):
    """The failures the sign-in throttle counts (services/signin.py); deleting an account's or an
    address's ends its lockout, as ``manage.py clear_sign_in_failures`` does."""

    list_display = ("at", "username", "address")
    search_fields = ("=username", "=address")
    date_hierarchy = "at"

    def has_delete_permission(self, request, obj=None) -> bool:
        return True


# --- the directory (docs/sign-in.md) ----------------------------------------------------------

admin.site.unregister(User)
admin.site.unregister(Group)  # says when the directory is down, as the sign-in page does


@admin.register(DirectoryGroup)
class DirectoryGroupAdmin(admin.ModelAdmin):
    """The mapping the admin controls: which directory groups are which Poolweb groups, and which
    make an administrator. It applies at each member's next sign-in or re-check."""

    list_display = ("name", "group", "makes_admin")
    list_filter = ("makes_admin",)
    search_fields = ("name", "group__name")
    autocomplete_fields = ("group",)


@admin.register(DirectoryAccount)
class DirectoryAccountAdmin(ReadOnly):
    """Users the directory manages, with when it last answered for them. Deleting one hands the
    user back to Poolweb (they then need a password set here to sign in)."""

    list_display = ("user", "source", "subject", "checked_at")
    list_filter = ("source",)
    search_fields = ("user__username", "subject")
    list_select_related = ("user",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return True


class DirectoryMarked:
    @admin.display(description="managed by")
    def managed_by(self, row) -> str:
        return managed_by_label(row)


class ServiceAccountFilter(admin.SimpleListFilter):
    title = "service account"
    parameter_name = "service_account"

    def lookups(self, request, model_admin):
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(service_account__isnull=self.value() == "no")
        return queryset


@admin.register(User)
class PoolwebUserAdmin(DirectoryMarked, UserAdmin):
    list_display = (*UserAdmin.list_display, "managed_by", "is_service_account")
    list_filter = (*UserAdmin.list_filter, "directory_account__source", ServiceAccountFilter)
    list_select_related = ("directory_account", "service_account")

    @admin.display(description="service account", boolean=True)
    def is_service_account(self, user: User) -> bool:
        return hasattr(user, "service_account")


# --- service accounts (docs/sign-in.md) -------------------------------------------------------

@admin.register(ServiceAccount)
class ServiceAccountAdmin(ReadOnly):
    """Accounts of programs (decision 190): shown with their rights and tokens; created, given
    tokens and revoked by ``manage.py service_account``, each act audited."""

    list_display = ("user", "description", "active", "rights", "tokens", "created_by", "created_at", "revoked_at")
    list_filter = ("user__is_active",)
    search_fields = ("user__username", "description")
    list_select_related = ("user",)
    fields = list_display

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("user__api_tokens")

    @admin.display(description="active", boolean=True)
    def active(self, row: ServiceAccount) -> bool:
        return row.user.is_active

    @admin.display(description="rights")
    def rights(self, row: ServiceAccount) -> str:
        return ", ".join(rights_of(row.user)) or "—"

    @admin.display(description="tokens")
    def tokens(self, row: ServiceAccount) -> str:
        shown = [f"{token.prefix}… (last used {token.last_used_at:%Y-%m-%d %H:%M} UTC)" if token.last_used_at
                 else f"{token.prefix}… (never used)" for token in row.user.api_tokens.all()]
        return "; ".join(shown) or "—"


@admin.register(Group)
class PoolwebGroupAdmin(DirectoryMarked, GroupAdmin):
    list_display = ("name", "managed_by")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("directory_groups")
