"""The changefeed: what it is (info, status, replica config), its running error, and the runner contract that
the server and the pipeline share (neither imports the other's implementation)."""
