"""The one widget base: every widget's front end by name, its trait errors, and its HTML export.

Each widget of the package (the lens heatmap, the lens diff, the data-set chart) is a
:class:`MuranoWidget`: a thin anywidget class whose traits are typed and validated, whose front
end is a bundle in ``murano_widgets/static/`` (``front_end.js`` and ``front_end.css``), and
which exports itself as one self-contained HTML page through :mod:`murano_widgets.export`
(``save_html`` / ``to_html``). A subclass says only what is its own:

- its assets, ``_esm = asset("name.js")`` and ``_css = asset("name.css")`` (class attributes,
  where anywidget reads them);
- :meth:`MuranoWidget._standalone_state`: its state as the front end's ``renderStandalone``
  takes it (binary sections as base64 text, through :func:`murano_widgets.export.base64_sections`);
- :meth:`MuranoWidget._default_title` and ``_export_what`` (the page's title and its
  ``<noscript>`` line).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import anywidget
import traitlets

from murano_widgets._checks import check_str

__all__ = ["MuranoWidget", "WidgetValueError", "asset"]


class WidgetValueError(traitlets.TraitError, ValueError):
    """A widget trait was set to a value out of its range."""


def asset(name: str) -> Path:
    """The built front-end file ``name`` in ``murano_widgets/static/``.

    The files there are built from ``js/src`` by ``cd js && npm run build`` and committed, so a
    source install needs no node; CI fails when they differ from a fresh build.

    Raises:
        FileNotFoundError: If the file is not there (a source tree whose bundle was removed).
    """
    packaged = resources.files("murano_widgets") / "static" / name
    if not packaged.is_file():
        raise FileNotFoundError(
            f"the widget's front end murano_widgets/static/{name} is missing: "
            "build it with `cd js && npm ci && npm run build`"
        )
    return Path(str(packaged))


class MuranoWidget(anywidget.AnyWidget):
    """The base of every widget of the package: the HTML export, written once.

    Subclasses set ``_esm`` and ``_css`` (with :func:`asset`), ``_export_what``, and implement
    :meth:`_standalone_state` and :meth:`_default_title`.
    """

    _export_what: ClassVar[str] = "widget"

    def save_html(self, path: str | Path, *, title: str | None = None) -> Path:
        """Writes a self-contained HTML file that renders this widget with no kernel.

        The file inlines the ES module, the stylesheet and every payload section, with the
        view's current state; it loads nothing from the network. It is written all at once:
        an interrupted save leaves the old file whole and nothing beside it.

        Args:
            path: The file to write (its folder must exist).
            title: The page's title (default: what the widget shows, e.g. the model and lens).

        Returns:
            The path written.

        Raises:
            TypeError: If ``path`` is not a file name, or ``title`` is not a string or ``None``.
            ValueError: If ``title`` holds a lone surrogate (it cannot be written as UTF-8).
            IsADirectoryError: If ``path`` is a folder.
            FileNotFoundError: If its folder does not exist.
        """
        from murano_widgets.export import write_html

        return write_html(path, self.to_html(title=title))

    def to_html(self, *, title: str | None = None) -> str:
        """The self-contained HTML page of :meth:`save_html`, as a string.

        Raises:
            TypeError, ValueError: As :meth:`save_html`, for a bad ``title``.
        """
        from murano_widgets.export import standalone_page

        title = check_str("title", title, optional=True, empty=True)
        return standalone_page(
            self._standalone_state(),
            esm=str(self._esm),
            css=str(self._css),
            title=self._default_title() if title is None else title,
            what=self._export_what,
        )

    def _standalone_state(self) -> dict[str, Any]:
        """The widget's state as its front end's ``renderStandalone(el, state)`` takes it."""
        raise NotImplementedError

    def _default_title(self) -> str:
        """The exported page's title when none is given."""
        raise NotImplementedError


def selected_cell(selected: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of a pinned cell an exported page needs to pin it again (the front end fills in
    the rest from the payload)."""
    if not selected:
        return None
    return {key: selected[key] for key in ("prompt", "layer_index", "position")}
