"""The ``kubetrain`` command, for the people who run TrainingJobs and those who run kubetrain.

``main`` parses the command line and turns every failure into ``error:`` lines and an exit
status. One module per group of verbs: ``jobs`` (submit, get, list, delete), ``describe``,
``logs``, ``wait``, ``tensorboard``, built on :mod:`kubetrain.client`; ``tools`` (render,
manifests, migrate-storage), which import the operator's pure parts only when run — never its
runtime: ``migration`` rewrites stored jobs through the client's connection; ``dev`` (a local
cluster, :mod:`kubetrain.devcluster`). ``output`` prints tables, ages, YAML/JSON and
colour; ``cluster`` holds the flags that pick a cluster; ``errors`` what ``main`` reports.
"""

__all__: list[str] = []
