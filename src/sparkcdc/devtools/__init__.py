"""Developer tools: private servers for tests and the quickstart."""
