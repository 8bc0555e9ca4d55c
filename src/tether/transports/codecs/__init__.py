"""The provider wire formats, I/O-free: request encoders and response decoders.

Nothing here imports httpx: a codec encodes and decodes without a network library loaded.
"""
