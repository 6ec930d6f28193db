"""Password reset by email for admin users (Django's auth views and the admin's templates), on every host.

Mounted before the admin: its login page offers "Forgotten your login credentials?" once
`admin_password_reset` exists. Users are looked up in the host's own schema, so a reset never crosses
businesses.
"""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path


class _AdminBranded:
    """The admin's header and title on Django's auth pages (read per request: the admin sets them at start)."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "site_header": admin.site.site_header,
                "site_title": admin.site.site_title}


class PasswordResetView(_AdminBranded, auth_views.PasswordResetView):
    pass


class PasswordResetDoneView(_AdminBranded, auth_views.PasswordResetDoneView):
    pass


class PasswordResetConfirmView(_AdminBranded, auth_views.PasswordResetConfirmView):
    pass


class PasswordResetCompleteView(_AdminBranded, auth_views.PasswordResetCompleteView):
    pass


urlpatterns = [
    path("admin/password_reset/", PasswordResetView.as_view(), name="admin_password_reset"),
    path("admin/password_reset/done/", PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("admin/reset/<uidb64>/<token>/", PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("admin/reset/done/", PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]
