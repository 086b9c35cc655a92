"""Text embedders: the Protocol the indexes depend on and the default offline ONNX model."""
