"""Hostile input: generated TrainingJobs and runtimes through the real apiserver and kubetrain's webhooks.

``generator`` makes the documents (the samples of both versions, the short samples made from the
shipped runtimes and those runtimes, ``shipped``; mutated by the kinds of ``mutate_pods``,
``mutate_values``, ``mutate_rules`` and ``mutate_short``, over ``walk``'s paths with ``values``'
junk, and ``references`` that cannot resolve); ``runner`` sends them to a deployment and checks
what became of each (``seen``), and ``report`` counts the outcomes. ``make bench-hostile``
(``cli``) sends 10,000; the e2e test tests/e2e/test_hostile_input.py sends 400 whole jobs and
150 short jobs and runtimes, and tests/unit/test_hostile_generator.py checks the generator.
"""
