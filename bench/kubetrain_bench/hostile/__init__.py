"""Hostile input: generated TrainingJobs through the real apiserver and kubetrain's webhooks.

``generator`` makes the documents (the samples of both versions, mutated by the kinds of
``mutate_pods``, ``mutate_values`` and ``mutate_rules``, over ``walk``'s paths with ``values``'
junk); ``runner`` sends them to a deployment and checks what became of each (``seen``), and
``report`` counts the outcomes. ``make bench-hostile`` (``cli``) sends 10,000; the e2e test
tests/e2e/test_hostile_input.py sends 400, and tests/unit/test_hostile_generator.py checks
the generator.
"""
