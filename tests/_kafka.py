"""The real Kafka broker of the tests (examples/kafka_broker.py: Apache Kafka 4.1.1 from Maven
Central, KRaft mode, 127.0.0.1): the ``kafka`` fixture starts one per test session under the
session's tmp dir, logs its start time and port (``pytest -s``, or the captured log of a failing
test), and stops it at the end.

Not a test module (leading underscore). The Python side is confluent-kafka (librdkafka).
"""

from __future__ import annotations

import logging
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
log = logging.getLogger("tidelake.tests.kafka")


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: Any) -> Iterator[Any]:
    pytest.importorskip("confluent_kafka")
    from kafka_broker import KAFKA_VERSION, KafkaBroker

    workdir = tmp_path_factory.mktemp("kafka")
    broker = KafkaBroker(workdir)
    log.warning("Kafka %s broker on %s started in %.1f s (log dir %s)", KAFKA_VERSION, broker.bootstrap,
                broker.start_seconds, workdir)
    yield broker
    broker.stop()
