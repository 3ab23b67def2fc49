"""Training: the Lightning module, :func:`~molprop.training.fit.fit_member` /
:func:`~molprop.training.fit.fit_ensemble`, ``molprop train`` (:mod:`.train`, returning a
:class:`~molprop.training.train.TrainResult`), evaluation, resume state and metrics.

Nothing here is imported by :mod:`molprop.inference`; import the submodules directly.
"""
