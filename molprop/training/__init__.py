"""Training: the Lightning module, :func:`~molprop.training.fit.fit_member` /
:func:`~molprop.training.fit.fit_ensemble`, the tables, splits and tasks every run reads
(:mod:`.tables`), ``molprop train`` (:mod:`.train`, returning a
:class:`~molprop.training.train.TrainResult`), calibration (:mod:`.calibrate`,
:mod:`.cv_calibrate`; ``molprop calibrate``: :mod:`.recalibrate`), evaluation, resume state
and metrics.

Nothing here is imported by :mod:`molprop.inference`; import the submodules directly.
"""
