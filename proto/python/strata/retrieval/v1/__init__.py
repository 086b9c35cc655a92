"""Generated protobuf and gRPC modules (see `make proto`)."""
