"""The README's user snippets run as written (in a fresh directory)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks(section: str) -> list[str]:
    """The python blocks under heading ``section`` (any level), up to the next heading."""
    return [code for heading, code in _python_blocks_by_heading() if heading == section]


def _python_blocks_by_heading() -> list[tuple[str, str]]:
    """Every python block of the README with the heading (``##`` or ``###``) it is under."""
    out = []
    heading = ""
    for part in re.split(r"(```python\n.*?```)", README.read_text(), flags=re.S):
        if part.startswith("```python\n"):
            out.append((heading, part[len("```python\n"):-3]))
        else:
            headings = re.findall(r"^#{2,3} (.+)$", part, re.M)
            heading = headings[-1] if headings else heading
    return out


SELF_CONTAINED = ["Quickstart", "Catalogs and writers of several engines", "Row-level changes"]
"""Sections whose snippets run on their own, each in a fresh directory."""

TOUR = ["Using it", "Command line", "Object stores", "Spark (PySpark 4.x, no JVM jar)",
        "CDC: database changelogs into tables"]
"""Sections whose snippets run one after the other in one namespace, as a reader goes through
them; :func:`test_readme_tour_runs` gives them what a user has at hand (a Spark session, a
DataFrame, an S3 endpoint, messages)."""


def test_every_python_block_is_run():
    headings = {heading for heading, _ in _python_blocks_by_heading()}
    assert headings <= set(SELF_CONTAINED) | set(TOUR), headings - set(SELF_CONTAINED) - set(TOUR)


@pytest.mark.parametrize("section", SELF_CONTAINED)
def test_readme_section_runs(section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(section)
    assert blocks, f"no python block under '## {section}'"
    for code in blocks:
        exec(compile(code, f"README.md ({section})", "exec"), {"__name__": "readme"})


def _debezium(op: str, before: dict | None, after: dict | None) -> str:
    import json

    return json.dumps({"op": op, "before": before, "after": after,
                       "source": {"db": "inventory", "table": "customers"}})


def _finish_streams(spark, before: set[str], started: int) -> None:
    """Let the ``started`` streaming queries the snippets started (those not in ``before``, the
    ids active before them) process what they have, fail on any error, and stop them."""
    queries = [q for q in spark.streams.active if q.id not in before]
    try:
        assert len(queries) == started, [q.name for q in queries]
        for query in queries:
            query.processAllAvailable()
            assert query.exception() is None
    finally:
        for query in queries:
            query.stop()


def test_readme_tour_runs(spark, s3_server, kafka, tmp_path, monkeypatch):
    import pyarrow as pa

    import tidelake

    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "readme", "spark": spark}

    def run(section: str, **given) -> None:
        ns.update(given)
        blocks = _python_blocks(section)
        assert blocks, f"no python block under '{section}'"
        for code in blocks:
            if section == "Object stores":
                code = code.replace("http://127.0.0.1:9000", s3_server.endpoint)
            code = code.replace("broker:9092", kafka.bootstrap)
            exec(compile(code, f"README.md ({section})", "exec"), ns)

    run("Using it")
    t = ns["t"]
    assert t.to_arrow().num_rows > 0 and {tag.name for tag in t.tags()} >= {"monday", "tuesday"}
    run("Command line")
    assert "dev" not in [b for b in t.branches()]

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    s3 = s3_server.client()
    if "lake" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="lake")
        lake = tidelake.Catalog("s3://lake", storage_options=s3_server.options)
        lake.create_database("shop")
        lake.create_table("shop.orders", ns["schema"], primary_keys=["id", "day"], partition_keys=["day"])
    run("Object stores")
    assert ns["t"].path == "s3://lake/shop.db/orders"

    # what a Spark user has at hand: a DataFrame of the table's rows, a staging view, new paths
    orders = tidelake.open_table("warehouse/shop.db/orders")
    df = spark.createDataFrame(orders.to_pandas())
    spark.createDataFrame([(9, "2026-11-23", 4)], "id long, dt string, qty int").createOrReplaceTempView("staging")
    totals_path = str(tmp_path / "totals")
    tidelake.create_table(totals_path, pa.schema([pa.field("day", pa.string(), nullable=False), ("qty", pa.int64())]),
                          primary_keys=["day"], bucket=1)
    active = {q.id for q in spark.streams.active}
    run("Spark (PySpark 4.x, no JVM jar)", path=orders.path, df=df, new_path=str(tmp_path / "new_orders"),
        wh=str(tmp_path / "wh"), chk=str(tmp_path / "chk"), chk2=str(tmp_path / "chk2"),
        totals_path=totals_path)
    _finish_streams(spark, active, 2)
    expected = orders.to_arrow().group_by("day").aggregate([("qty", "sum")])
    got = {r["day"]: r["qty"] for r in tidelake.open_table(totals_path).to_arrow().to_pylist()}
    assert got == {r["day"]: r["qty_sum"] for r in expected.to_pylist()}
    assert tidelake.open_table(str(tmp_path / "wh" / "db.db" / "orders")).to_arrow().num_rows == 1

    import json

    changes = [("c", None, {"id": 1, "name": "ann"}), ("c", None, {"id": 2, "name": "bob"}),
               ("u", {"id": 1, "name": "ann"}, {"id": 1, "name": "anne"}), ("d", {"id": 2, "name": "bob"}, None)]
    # (key, value) pairs as a Kafka topic holds them: the key names the primary key
    messages = [(json.dumps({"id": (after or before)["id"]}), _debezium(op, before, after))
                for op, before, after in changes]
    stream_dir = tmp_path / "cdc-in"
    stream_dir.mkdir()
    (stream_dir / "part-0.json").write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in messages))
    ns["catalog"].create_database("ods")
    kafka.create_topic("dbserver1.inventory")
    kafka.produce("dbserver1.inventory", [(k.encode(), v.encode()) for k, v in messages])
    active = {q.id for q in spark.streams.active}
    run("CDC: database changelogs into tables", messages=messages, batch_id=1, warehouse="warehouse",
        stream=spark.readStream.schema("key string, value string").json(str(stream_dir)), chk=str(tmp_path / "chk-cdc"),
        kafka_chk=str(tmp_path / "chk-kafka"))
    _finish_streams(spark, active, 2)
    # cdc.sync's table in the catalog last defined (the S3 one); the file stream's and the Kafka
    # stream's cdc_sink write the same messages into one table of the warehouse given
    for table in (ns["catalog"].get_table("ods.inventory_customers"),
                  tidelake.Catalog("warehouse").get_table("inventory.customers")):
        assert table.to_arrow().to_pylist() == [{"id": 1, "name": "anne"}], table.path


