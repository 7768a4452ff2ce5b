"""The ``tidelake-kafka`` streaming source: Kafka topics read by a PySpark Python data source
through confluent-kafka (librdkafka), for clusters without Spark's own Kafka connector.

Rows are ``key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp
TIMESTAMP`` (the columns of Spark's Kafka source that :func:`tidelake.spark.cdc_sink` reads).

Offsets. A micro-batch's offset is ``{topic: {partition: next offset}}`` (partition numbers as
strings, JSON keys): the batch (start, end] is, per partition, the records at offsets
``start[p] <= o < end[p]``. Offsets live only in Spark's checkpoint; nothing is committed to a
Kafka consumer group. So a restarted query re-reads exactly the batch Spark had planned and not
yet committed, and a sink that is idempotent per (query, batch id) (``cdc_sink``,
``upsert_sink``) makes the pipeline exactly-once.

Options: ``bootstrap.servers`` and ``subscribe`` (comma-separated topics) are required;
``startingOffsets`` is ``latest`` (default, as Spark's Kafka source) or ``earliest`` (a
partition added to a topic later is always read from offset 0); ``maxOffsetsPerTrigger``
bounds a micro-batch (shared fairly between partitions); ``pollTimeoutMs`` (default 60000) is
how long a task waits for records the batch planned; options ``kafka.<name>`` are given to the
consumer as ``<name>`` (security settings and the like). ``Trigger.AvailableNow`` stops at the
offsets seen when the query started. Records the broker no longer has (retention) fail the batch
with a clear error instead of being skipped. The end of a batch is the partition's high
watermark: with transactional producers a task waits for open transactions to end
(``read_committed``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ..exceptions import InvalidArgumentError, StorageError, UnsupportedError
from . import io

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["KafkaDataSource", "SCHEMA"]

SCHEMA = "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp"
ARROW_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                          ("partition", pa.int32()), ("offset", pa.int64()),
                          ("timestamp", pa.timestamp("us", tz="UTC"))])
STARTS = ("latest", "earliest")
BATCH_ROWS = 10_000
"""Rows per Arrow batch a task yields."""

Offsets = dict[str, dict[str, int]]


def _client_config(options: dict[str, str]) -> dict[str, Any]:
    servers = options.get("bootstrap.servers") or options.get("kafka.bootstrap.servers")
    if not servers:
        raise InvalidArgumentError("the tidelake-kafka source needs option bootstrap.servers")
    config: dict[str, Any] = {k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.")}
    config.update({"bootstrap.servers": servers, "group.id": config.get("group.id", "tidelake-kafka"),
                   "enable.auto.commit": False, "isolation.level": "read_committed"})
    return config


def _consumer(config: dict[str, Any]) -> Any:
    try:
        from confluent_kafka import Consumer
    except ImportError as e:
        raise UnsupportedError(f"the tidelake-kafka source needs confluent-kafka ({e}): pip install confluent-kafka"
                               ) from e
    return Consumer(config)


class KafkaPartition(InputPartition):
    """Records ``start <= offset < end`` of one topic partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def fair_share(available: dict[tuple[str, str], int], budget: int) -> dict[tuple[str, str], int]:
    """How many of each partition's ``available`` records a batch of at most ``budget`` takes:
    the smallest backlogs are taken whole, the rest split evenly (at least one record overall)."""
    budget = max(1, budget)
    take: dict[tuple[str, str], int] = {}
    pending = sorted(available, key=lambda p: available[p])
    for i, part in enumerate(pending):
        take[part] = min(available[part], budget // (len(pending) - i))
        budget -= take[part]
    return take


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader; see the module docs. The driver-side instance keeps one consumer for
    metadata; the copies Spark pickles for tasks carry only options."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = _client_config(options)
        topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
        if not topics:
            raise InvalidArgumentError("the tidelake-kafka source needs option subscribe (comma-separated topics)")
        self.topics = topics
        self.start_mode = options.get("startingoffsets", "latest")
        if self.start_mode not in STARTS:
            raise InvalidArgumentError(f"option startingOffsets must be one of {', '.join(STARTS)}, "
                                       f"got {self.start_mode!r}")
        self.max_offsets = io.int_option(options, "maxoffsetspertrigger")
        if self.max_offsets is not None and self.max_offsets <= 0:
            raise InvalidArgumentError(f"option maxOffsetsPerTrigger must be positive, got {self.max_offsets}")
        self.poll_timeout = (io.int_option(options, "polltimeoutms") or 60_000) / 1000
        self.cap: Offsets | None = None
        self._metadata: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_metadata": None}

    def _client(self) -> Any:
        if self._metadata is None:
            self._metadata = _consumer({**self.config, "group.id": f"tidelake-kafka-{uuid.uuid4().hex}"})
        return self._metadata

    def _watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
        """(low, high) of every partition of the subscribed topics."""
        from confluent_kafka import KafkaException, TopicPartition

        client = self._client()
        timeout = self.poll_timeout
        try:
            topics = client.list_topics(timeout=timeout).topics
        except KafkaException as e:
            raise StorageError(f"tidelake-kafka could not reach {self.config['bootstrap.servers']}: {e}") from e
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for topic in self.topics:
            meta = topics.get(topic)
            if meta is None or meta.error is not None:
                servers = self.config["bootstrap.servers"]
                raise InvalidArgumentError(f"Kafka topic {topic!r} does not exist on {servers}")
            out[topic] = {str(p): client.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                          for p in sorted(meta.partitions)}
        return out

    def initialOffset(self) -> Offsets:
        marks = self._watermarks()
        pick = 0 if self.start_mode == "earliest" else 1
        return {t: {p: lh[pick] for p, lh in parts.items()} for t, parts in marks.items()}

    def prepareForTriggerAvailableNow(self) -> None:
        self.cap = {t: {p: lh[1] for p, lh in parts.items()} for t, parts in self._watermarks().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_offsets is None else ReadMaxRows(self.max_offsets)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        ends: Offsets = {}
        available: dict[tuple[str, str], int] = {}
        for topic, parts in self._watermarks().items():
            ends[topic] = {}
            for part, (_, high) in parts.items():
                if self.cap is not None:
                    high = min(high, self.cap.get(topic, {}).get(part, 0))
                begin = start.get(topic, {}).get(part, 0)  # a partition added later is read from its start
                ends[topic][part] = max(begin, high)
                available[(topic, part)] = ends[topic][part] - begin
        if isinstance(limit, ReadMaxRows):
            for (topic, part), n in fair_share(available, limit.max_rows).items():
                ends[topic][part] -= available[(topic, part)] - n
        return ends

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        out: list[InputPartition] = []
        for topic, parts in end.items():
            for part, stop in parts.items():
                begin = start.get(topic, {}).get(part, 0)
                if stop > begin:
                    out.append(KafkaPartition(topic, int(part), begin, stop))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaPartition)
        return read_records(self.config, partition, self.poll_timeout)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint."""

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()
            self._metadata = None


def read_records(config: dict[str, Any], part: KafkaPartition, poll_timeout: float) -> Iterator[pa.RecordBatch]:
    """The records ``part.start <= offset < part.end`` as Arrow batches of :data:`ARROW_SCHEMA`."""
    from confluent_kafka import KafkaException, TopicPartition

    consumer = _consumer(config)
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(part.topic, part.partition), timeout=poll_timeout)
        if low > part.start:
            raise StorageError(f"Kafka {part.topic}-{part.partition} no longer has offsets {part.start}..{low - 1} "
                               "(deleted by retention?): the batch cannot be read exactly")
        consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
        columns: list[list[Any]] = [[] for _ in ARROW_SCHEMA]
        position = part.start
        deadline = time.monotonic() + poll_timeout
        while position < part.end:
            records = consumer.consume(min(BATCH_ROWS, part.end - position), timeout=1.0)
            for record in records:
                if record.error() is not None:
                    raise KafkaException(record.error())
                if record.offset() >= part.end:
                    position = part.end
                    break
                _, millis = record.timestamp()
                for column, value in zip(columns, (record.key(), record.value(), part.topic, part.partition,
                                                   record.offset(), millis * 1000)):
                    column.append(value)
                position = record.offset() + 1
            if not records:  # transaction markers take offsets without records: ask where the consumer is
                position = max(position, consumer.position([TopicPartition(part.topic, part.partition)])[0].offset)
            else:
                deadline = time.monotonic() + poll_timeout
            if len(columns[0]) >= BATCH_ROWS or (position >= part.end and columns[0]):
                yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, ARROW_SCHEMA)],
                                                 schema=ARROW_SCHEMA)
                columns = [[] for _ in ARROW_SCHEMA]
            if position < part.end and time.monotonic() > deadline:
                raise StorageError(f"Kafka {part.topic}-{part.partition}: offsets {position}..{part.end - 1} were "
                                   f"planned but not received within pollTimeoutMs ({poll_timeout * 1000:.0f} ms)")
    finally:
        consumer.close()


class KafkaDataSource(DataSource):
    """The ``tidelake-kafka`` format (streaming reads only); registered by
    :func:`tidelake.spark.register_kafka`."""

    @classmethod
    def name(cls) -> str:
        return "tidelake-kafka"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(dict(self.options))
