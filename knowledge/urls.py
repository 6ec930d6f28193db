"""/api/v1/ routes of the authoring API: snippets, services, hours."""
from django.urls import path

from knowledge import api

urlpatterns = [
    path("snippets/", api.SnippetListApi.as_view(), name="snippets"),
    path("snippets/<slug:key>/", api.SnippetDetailApi.as_view(), name="snippet"),
    path("snippets/<slug:key>/versions/", api.SnippetVersionListApi.as_view(), name="snippet-versions"),
    path("snippets/<slug:key>/versions/<int:number>/activate/", api.SnippetVersionActivateApi.as_view(),
         name="snippet-version-activate"),
    path("services/", api.ServiceListApi.as_view(), name="services"),
    path("services/<int:service_id>/", api.ServiceDetailApi.as_view(), name="service"),
    path("hours/", api.HoursApi.as_view(), name="hours"),
    path("hours/weekly/", api.WeeklyHoursApi.as_view(), name="hours-weekly"),
    path("hours/special/<str:date>/", api.SpecialDayApi.as_view(), name="hours-special"),
]
