import pytest


@pytest.fixture
def net_config():
    return {"categories": (3, 4), "num_continuous": 2}
