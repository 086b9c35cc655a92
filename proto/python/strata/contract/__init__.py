"""Strata's contract as data, beside the generated stubs.

- ``contract_source.binpb``: every Strata .proto compiled with its comments (``make proto``), which
  the services' reflection serves (:mod:`strata_serving.reflection_comments`).
- ``channel_policy``: the channel arguments every Strata client uses, and which methods are safe to
  retry (the contract's reads and idempotent writes).
"""