def _command_line_section() -> str:
    text = README.read_text()
    start = text.index("### Command line\n")
    return text[start:text.index("\n## ", start)]


def test_cli_reference_lists_every_command():
    import click

    from tidelake import cli

    table = _command_line_section()
    missing = [name for name, command in cli.main.commands.items() if f"`{name} " not in table]
    assert not missing, f"commands missing from the README's command table: {missing}"
    for name, group in cli.main.commands.items():
        if isinstance(group, click.Group):
            listed = re.search(rf"`{name} \[([a-z|\\-]+)\]", table)
            assert listed and set(listed.group(1).replace("\\", "").split("|")) == set(group.commands), name


def test_cli_examples_run(tmp_path, monkeypatch):
    """The README's shell examples run as written on input files of those names."""
    import shlex

    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from tidelake import cli

    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"id": [1, 2], "qty": [10, 70], "region": ["eu", "us"]}), "day1.parquet")
    pcsv.write_csv(pa.table({"id": [2, 3], "qty": [80, 55], "region": ["eu", "eu"]}), "day2.csv")
    block = re.search(r"```sh\n(.*?)```", _command_line_section(), re.S)
    assert block is not None
    outputs = []
    for line in block.group(1).strip().splitlines():
        args = shlex.split(line)
        assert args[0] == "tidelake"
        result = CliRunner().invoke(cli.main, args[1:], prog_name="tidelake")
        assert result.exit_code == 0, (line, result.output)
        outputs.append(result.stdout)
    assert outputs[1].splitlines()[-1] == "(2 rows)"  # ids 2 and 3: qty >= 50 in eu
