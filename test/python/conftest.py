"""pytest configuration for test/python: the `cuda` marker, which ctest's
"python: module" leaves out (-m "not cuda") and "python: module on CUDA"
selects (through run_pytest.py, which reports a run whose every test was
skipped as a skip)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device and a torch with CUDA")
