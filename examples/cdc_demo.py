"""tidelake CDC demo (``make demo``): a Debezium change stream synced into a catalog.

1. a source MySQL-like database ``shop`` with three tables (customers, products, orders)
   changes over six batches: inserts, updates, deletes, and ``orders`` gains a column in
   batch 4; every change is a Debezium JSON event (schema envelope, Kafka key), and each batch
   is also kept in a JSON-lines file;
2. a real Kafka broker (Apache Kafka 4.1.1 from Maven Central in KRaft mode on 127.0.0.1,
   examples/kafka_broker.py; its start takes about 8 s on 2 idle cores) gets the events on the
   topic ``dbserver1.shop``, as Debezium's connector would send them;
3. a consumer reads the topic batch by batch and each batch is synced with ``tidelake.cdc.sync``
   into the catalog ``ods`` (tables created on first sight, primary keys from the event keys, the
   added column added, one commit per table per batch, the batch number as commit identifier);
4. a batch is read again from its Kafka offsets and replayed (as after a crash): nothing is
   committed twice;
5. a malformed event goes to a dead-letter table instead of being dropped;
6. every table is checked against the source's rows, and read back with pypaimon.

Spark reads the same topics with ``tidelake.spark.register_kafka`` + ``cdc_sink``.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import random
import shutil
import sys

from confluent_kafka import Consumer, TopicPartition

import tidelake
from tidelake import cdc

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cdc_stream import Column, DebeziumSource, decimal_column, micro_timestamp_column, money  # noqa: E402
from kafka_broker import KAFKA_VERSION, KafkaBroker  # noqa: E402

WAREHOUSE = HERE.parent / "demo-warehouse-cdc"
STREAM = WAREHOUSE / "_topic"
TOPIC = "dbserver1.shop"
TABLES = ("customers", "products", "orders")


def make_stream(rng: random.Random) -> DebeziumSource:
    src = DebeziumSource("shop")
    src.create_table("customers", [Column("id", "int64"), Column("name", "string"),
                                   Column("city", "string")])
    src.create_table("products", [Column("id", "int64"), Column("title", "string"), decimal_column("price", 10, 2)])
    src.create_table("orders", [Column("id", "int64"), Column("customer_id", "int64"), Column("product_id", "int64"),
                                Column("qty", "int32"), Column("status", "string"),
                                micro_timestamp_column("placed_at")])
    STREAM.mkdir(parents=True)
    t0 = dt.datetime(2026, 11, 26, 9, 0)
    next_order = 1
    for batch in range(1, 7):
        events = []
        if batch == 1:
            events += [src.insert("customers", {"id": i, "name": f"customer {i}",
                                                "city": rng.choice(["Oslo", "Lyon"])}) for i in range(1, 21)]
            events += [src.insert("products", {"id": i, "title": f"product {i}",
                                               "price": money(rng.randrange(100, 9999))}) for i in range(1, 11)]
        if batch == 4:  # ALTER TABLE orders ADD COLUMN coupon VARCHAR(16)
            src.add_column("orders", Column("coupon", "string"))
        for _ in range(40):
            orders = src.tables["orders"].rows
            roll = rng.random()
            if roll < 0.5 or not orders:
                row = {"id": next_order, "customer_id": rng.randrange(1, 21), "product_id": rng.randrange(1, 11),
                       "qty": rng.randrange(1, 5), "status": "new",
                       "placed_at": t0 + dt.timedelta(minutes=batch * 60 + next_order)}
                if batch >= 4:
                    row["coupon"] = rng.choice([None, "WINTER", "VIP"])
                events.append(src.insert("orders", row))
                next_order += 1
            elif roll < 0.85:
                status = rng.choice(["paid", "sent"])
                events.append(src.update("orders", rng.choice(sorted(orders)), {"status": status}))
            else:
                events.append(src.delete("orders", rng.choice(sorted(orders))))
        events.append(src.update("products", rng.randrange(1, 11), {"price": money(rng.randrange(100, 9999))}))
        if batch == 5:
            events.append(src.delete("customers", 20))
        with open(STREAM / f"batch-{batch}.jsonl", "w") as f:
            for key, value in events:
                f.write(json.dumps({"key": key.decode(), "value": value.decode()}) + "\n")
    return src


def read_batch(path: pathlib.Path) -> list[tuple[str | None, str]]:
    return [(r["key"], r["value"]) for r in map(json.loads, path.read_text().splitlines())]


def consume(bootstrap: str, start: int, count: int) -> list[tuple[bytes | None, bytes]]:
    """``count`` messages of the topic (one partition) from offset ``start``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cdc-demo", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, start)])
    out: list[tuple[bytes | None, bytes]] = []
    try:
        while len(out) < count:
            for message in consumer.consume(count - len(out), timeout=10):
                if message.error() is not None:
                    raise RuntimeError(f"Kafka: {message.error()}")
                value = message.value()
                assert isinstance(value, bytes)
                key = message.key()
                out.append((key if isinstance(key, bytes) else None, value))
    finally:
        consumer.close()
    return out


