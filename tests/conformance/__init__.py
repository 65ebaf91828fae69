"""The conformance layer (issue 26): the offline plan's registered inputs, translated the way each provider does,
checked against what the cloud itself publishes about its API (service models, discovery documents, SDK models)."""
