"""Publishing to Kafka: chunks and their progress records in transactions, topics, and taking a table over."""
