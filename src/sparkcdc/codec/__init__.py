"""Pure encoders and decoders for TiCDC's protocols (csv, canal-json, simple). No I/O."""
