"""Owner pages on a business's host."""
from django.urls import path

from channels import views

urlpatterns = [
    path("handoffs/", views.handoff_page, name="handoffs"),
    path("handoffs/<int:pk>/", views.handoff_action, name="handoff-action"),
    path("chat/whatsapp-preview/<str:turn_id>/", views.whatsapp_preview, name="chat-whatsapp-preview"),
]
