"""Two lenses compared cell by cell.

- ``compare``: ``LensComparison``, ``compare(a, b)`` (two results) and ``compare_lenses`` (two
  runs that share one trace per side; the pair reduction is the step's ``reduce_pair``).
- ``alignment``: how the layers and positions of two results pair up.
"""