def main() -> int:
    rng = random.Random(26)
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
    src = make_stream(rng)
    catalog = tidelake.Catalog(WAREHOUSE)
    files = sorted(STREAM.glob("batch-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
    broker = KafkaBroker(WAREHOUSE / "_kafka")
    try:
        print(f"== CDC: Kafka {KAFKA_VERSION} broker on {broker.bootstrap} (started in {broker.start_seconds:.1f} s)")
        broker.create_topic(TOPIC)
        offsets = [0]
        for path in files:
            sent = [(k.encode() if k else None, v.encode()) for k, v in read_batch(path)]
            offsets.append(offsets[-1] + broker.produce(TOPIC, sent))
        print(f"  {offsets[-1]} Debezium events on topic {TOPIC}, {len(files)} batches")
        for number in range(1, len(files) + 1):
            messages = consume(broker.bootstrap, offsets[number - 1], offsets[number] - offsets[number - 1])
            if number == 6:  # a corrupted event in the topic
                messages.insert(3, (None, b'{"payload": {"op": "c", "after": {"id": 1}}'))
            result = cdc.sync(catalog, messages, "debezium-json", table_mapping="ods.{table}", bucket=2,
                              commit_identifier=number, commit_user="cdc-demo", on_error="dead_letter",
                              dead_letter_table="ods.dead_letters")
            created = f", created {result.created}" if result.created else ""
            evolved = f", evolved {result.evolved}" if result.evolved else ""
            print(f"  batch {number}: {len(messages)} events -> rows {result.rows}{created}{evolved}")
        again = consume(broker.bootstrap, offsets[2], offsets[3] - offsets[2])
    finally:
        broker.stop()
    replay = cdc.sync(catalog, again, "debezium-json", table_mapping="ods.{table}",
                      commit_identifier=3, commit_user="cdc-demo")
    assert all(s is None for s in replay.snapshots.values()), replay
    print("  batch 3 read again from its offsets and replayed: already committed on every table, nothing written")

    dead = catalog.get_table("ods.dead_letters").to_arrow()
    assert dead.num_rows == 1, dead
    print(f"  dead letters: {dead.num_rows} ({dead.column('error')[0].as_py()})")

    for name in TABLES:
        table = catalog.get_table(f"ods.{name}")
        got = {r["id"]: r for r in table.to_arrow().to_pylist()}
        expected = {k: {c: v.get(c) for c in table.schema.names} for k, v in src.model(name).items()}
        assert got == expected, f"ods.{name} differs from the source"
        print(f"  ods.{name}: {len(got)} rows, columns {table.schema.names}, "
              f"{len(table.snapshots())} snapshots == source")
    try:
        from pypaimon import CatalogFactory
    except ImportError:
        return 0
    pp = CatalogFactory.create({"warehouse": str(WAREHOUSE)}).get_table("ods.orders")
    rb = pp.new_read_builder()
    n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
    assert n == len(src.model("orders")), n
    print(f"  pypaimon reads ods.orders: {n} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
