"""The Kafka sink: TiCDC's URI and config, topic and partition dispatch, producing from executors."""
