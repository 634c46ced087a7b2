"""Registers the ``transformer_lens_interop`` marker (the suite runs with
``bash .ci/transformer_lens.sh``)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "transformer_lens_interop: against the real TransformerLens 4.3.0 in its own venv "
        "(TRANSFORMER_LENS_PYTHON; run by .ci/transformer_lens.sh)",
    )
