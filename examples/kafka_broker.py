"""A local Apache Kafka broker for the CDC demo and the tests: Kafka 4.1.1
(``org.apache.kafka:kafka_2.13`` from Maven Central; ``make kafka`` writes its classpath from
interop/kafka/pom.xml) in KRaft mode, one node that is both broker and controller, listening on
127.0.0.1 on free ports, its log dir under a directory of the caller's. Needs ``java`` and
``mvn`` (as the Java oracle does) and confluent-kafka (requirements-dev.txt).
"""

from __future__ import annotations

import base64
import pathlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

REPO = pathlib.Path(__file__).resolve().parents[1]
CLASSPATH = REPO / "interop" / "kafka" / "target" / "classpath.txt"
KAFKA_VERSION = "4.1.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _server_properties(log_dir: pathlib.Path, port: int, controller_port: int) -> str:
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={log_dir}",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "",
    ])


class KafkaBroker:
    """One broker JVM, started by the constructor (``start_seconds`` long); :meth:`stop` ends it
    (and only it)."""

    def __init__(self, workdir: pathlib.Path) -> None:
        subprocess.run(["make", "-s", "-C", str(REPO), "kafka"], check=True)
        classpath = CLASSPATH.read_text().strip()
        workdir.mkdir(parents=True, exist_ok=True)
        self.port, controller_port = _free_port(), _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        config = workdir / "server.properties"
        config.write_text(_server_properties(workdir / "logs", self.port, controller_port))
        cluster_id = "t" + base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()[1:]  # no leading "-"
        java = ["java", "-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", "-cp", classpath]
        started = time.monotonic()
        formatted = subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)],
                                   capture_output=True, text=True)
        if formatted.returncode != 0:
            raise RuntimeError(f"formatting the Kafka log dir failed: {formatted.stdout}{formatted.stderr}")
        self._log = (workdir / "broker.log").open("wb")
        self._proc = subprocess.Popen([*java, "kafka.Kafka", str(config)], stdout=self._log,
                                      stderr=subprocess.STDOUT)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started

    def _wait_ready(self, started: float, timeout: float = 90.0) -> None:
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the Kafka broker did not start{self.diagnosis()}")
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"the Kafka broker did not listen within {timeout} s; see {self._log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=timeout)

    def create_topic(self, name: str, partitions: int = 1) -> str:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)]).values():
            future.result(30)
        return name

    def produce(self, topic: str, messages: Iterable[tuple[bytes | None, bytes]]) -> int:
        """Send (key, value) messages, waiting until the broker acknowledged all; returns their count."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                             "log_level": 3})  # no warnings while the broker loads its coordinators
        failures: list[str] = []
        count = 0

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failures.append(str(err))

        for key, value in messages:
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
        if producer.flush(60) or failures:
            raise RuntimeError(f"Kafka produce failed: {failures[:3] or 'flush timed out'}{self.diagnosis()}")
        return count

    def diagnosis(self) -> str:
        """Empty while the broker runs; else its exit status and the end of its log."""
        if self._proc.poll() is None:
            return ""
        self._log.flush()
        tail = pathlib.Path(self._log.name).read_bytes()[-3000:].decode(errors="replace")
        return f"; the broker exited with {self._proc.returncode}, its log ends with:\n{tail}"

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
