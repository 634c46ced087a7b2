"""Token groups in the data-set widget (:class:`~murano_widgets.LensDatasetWidget`): the chart's
metrics for a data set made with groups.

Each group is a chart metric of its own (``"group:<name>"``: its mean probability per layer
over each answer set's prompts, with the interval of :meth:`LensDataset.summary`), so that its
curve, menu entry and readout row come from the chart's usual path; and ``"groups"`` draws
every group at once, one curve per group (and lens), with their intervals: Wendler's figure
(:func:`~murano_widgets.plot_groups`) in the widget.
"""

from __future__ import annotations

from murano_widgets.metrics import Metric

__all__ = ["ALL_GROUPS", "group_metrics"]

#: The chart's metric that draws every group at once (the front end's ``GROUPS_METRIC``).
ALL_GROUPS = "groups"


def group_metric(name: str) -> Metric:
    """The chart's metric of one token group: ``summary()``'s ``group_<name>_*`` columns."""
    return Metric(
        f"group:{name}",
        f"group_{name}_mean",
        f"Probability of the group “{name}” (mean)",
        "probability",
        description=f"The summed probability of the tokens of group “{name}” at the prompts' "
        "last position, averaged over the prompts.",
        view="dataset",
        short=f"group {name}",
        interval=(f"group_{name}_ci_low", f"group_{name}_ci_high"),
    )


def group_metrics(names: list[str]) -> tuple[list[Metric], list[Metric]]:
    """``(each group's metric, [the all-groups metric])`` for a data set's groups (two empty
    lists without groups). The all-groups metric has no summary columns of its own: the front
    end draws it from the groups' columns."""
    if not names:
        return [], []
    every = Metric(
        ALL_GROUPS,
        "group_mean",
        "Token groups (mean probability, Wendler's figure)",
        "probability",
        description="Every token group's mean probability per layer, a curve each, with its "
        "interval.",
        view="dataset",
        short="groups",
        interval=("group_ci_low", "group_ci_high"),
    )
    return [group_metric(name) for name in names], [every]
