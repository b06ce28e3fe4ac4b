from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[4] / "tests" / "data" / "topology"


@pytest.fixture
def data():
    return DATA
