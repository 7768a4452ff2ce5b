"""Auto-registration of the ``tidelake`` Spark data source.

PySpark (4.0+) looks for top-level modules named ``pyspark_*`` with a ``DefaultSource``
attribute and registers it, so ``spark.read.format("tidelake")`` works without calling
``tidelake.spark.register(spark)`` once this wheel is installed where Spark's Python workers run.
"""

from tidelake.spark.source import TidelakeDataSource as DefaultSource

__all__ = ["DefaultSource"]
