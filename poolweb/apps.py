from django.apps import AppConfig


class PoolwebConfig(AppConfig):
    name = "poolweb"
    default_auto_field = "django.db.models.BigAutoField"
