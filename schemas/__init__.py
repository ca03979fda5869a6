"""The event contract shared by the producer and the consumer."""
