"""The control plane: changefeed state machine, metadata store, Open API v2 and the pipeline runner seam."""
