"""The package's tests run against the toolmend package installed in the running interpreter
(a fresh venv in `make test-python`), never against the source tree."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root():
    return ROOT


def pytest_report_header(config):
    import toolmend

    return f"toolmend {toolmend.__version__} from {os.path.dirname(toolmend.__file__)}"
