"""``kubetrain convert``: the old operators' jobs, read as they were written, as TrainingJobs.

People arrive with job files for the first per-framework operators (TfJob, MXJob,
Caffe2Job, ChainerJob) and for Kubeflow Training Operator v1 (TFJob, PyTorchJob, MXJob,
XGBoostJob, PaddleJob, JAXJob, MPIJob) and MPI Operator v2beta1. Each old kind is one
module holding a :class:`kinds.Kind`: a pure function from the old document to a v1beta1
TrainingJob and, where the old kind can express the job, one back.

Conversion never drops anything silently. Keys are read through a
:class:`reader.Reader`, which matches them however the old documentation spelled them
(``replica_specs``, ``replicaSpecs``) and turns every key nobody read into an error with
its path. What the TrainingJob cannot carry over is a :class:`notes.Note`, printed as
``warning: spec.x: ...``. :func:`document.convert` picks the kind by apiVersion and kind.
"""

from kubetrain.convert import document, kinds, notes, reader

__all__ = ["document", "kinds", "notes", "reader"]
