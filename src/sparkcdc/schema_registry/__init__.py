"""A Confluent-compatible schema registry, as the avro protocol's sink and consumers use it.

``url.RegistryURL`` checks and masks the ``--schema-registry`` value (``http(s)://[user:password@]host[:port][/path]``,
the user and password URL-encoded, as TiCDC takes it); ``client.RegistryClient`` talks to the registry through
confluent-kafka's ``SchemaRegistryClient`` and implements ``codec.avro.registry.SchemaRegistry``.
"""
