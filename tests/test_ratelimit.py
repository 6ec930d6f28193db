"""Rate limits: per tenant buckets in the shared cache, 429 with Retry-After."""
import pytest
from django.db import connection
from django.test import override_settings
from django_tenants.utils import schema_context

from ratiba.ratelimit import rate_limit_hit

pytestmark = pytest.mark.django_db


def test_the_limit_allows_exactly_n_then_refuses_with_a_retry_time(tenant):
    decisions = [rate_limit_hit(bucket="b", limit=3) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert 1 <= decisions[-1].retry_after <= 60


def test_buckets_of_two_tenants_are_separate(tenants):
    first, second = tenants
    with schema_context(first.schema_name):
        assert not [rate_limit_hit(bucket="same", limit=1) for _ in range(2)][-1].allowed
    with schema_context(second.schema_name):
        assert rate_limit_hit(bucket="same", limit=1).allowed


@override_settings(API_RATE_LIMIT_PER_IP_PER_MINUTE=2)
def test_an_address_flooding_the_api_gets_429_with_retry_after(api_client):
    client, headers = api_client
    statuses = [client.get("/api/v1/whoami/", **headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    response = client.get("/api/v1/whoami/", **headers)
    assert response.json()["error"]["code"] == "rate_limited"
    assert int(response["Retry-After"]) >= 1
    assert connection.schema_name == "test_tenant"
