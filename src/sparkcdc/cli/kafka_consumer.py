"""``cdc kafka-consumer``: apply a TiCDC Kafka topic to MySQL/MariaDB (TiCDC's flags, plus ours)."""

from __future__ import annotations

import logging

import click

from sparkcdc.cli.consumer_run import ConsumerOptions, consumer_options, load_toml, run_consumer, setup_logging
from sparkcdc.masking import mask_uri

log = logging.getLogger(__name__)


@click.command("kafka-consumer")
@click.option("--upstream-uri", required=True,
              help="The changefeed's Kafka sink URI: kafka://host:9092/topic?protocol=simple")  # fmt: skip
@click.option("--config", "config_path", default="", help="The changefeed's TOML ([sink] codec, large messages).")
@click.option("--consumer-group-id", "group_id", default="ticdc_kafka_consumer", show_default=True,
              help="Kafka consumer group whose offsets record what was applied.")  # fmt: skip
@click.option("--schema-registry-uri", "--schema-registry", "schema_registry", default="",
              help="protocol=avro: the changefeed's schema registry, http(s)://[user:password@]host:port "
              "(URL-encoded credentials).")  # fmt: skip
@consumer_options(
    batch_help="Rows per downstream transaction (cut only between upstream transactions).",
    reset_help="Start over: read the topic again from its first offsets and forget this group's checkpoints in "
    "sparkcdc_consumer.checkpoint (for a downstream that was dropped or recreated).",
)
def kafka_consumer(opts: ConsumerOptions, upstream_uri: str, config_path: str, group_id: str,
                   schema_registry: str) -> None:  # fmt: skip
    """Apply a TiCDC Kafka topic (canal-json, simple JSON or Avro, TiCDC avro) to a MySQL-compatible database in commit
    order, effectively once.

    Rows are applied up to the smallest watermark of all partitions, DDLs once every partition has passed them;
    the per-table checkpoint lives in the downstream (sparkcdc_consumer.checkpoint, same transaction as the rows)
    and the group's offsets are committed after it, so a restart resumes without applying anything twice.
    canal-json without enable-tidb-extension has no commit-ts and no watermarks: it is applied in the order read.
    avro is read through the changefeed's schema registry, from a changefeed with enable-tidb-extension=true and
    avro-enable-watermark=true (the only avro topics with commit-ts, watermarks and DDL).
    A cluster that does not answer within the URI's dial-timeout (default 10s) at start ends it with exit 1.
    """
    from sparkcdc.consumer.kafka_consumer import KafkaConsumerConfig, KafkaSource

    setup_logging(opts.log_file, opts.log_level)
    config = KafkaConsumerConfig.from_uri(upstream_uri, load_toml(config_path), group_id, changefeed=group_id,
                                          batch_rows=opts.batch_rows, schema_registry=schema_registry)  # fmt: skip
    log.info("kafka consumer starting upstream=%s downstream=%s protocol=%s", config.source.uri.masked(),
             mask_uri(opts.downstream_uri), config.source.protocol)  # fmt: skip
    run_consumer(opts, KafkaSource(config, start_over=opts.reset_checkpoints), consumer=group_id)
