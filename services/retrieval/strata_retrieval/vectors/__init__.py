"""The vector leg: a Protocol and two Qdrant implementations (in-process Edge shard, Qdrant server)."""
