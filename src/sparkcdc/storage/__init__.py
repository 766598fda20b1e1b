"""Storage sink: URIs and config (``sink_uri``, ``sink_config``), fsspec I/O (``external``), TiCDC's layout
(``layout``, ``schema_file``, ``metadata``, ``schema_store``) and the writer (``writer``)."""
