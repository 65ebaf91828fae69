"""The conformance layer (issue 26): the offline plan's registered inputs, translated the way each provider does and
judged by consumers no one here wrote: the clouds' API models (service models, discovery documents, SDK models) and
the software on the node."""
