"""Registers the ``tuned_lens_interop`` marker (the suite runs with ``bash .ci/tuned_lens.sh``)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tuned_lens_interop: against the real tuned-lens 0.2.0 package in its own venv "
        "(TUNED_LENS_PYTHON; run by .ci/tuned_lens.sh)",
    )
